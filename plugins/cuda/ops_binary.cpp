// Broadcasting ops beyond Add/Sub/Mul/Div: Pow, PRelu, the variadic
// Sum/Mean/Max/Min, comparisons, And/Or/Xor and Where (kernels_math.cu),
// registered over the CPU kernels' opset ranges (ops_math/binary.cpp,
// ops_math/variadic.cpp, ops_nn/activations.cpp, ops_logical/*.cpp).
#include "binary_form.hpp"
#include "kernels_math.hpp"
#include "register.hpp"
#include "strided.hpp"

namespace singa {
namespace cuda {

namespace {

// Base and exponent may differ in type from opset 12 (earlier graphs
// cannot carry such a pair, so one class serves all).
class Pow : public NodeKernel {
 public:
  explicit Pow(const sdk::Node& node) : NodeKernel(node), form_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "X"), b = required(ctx, 1, "Y");
    const sdk::Shape as = a.shape();
    sdk::Shape bs, out;
    form_.shapes(as, b.shape(), bs, out, *this);
    sdk::Tensor y = ctx.output(0, out, a.dl_dtype());
    const BroadcastPlan plan = make_plan(as, bs, out, where());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_binary_math(BinaryMath::kPow, dtype_of(a), dtype_of(b), a.data_ptr(), b.data_ptr(),
                                    y.data_ptr(), plan, stream_of(ctx)),
                 "pow kernel");
  }

 private:
  BinaryForm form_;
};

// y = x < 0 ? slope * x : x with the slope broadcast onto X. Before opset 7
// a 1-D slope of one value per channel applies along axis 1.
class PRelu : public NodeKernel {
 public:
  explicit PRelu(const sdk::Node& node) : NodeKernel(node), legacy_(node.opset() < 7) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), slope = required(ctx, 1, "slope");
    check_same_type(slope, "slope", x, "X");
    const sdk::Shape xs = x.shape();
    sdk::Shape ss = slope.shape();
    if (legacy_ && ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != 1) ss.resize(xs.size() - 1, 1);
    bool ok = ss.size() <= xs.size();
    for (size_t i = 0; ok && i < ss.size(); ++i) {
      const int64_t d = ss[ss.size() - 1 - i];
      ok = d == 1 || d == xs[xs.size() - 1 - i];
    }
    check(ok, "slope of shape " + shape_str(slope.shape()) + " does not broadcast to X of shape " + shape_str(xs));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    const BroadcastPlan plan = make_plan(xs, ss, xs, where());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_binary_math(BinaryMath::kPRelu, dtype_of(x), dtype_of(slope), x.data_ptr(), slope.data_ptr(),
                                    y.data_ptr(), plan, stream_of(ctx)),
                 "prelu kernel");
  }

 private:
  bool legacy_;
};

enum class Fold { kSum, kMean, kMax, kMin };

