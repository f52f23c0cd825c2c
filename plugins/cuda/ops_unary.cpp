// One-input elementwise ops beyond Relu/Sigmoid/Tanh: math functions,
// activations with attributes, Clip and Not (kernels_math.cu), with the
// CPU kernels' opset ranges (ops_math/unary.cpp, ops_nn/activations.cpp,
// ops_nn/clip.cpp, ops_logical/boolean.cpp).
#include "kernels_math.hpp"
#include "ops_common.hpp"
#include "register.hpp"

#include <cstring>

namespace singa {
namespace cuda {

namespace {

// Attribute defaults of each op (ONNX's).
struct MathAttrs {
  const char* alpha_name = nullptr;
  float alpha = 0.f;
  const char* beta_name = nullptr;
  float beta = 0.f;
};

MathAttrs attrs_of(MathOp op) {
  switch (op) {
    case MathOp::kLeakyRelu: return {"alpha", 0.01f};
    case MathOp::kElu:
    case MathOp::kCelu:
    case MathOp::kThresholdedRelu: return {"alpha", 1.0f};
    case MathOp::kSelu: return {"alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f};
    case MathOp::kHardSigmoid: return {"alpha", 0.2f, "beta", 0.5f};
    default: return {};
  }
}

template <MathOp Op>
class Math : public NodeKernel {
 public:
  explicit Math(const sdk::Node& node) : NodeKernel(node) {
    const MathAttrs a = attrs_of(Op);
    if (a.alpha_name) alpha_ = node.attr_float(a.alpha_name, a.alpha);
    if (a.beta_name) beta_ = node.attr_float(a.beta_name, a.beta);
    if (Op == MathOp::kCelu && alpha_ == 0.0f) fail("attribute alpha must not be 0 (it divides the input)");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());  // may be x itself (in place)
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_math(Op, dtype_of(x), x.data_ptr(), y.data_ptr(), x.numel(), double(alpha_), double(beta_),
                             stream_of(ctx)),
                 "elementwise kernel");
  }

 private:
  float alpha_ = 0.f, beta_ = 0.f;
};

// Bounds are attributes before opset 11 and optional one-element inputs
// (read on the host) from 11.
class Clip : public NodeKernel {
 public:
  explicit Clip(const sdk::Node& node) : NodeKernel(node), from_attrs_(node.opset() < 11) {
    if (from_attrs_) {
      has_min_ = node.has_attr("min");
      has_max_ = node.has_attr("max");
      min_ = node.attr_float("min", 0.f);
      max_ = node.attr_float("max", 0.f);
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    // Room for one value of any of the element types.
    alignas(8) unsigned char lo[8] = {}, hi[8] = {};
    bool has_lo = false, has_hi = false;
    if (from_attrs_) {
      has_lo = has_min_;
      has_hi = has_max_;
      put(x, min_, lo);
      put(x, max_, hi);
    } else {
      has_lo = bound(ctx, 1, x, "min", lo);
      has_hi = bound(ctx, 2, x, "max", hi);
    }
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_clip(dtype_of(x), x.data_ptr(), y.data_ptr(), x.numel(), has_lo ? lo : nullptr,
                             has_hi ? hi : nullptr, stream_of(ctx)),
                 "clip kernel");
  }

 private:
  // An attribute bound (float) in x's type; before opset 11 x is float or double.
  static void put(const sdk::Tensor& x, float v, unsigned char* out) {
    if (x.dtype() == SINGA_ONNX_DOUBLE) {
      const double d = v;
      std::memcpy(out, &d, sizeof d);
    } else {
      std::memcpy(out, &v, sizeof v);
    }
  }

  bool bound(const sdk::Context& ctx, size_t i, const sdk::Tensor& x, const char* name, unsigned char* out) const {
    if (!ctx.has_input(i)) return false;
    sdk::Tensor t = ctx.input(i);
    check(t.raw()->device.device_type == kDLCPU, std::string(name) + " must be on the host");
    check(t.dtype() == x.dtype(), std::string(name) + " is " + sdk::dtype_name(t.dtype()) + " but input is " +
                                      sdk::dtype_name(x.dtype()));
    check(t.numel() == 1, std::string(name) + " must be a scalar, got shape " + shape_str(t.shape()));
    std::memcpy(out, t.data_ptr(), elem_size(t));
    return true;
  }

