// Add/Sub/Mul/Div with broadcasting, Relu/Sigmoid/Tanh, (Log)Softmax: the
// plugin's own kernels (kernels.cu) on the node's stream.
#include "binary_form.hpp"
#include "ops_common.hpp"
#include "register.hpp"

#include <type_traits>

namespace singa {
namespace cuda {

namespace {

// Calls f(T{}) for the element type of an arithmetic tensor.
template <class F>
void dispatch_arith(int32_t dtype, const NodeKernel& k, F&& f) {
  switch (dtype) {
    case SINGA_ONNX_FLOAT: f(float{}); break;
    case SINGA_ONNX_DOUBLE: f(double{}); break;
    case SINGA_ONNX_INT32: f(int32_t{}); break;
    case SINGA_ONNX_INT64: f(int64_t{}); break;
    default: k.fail(std::string("unsupported element type ") + sdk::dtype_name(dtype) + " on cuda");
  }
}

template <BinaryOp Op>
class Binary : public NodeKernel {
 public:
  explicit Binary(const sdk::Node& node) : NodeKernel(node), form_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check(a.dtype() == b.dtype(), std::string("A is ") + sdk::dtype_name(a.dtype()) + " but B is " +
                                      sdk::dtype_name(b.dtype()));
    const sdk::Shape as = a.shape();
    sdk::Shape bs, out;
    form_.shapes(as, b.shape(), bs, out, *this);
    sdk::Tensor y = ctx.output(0, out, a.dl_dtype());
    const BroadcastPlan plan = make_plan(as, bs, out, where());
    DeviceGuard guard(device_of(ctx));
    dispatch_arith(a.dtype(), *this, [&](auto tag) {
      using T = decltype(tag);
      check_launch(launch_binary<T>(Op, a.data<T>(), b.data<T>(), y.data<T>(), plan, stream_of(ctx)), "binary kernel");
    });
  }

 private:
  BinaryForm form_;
};

template <UnaryOp Op>
class Unary : public NodeKernel {
 public:
  explicit Unary(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());  // may be x itself (in place)
    DeviceGuard guard(device_of(ctx));
    dispatch_arith(x.dtype(), *this, [&](auto tag) {
      using T = decltype(tag);
      if (Op != UnaryOp::kRelu && !std::is_floating_point<T>::value)
        fail(std::string("element type ") + sdk::dtype_name(x.dtype()) + " is not supported");
      check_launch(launch_unary<T>(Op, x.data<T>(), y.data<T>(), x.numel(), stream_of(ctx)), "activation kernel");
    });
  }
};

template <bool Log>
class Softmax : public NodeKernel {
 public:
  explicit Softmax(const sdk::Node& node) : NodeKernel(node) {
    // Up to opset 12 the input is coerced to 2-D at `axis` (default 1) and
    // normalised over the flattened trailing block; from 13 over `axis`
    // (default -1) alone.
    coerce_2d_ = node.opset() < 13;
    axis_ = node.attr_int("axis", coerce_2d_ ? 1 : -1);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const sdk::Shape s = x.shape();
    const int64_t rank = int64_t(s.size());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Coerced 2-D allows axis == rank (an empty trailing block of size 1).
    const bool ok = coerce_2d_ ? (axis >= 0 && axis <= rank) : (axis >= 0 && axis < rank);
    check(ok, "axis " + std::to_string(axis_) + " is out of range for an input of shape " + shape_str(s));
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = s[size_t(i)];
      if (i < axis)
        outer *= d;
      else if (i == axis || coerce_2d_)
        n *= d;
      else
        inner *= d;
    }
    sdk::Tensor y = ctx.output(0, s, x.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    if (x.dtype() == SINGA_ONNX_FLOAT)
      check_launch(launch_softmax<float>(x.data<float>(), y.data<float>(), outer, n, inner, Log, stream_of(ctx)),
                   "softmax kernel");
    else if (x.dtype() == SINGA_ONNX_DOUBLE)
      check_launch(launch_softmax<double>(x.data<double>(), y.data<double>(), outer, n, inner, Log, stream_of(ctx)),
                   "softmax kernel");
    else
      fail(std::string("unsupported element type ") + sdk::dtype_name(x.dtype()) + " on cuda");
  }

 private:
  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

template <class K>
void register_two_eras(sdk::Registrar& reg, const char* op, uint64_t types) {
  // 1-6: the broadcast/axis attributes; 7 on: numpy broadcasting.
  reg.kernel<K>("", op, 1, 6, "cuda", {{"T", 0, types}, {"T", 1, types}});
  reg.kernel<K>("", op, 7, 17, "cuda", {{"T", 0, types}, {"T", 1, types}});
}

}  // namespace

void register_elementwise(sdk::Registrar& reg) {
  register_two_eras<Binary<BinaryOp::kAdd>>(reg, "Add", kF32F64 | kI32I64);
  register_two_eras<Binary<BinaryOp::kSub>>(reg, "Sub", kF32F64 | kI32I64);
  register_two_eras<Binary<BinaryOp::kMul>>(reg, "Mul", kF32F64 | kI32I64);
  // Integer Div stays on the CPU, which reports division by zero.
  register_two_eras<Binary<BinaryOp::kDiv>>(reg, "Div", kF32F64);

  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  // Relu 14 adds integer types; 6 dropped consumed_inputs (ignored here).
  reg.kernel<Unary<UnaryOp::kRelu>>("", "Relu", 1, 13, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kRelu>>("", "Relu", 14, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64 | kI32I64}}, inplace);
  reg.kernel<Unary<UnaryOp::kSigmoid>>("", "Sigmoid", 1, 5, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kSigmoid>>("", "Sigmoid", 6, 12, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kSigmoid>>("", "Sigmoid", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kTanh>>("", "Tanh", 1, 5, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kTanh>>("", "Tanh", 6, 12, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Unary<UnaryOp::kTanh>>("", "Tanh", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64}}, inplace);

  // Softmax may run in place: each row is read fully before it is written,
  // by the same block (rows) or thread (columns).
  reg.kernel<Softmax<false>>("", "Softmax", 1, 12, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Softmax<false>>("", "Softmax", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Softmax<true>>("", "LogSoftmax", 1, 12, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Softmax<true>>("", "LogSoftmax", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64}}, inplace);
}

}  // namespace cuda
}  // namespace singa