// Folds the inputs pairwise into the output, as the CPU does: out = f(in0,
// in1), then out = f(out, ink); Mean divides the sum by the count. Opsets
// before 8 required equal shapes; numpy broadcasting is a superset.
template <Fold F>
class Variadic : public NodeKernel {
 public:
  explicit Variadic(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    const size_t n = ctx.num_inputs();
    check(n >= 1, "needs at least one input");
    std::vector<sdk::Tensor> ins;
    sdk::Shape out;
    for (size_t i = 0; i < n; ++i) {
      ins.push_back(required(ctx, i, "data_0..N"));
      if (i) check_same_type(ins[0], "input 0", ins[i], ("input " + std::to_string(i)).c_str());
      sdk::Shape next;
      check(i == 0 || broadcast_shape(out, ins[i].shape(), next),
            "input " + std::to_string(i) + " of shape " + shape_str(ins[i].shape()) + " does not broadcast with " +
                shape_str(out));
      out = i == 0 ? ins[0].shape() : next;
    }
    sdk::Tensor y = ctx.output(0, out, ins[0].dl_dtype());
    if (y.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    const cudaStream_t stream = stream_of(ctx);
    if (n == 1) {
      device_copy(ctx, y.data_ptr(), ins[0].data_ptr(), size_t(y.numel()) * elem_size(y), where());
      return;
    }
    for (size_t i = 1; i < n; ++i) {
      const sdk::Tensor& a = i == 1 ? ins[0] : y;
      const BroadcastPlan plan = make_plan(a.shape(), ins[i].shape(), out, where());
      step(a, ins[i], y, plan, stream);
    }
    if (F == Fold::kMean)
      check_launch(launch_math(MathOp::kDivBy, dtype_of(y), y.data_ptr(), y.data_ptr(), y.numel(), double(n), 0.0,
                               stream),
                   "mean kernel");
  }

 private:
  void step(const sdk::Tensor& a, const sdk::Tensor& b, const sdk::Tensor& y, const BroadcastPlan& plan,
            cudaStream_t stream) const {
    if (F == Fold::kMax || F == Fold::kMin) {
      const BinaryMath op = F == Fold::kMax ? BinaryMath::kMax : BinaryMath::kMin;
      check_launch(launch_binary_math(op, dtype_of(a), dtype_of(b), a.data_ptr(), b.data_ptr(), y.data_ptr(), plan,
                                      stream),
                   "max/min kernel");
    } else if (a.dtype() == SINGA_ONNX_DOUBLE) {
      check_launch(launch_binary<double>(BinaryOp::kAdd, a.data<double>(), b.data<double>(), y.data<double>(), plan,
                                         stream),
                   "sum kernel");
    } else {
      check_launch(launch_binary<float>(BinaryOp::kAdd, a.data<float>(), b.data<float>(), y.data<float>(), plan,
                                        stream),
                   "sum kernel");
    }
  }
};

// Comparisons (bool out) and And/Or/Xor share the binary form and plan.
template <class Op, Op Which, bool Logic>
class BoolBinary : public NodeKernel {
 public:
  explicit BoolBinary(const sdk::Node& node) : NodeKernel(node), form_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check_same_type(a, "A", b, "B");
    if (Logic) check(a.dtype() == SINGA_ONNX_BOOL, std::string("inputs must be bool, got ") + sdk::dtype_name(a.dtype()));
    const sdk::Shape as = a.shape();
    sdk::Shape bs, out;
    form_.shapes(as, b.shape(), bs, out, *this);
    sdk::Tensor y = ctx.output(0, out, SINGA_ONNX_BOOL);
    const BroadcastPlan plan = make_plan(as, bs, out, where());
    DeviceGuard guard(device_of(ctx));
    cudaError_t err;
    if constexpr (Logic)
      err = launch_logic(Which, a.data<uint8_t>(), b.data<uint8_t>(), y.data<uint8_t>(), plan, stream_of(ctx));
    else
      err = launch_compare(Which, dtype_of(a), a.data_ptr(), b.data_ptr(), y.data<uint8_t>(), plan, stream_of(ctx));
    check_launch(err, Logic ? "logical kernel" : "comparison kernel");
  }

 private:
  BinaryForm form_;
};

template <CompareOp Op>
using Compare = BoolBinary<CompareOp, Op, false>;
template <LogicOp Op>
using Logic = BoolBinary<LogicOp, Op, true>;

class Where : public NodeKernel {
 public:
  explicit Where(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor c = required(ctx, 0, "condition"), x = required(ctx, 1, "X"), y = required(ctx, 2, "Y");
    check(c.dtype() == SINGA_ONNX_BOOL, std::string("condition must be bool, got ") + sdk::dtype_name(c.dtype()));
    check_same_type(x, "X", y, "Y");
    sdk::Shape xy, out;
    check(broadcast_shape(x.shape(), y.shape(), xy) && broadcast_shape(c.shape(), xy, out),
          "condition " + shape_str(c.shape()) + ", X " + shape_str(x.shape()) + " and Y " + shape_str(y.shape()) +
              " do not broadcast");
    sdk::Tensor z = ctx.output(0, out, x.dl_dtype());
    const BroadcastPlan plan = make_plan({c.shape(), x.shape(), y.shape()}, out, where());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_where(elem_size(x), c.data<uint8_t>(), x.data_ptr(), y.data_ptr(), z.data_ptr(), plan,
                              stream_of(ctx)),
                 "where kernel");
  }
};