  bool from_attrs_;
  bool has_min_ = false, has_max_ = false;
  float min_ = 0.f, max_ = 0.f;
};

class Not : public NodeKernel {
 public:
  explicit Not(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    check(x.dtype() == SINGA_ONNX_BOOL, std::string("input must be bool, got ") + sdk::dtype_name(x.dtype()));
    sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_BOOL);
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_not(x.data<uint8_t>(), y.data<uint8_t>(), x.numel(), stream_of(ctx)), "not kernel");
  }
};

template <MathOp Op>
void reg_math(sdk::Registrar& reg, const char* op, int since, uint64_t types = kF32F64) {
  reg.kernel<Math<Op>>("", op, since, 17, "cuda", {{"T", 0, types}}, SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace

void register_unary(sdk::Registrar& reg) {
  // Opset 1 versions differ from 6 only in the ignored consumed_inputs attribute.
  reg_math<MathOp::kSqrt>(reg, "Sqrt", 1);
  reg_math<MathOp::kExp>(reg, "Exp", 1);
  reg_math<MathOp::kLog>(reg, "Log", 1);
  reg_math<MathOp::kReciprocal>(reg, "Reciprocal", 1);
  reg_math<MathOp::kFloor>(reg, "Floor", 1);
  reg_math<MathOp::kCeil>(reg, "Ceil", 1);
  reg_math<MathOp::kAbs>(reg, "Abs", 1, kRealInt);
  reg_math<MathOp::kNeg>(reg, "Neg", 1, kRealInt);
  reg_math<MathOp::kErf>(reg, "Erf", 9);
  reg_math<MathOp::kSign>(reg, "Sign", 9, kRealInt);
  reg_math<MathOp::kRound>(reg, "Round", 11);
  reg_math<MathOp::kSin>(reg, "Sin", 7);
  reg_math<MathOp::kCos>(reg, "Cos", 7);
  reg_math<MathOp::kTan>(reg, "Tan", 7);
  reg_math<MathOp::kAsin>(reg, "Asin", 7);
  reg_math<MathOp::kAcos>(reg, "Acos", 7);
  reg_math<MathOp::kAtan>(reg, "Atan", 7);
  reg_math<MathOp::kSinh>(reg, "Sinh", 9);
  reg_math<MathOp::kCosh>(reg, "Cosh", 9);
  reg_math<MathOp::kAsinh>(reg, "Asinh", 9);
  reg_math<MathOp::kAcosh>(reg, "Acosh", 9);
  reg_math<MathOp::kAtanh>(reg, "Atanh", 9);

  reg_math<MathOp::kLeakyRelu>(reg, "LeakyRelu", 1);
  reg_math<MathOp::kElu>(reg, "Elu", 1);
  reg_math<MathOp::kSelu>(reg, "Selu", 1);
  reg_math<MathOp::kCelu>(reg, "Celu", 12);
  reg_math<MathOp::kHardSigmoid>(reg, "HardSigmoid", 1);
  reg_math<MathOp::kHardSwish>(reg, "HardSwish", 14);
  reg_math<MathOp::kSoftplus>(reg, "Softplus", 1);
  reg_math<MathOp::kSoftsign>(reg, "Softsign", 1);
  reg_math<MathOp::kThresholdedRelu>(reg, "ThresholdedRelu", 10);

  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  const uint64_t bounds = input_bit(1) | input_bit(2);
  reg.kernel<Clip>("", "Clip", 1, 10, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<Clip>("", "Clip", 11, 11, "cuda", {{"T", 0, kF32F64}}, inplace, bounds);
  // Clip-12 adds integer types.
  reg.kernel<Clip>("", "Clip", 12, 17, "cuda", {{"T", 0, kRealInt}}, inplace, bounds);
  reg.kernel<Not>("", "Not", 1, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kBoolType}}, inplace);
}

}  // namespace cuda
}  // namespace singa