// (since, end, types) of one registration.
struct Range {
  int since, end;
  uint64_t types;
};

template <class K>
void reg_ranges(sdk::Registrar& reg, const char* op, std::initializer_list<Range> ranges) {
  for (const Range& r : ranges) reg.kernel<K>("", op, r.since, r.end, "cuda", {{"T", 0, r.types}, {"T1", -1, kBoolType}});
}

}  // namespace

void register_binary(sdk::Registrar& reg) {
  // Pow: 1-6 the broadcast/axis attributes; the exponent's own type T1 from 12.
  reg.kernel<Pow>("", "Pow", 1, 6, "cuda", {{"T", 0, kF32F64}, {"T1", 1, kRealInt}});
  reg.kernel<Pow>("", "Pow", 7, 17, "cuda", {{"T", 0, kF32F64}, {"T1", 1, kRealInt}});
  // PRelu-9 adds integer types.
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<PRelu>("", "PRelu", 1, 8, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<PRelu>("", "PRelu", 9, 17, "cuda", {{"T", 0, kRealInt}}, inplace);

  reg.kernel<Variadic<Fold::kSum>>("", "Sum", 1, 17, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<Variadic<Fold::kMean>>("", "Mean", 1, 17, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<Variadic<Fold::kMax>>("", "Max", 1, 17, "cuda", {{"T", 0, kRealInt}});
  reg.kernel<Variadic<Fold::kMin>>("", "Min", 1, 17, "cuda", {{"T", 0, kRealInt}});

  const uint64_t eq_old = kBoolType | kI32I64, all = kRealInt | kBoolType;
  reg_ranges<Compare<CompareOp::kEqual>>(reg, "Equal", {{1, 6, eq_old}, {7, 10, eq_old}, {11, 12, all}, {13, 17, all}});
  reg_ranges<Compare<CompareOp::kLess>>(reg, "Less", {{1, 6, kF32F64}, {7, 8, kF32F64}, {9, 12, kRealInt}, {13, 17, kRealInt}});
  reg_ranges<Compare<CompareOp::kGreater>>(reg, "Greater",
                                           {{1, 6, kF32F64}, {7, 8, kF32F64}, {9, 12, kRealInt}, {13, 17, kRealInt}});
  reg_ranges<Compare<CompareOp::kLessOrEqual>>(reg, "LessOrEqual", {{12, 15, kRealInt}, {16, 17, kRealInt}});
  reg_ranges<Compare<CompareOp::kGreaterOrEqual>>(reg, "GreaterOrEqual", {{12, 15, kRealInt}, {16, 17, kRealInt}});
  reg_ranges<Logic<LogicOp::kAnd>>(reg, "And", {{1, 6, kBoolType}, {7, 17, kBoolType}});
  reg_ranges<Logic<LogicOp::kOr>>(reg, "Or", {{1, 6, kBoolType}, {7, 17, kBoolType}});
  reg_ranges<Logic<LogicOp::kXor>>(reg, "Xor", {{1, 6, kBoolType}, {7, 17, kBoolType}});

  // Where moves elements of 1, 2, 4 or 8 bytes; 16 adds bfloat16.
  const uint64_t bf16 = bit(SINGA_ONNX_BFLOAT16);
  reg.kernel<Where>("", "Where", 9, 15, "cuda", {{"B", 0, kBoolType}, {"T", 1, kFixedSizeTypes & ~bf16}});
  reg.kernel<Where>("", "Where", 16, SINGA_VERSION_OPEN, "cuda", {{"B", 0, kBoolType}, {"T", 1, kFixedSizeTypes}});
}

}  // namespace cuda
}  // namespace singa
