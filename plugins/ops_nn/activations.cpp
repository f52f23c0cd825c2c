// Elementwise activations (Relu, Sigmoid, Elu, ...) and PRelu.
#include "nn_common.hpp"
#include "register.hpp"
#include "tanh_f64_avx512.hpp"
#include "unary_f32.hpp"
#include "vec_math.hpp"

#include <broadcast.hpp>

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

constexpr int64_t kGrain = 16384;

// Integers compute in their own type; reals in acc_t.
template <class T>
using arith_t = std::conditional_t<std::is_integral<T>::value, T, acc_t<T>>;

// Ops with an AVX-512 form name it as `static constexpr vec::UnaryKind kVec`
// and give its attributes through params().
template <class Op, class = void>
struct has_vec_kind : std::false_type {};
template <class Op>
struct has_vec_kind<Op, std::void_t<decltype(Op::kVec)>> : std::true_type {};

// The double kinds with an 8-lane AVX-512 form (tanh_f64_avx512.hpp); the
// rest of float64 stays on the scalar loop.
template <class Op>
constexpr bool has_f64_kind() {
  if constexpr (has_vec_kind<Op>::value)
    return Op::kVec == vec::UnaryKind::kTanh || Op::kVec == vec::UnaryKind::kMish;
  else
    return false;
}

// y = Op(x) for doubles when has_f64_kind<Op>() and AVX-512 is on.
template <class Op>
void run_f64(const double* x, double* y, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (Op::kVec == vec::UnaryKind::kTanh)
    vec::f64_detail::tanh_f64(x, y, n);
  else
    vec::f64_detail::mish_f64(x, y, n);
#else
  (void)x, (void)y, (void)n;
#endif
}

// The element types unary_f32.hpp converts through float.
template <class T>
struct vec_type {
  static constexpr bool known = false;
};
template <>
struct vec_type<float> {
  static constexpr bool known = true;
  static constexpr vec::UnaryType value = vec::UnaryType::kFloat;
};
template <>
struct vec_type<half> {
  static constexpr bool known = true;
  static constexpr vec::UnaryType value = vec::UnaryType::kHalf;
};
template <>
struct vec_type<bfloat16> {
  static constexpr bool known = true;
  static constexpr vec::UnaryType value = vec::UnaryType::kBFloat16;
};

// y = Op(x) elementwise. Op is built from the node (attributes) and applied
// to each element in arith_t<T>. With kInts the op also takes signed integers.
template <class Op, bool kInts = false>
class Unary : public NodeKernel {
 public:
  explicit Unary(const sdk::Node& node) : NodeKernel(node), op_(node, *this) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    auto run = [&](auto tag) {
      using T = decltype(tag);
      using A = arith_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      if constexpr (has_vec_kind<Op>::value && vec_type<T>::known) {
        // AVX-512, 16 lanes at a time (unary_f32.hpp); false: no AVX-512.
        if (vec::unary_avx512()) {
          const vec::UnaryParams prm = op_.params();
          ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
            vec::unary_run(Op::kVec, vec_type<T>::value, prm, px + b, py + b, e - b);
          });
          return;
        }
      }
#ifdef SINGA_AVX512_BEGIN
      if constexpr (std::is_same<T, double>::value && has_f64_kind<Op>()) {
        if (vec::unary_avx512()) {
          ctx.parallel_for(x.numel(), kGrain / 2, [&](int64_t b, int64_t e) { run_f64<Op>(px + b, py + b, e - b); });
          return;
        }
      }
#endif
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = from_acc<T>(op_(to_acc<A>(px[i])));
      });
    };
    if constexpr (kInts)
      dispatch_among<float, double, half, bfloat16, int8_t, int16_t, int32_t, int64_t>(x.dtype(), where(), run);
    else
      dispatch_real(x.dtype(), where(), run);
  }

 private:
  Op op_;
};

struct ReluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kRelu;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  ReluOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const { return x < A(0) ? A(0) : x; }  // NaN passes through
};

struct LeakyReluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kLeakyRelu;
  vec::UnaryParams params() const { return {alpha}; }
  float alpha;
  LeakyReluOp(const sdk::Node& n, const NodeKernel&) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class A>
  A operator()(A x) const { return x < A(0) ? A(alpha) * x : x; }
};

struct SigmoidOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kSigmoid;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  SigmoidOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const {
    // Both branches keep exp's argument <= 0, so nothing overflows.
    if (x >= A(0)) return A(1) / (A(1) + std::exp(-x));
    A e = std::exp(x);
    return e / (A(1) + e);
  }
};

struct TanhOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kTanh;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  TanhOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const { return std::tanh(x); }
};

struct EluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kElu;
  vec::UnaryParams params() const { return {alpha}; }
  float alpha;
  EluOp(const sdk::Node& n, const NodeKernel&) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class A>
  A operator()(A x) const { return x < A(0) ? A(alpha) * std::expm1(x) : x; }
};

struct SeluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kSelu;
  vec::UnaryParams params() const { return {alpha, 0.f, gamma}; }
  float alpha, gamma;
  SeluOp(const sdk::Node& n, const NodeKernel&)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)), gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class A>
  A operator()(A x) const { return x > A(0) ? A(gamma) * x : A(gamma) * A(alpha) * std::expm1(x); }
};

struct CeluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kCelu;
  vec::UnaryParams params() const { return {alpha}; }
  float alpha;
  CeluOp(const sdk::Node& n, const NodeKernel& k) : alpha(n.attr_float("alpha", 1.0f)) {
    if (alpha == 0.0f) k.fail("attribute alpha must not be 0 (it divides the input)");
  }
  template <class A>
  A operator()(A x) const { return x > A(0) ? x : A(alpha) * std::expm1(x / A(alpha)); }
};

struct HardSigmoidOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kHardSigmoid;
  vec::UnaryParams params() const { return {alpha, beta}; }
  float alpha, beta;
  HardSigmoidOp(const sdk::Node& n, const NodeKernel&) : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class A>
  A operator()(A x) const {
    const A v = A(alpha) * x + A(beta);
    return v != v ? v : std::min(A(1), std::max(A(0), v));  // NaN through, as np.clip
  }
};

struct HardSwishOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kHardSwish;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  HardSwishOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const {
    // (x + 3) / 6, which does not cancel near -3 as x / 6 + 1/2 does; NaN through.
    return x != x ? x : x * std::min(A(1), std::max(A(0), (x + A(3)) / A(6)));
  }
};

struct SoftplusOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kSoftplus;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  SoftplusOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const {
    // log(1 + e^x) without overflow for large x.
    return x > A(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct SoftsignOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kSoftsign;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  SoftsignOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const { return x / (A(1) + std::abs(x)); }
};

struct ThresholdedReluOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kThresholdedRelu;
  vec::UnaryParams params() const { return {alpha}; }
  float alpha;
  ThresholdedReluOp(const sdk::Node& n, const NodeKernel&) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class A>
  A operator()(A x) const { return x > A(alpha) ? x : A(0); }
};

// Mish (opset 18): x * tanh(softplus(x)).
struct MishOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kMish;
  vec::UnaryParams params() const { return vec::UnaryParams(); }
  MishOp(const sdk::Node&, const NodeKernel&) {}
  template <class A>
  A operator()(A x) const {
    const A sp = x > A(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    return x * std::tanh(sp);
  }
};

// Swish (opset 24): x * sigmoid(alpha * x).
struct SwishOp {
  static constexpr vec::UnaryKind kVec = vec::UnaryKind::kSwish;
  vec::UnaryParams params() const { return {alpha}; }
  float alpha;
  SwishOp(const sdk::Node& n, const NodeKernel&) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class A>
  A operator()(A x) const {
    const A z = A(alpha) * x;
    if (z >= A(0)) return x / (A(1) + std::exp(-z));
    const A e = std::exp(z);
    return x * e / (A(1) + e);
  }
};

// y = x >= 0 ? x : slope * x, slope broadcast to x's shape. Before opset 7
// a 1-D slope with one value per channel applies along axis 1.
class PRelu : public NodeKernel {
 public:
  explicit PRelu(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor slope = required(ctx, 1, "slope");
    SINGA_CHECK(slope.dtype() == x.dtype(),
                std::string("slope is ") + sdk::dtype_name(slope.dtype()) + " but X is " + sdk::dtype_name(x.dtype()));
    const Shape xs = x.shape();
    Shape ss = slope.shape();
    if (opset() < 7 && ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != 1) ss.resize(xs.size() - 1, 1);
    bool ok = ss.size() <= xs.size();
    for (size_t i = 0; ok && i < ss.size(); ++i) {
      int64_t d = ss[ss.size() - 1 - i];
      ok = d == 1 || d == xs[xs.size() - 1 - i];
    }
    SINGA_CHECK(ok,
                "slope of shape " + shape_str(slope.shape()) + " does not broadcast to X of shape " + shape_str(xs));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    ops::Broadcaster<2> bc(xs, {xs, ss});
    dispatch_among<float, double, half, bfloat16, int32_t, int64_t, uint32_t, uint64_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = arith_t<T>;
      const T* px = x.data<T>();
      const T* ps = slope.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(bc.rows(), std::max<int64_t>(1, kGrain / std::max<int64_t>(1, bc.inner())), [&](int64_t rb, int64_t re) {
        bc.run_rows(rb, re, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const A v = to_acc<A>(px[off[0] + i * st[0]]);
            py[o + i] = v < A(0) ? from_acc<T>(to_acc<A>(ps[off[1] + i * st[1]]) * v) : px[off[0] + i * st[0]];
          }
        });
      });
    });
  }
};

// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0), any numeric type.
class Shrink : public NodeKernel {
 public:
  explicit Shrink(const sdk::Node& node)
      : NodeKernel(node), lambd_(node.attr_float("lambd", 0.5f)), bias_(node.attr_float("bias", 0.0f)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    dispatch_among<float, double, half, bfloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                   uint64_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      // Integers go through double so that +-bias cannot wrap before the cast.
      using A = std::conditional_t<std::is_integral<T>::value, double, acc_t<T>>;
      const A lambd = A(lambd_), bias = A(bias_);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const A v = to_acc<A>(px[i]);
          py[i] = from_acc<T>(v < -lambd ? v + bias : (v > lambd ? v - bias : A(0)));
        }
      });
    });
  }

 private:
  float lambd_, bias_;
};

// Gelu (opset 20): approximate "none" is x/2 * (1 + erf(x/sqrt(2))),
// "tanh" is x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). float,
// float16 and bfloat16 run unary_f32.hpp's AVX-512 forms where the CPU has
// them; without, float with "none" runs vec_math.hpp's gelu (a rational erf,
// absolute accuracy only; the GELU fusion pass, core/passes/fuse_gelu.cpp,
// writes the node).
class Gelu : public NodeKernel {
 public:
  explicit Gelu(const sdk::Node& node) : NodeKernel(node) {
    const std::string a = node.attr_string("approximate", "none");
    if (a == "tanh")
      tanh_ = true;
    else if (a != "none")
      fail("attribute approximate must be \"none\" or \"tanh\", got '" + a + "'");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    if (vec::unary_avx512() &&
        (x.dtype() == SINGA_ONNX_FLOAT || x.dtype() == SINGA_ONNX_FLOAT16 || x.dtype() == SINGA_ONNX_BFLOAT16)) {
      // AVX-512 (unary_f32.hpp): "none" through an erfc with relative
      // accuracy in the negative tail, "tanh" as x sigmoid(2u).
      const vec::UnaryKind k = tanh_ ? vec::UnaryKind::kGeluTanh : vec::UnaryKind::kGelu;
      const vec::UnaryType t = x.dtype() == SINGA_ONNX_FLOAT     ? vec::UnaryType::kFloat
                               : x.dtype() == SINGA_ONNX_FLOAT16 ? vec::UnaryType::kHalf
                                                                 : vec::UnaryType::kBFloat16;
      const size_t es = x.dtype() == SINGA_ONNX_FLOAT ? 4 : 2;
      const char* px = static_cast<const char*>(x.data_ptr());
      char* py = static_cast<char*>(y.data_ptr());
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        vec::unary_run(k, t, vec::UnaryParams(), px + size_t(b) * es, py + size_t(b) * es, e - b);
      });
      return;
    }
    if (x.dtype() == SINGA_ONNX_FLOAT && !tanh_) {
      const float* px = x.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) { vec::gelu(px + b, py + b, e - b); });
      return;
    }
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const bool tanh_form = tanh_;
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const A v = to_acc<A>(px[i]);
          const A inner = tanh_form ? std::tanh(A(kSqrt2OverPi) * (v + A(0.044715) * v * v * v))
                                    : std::erf(v * A(kInvSqrt2));
          py[i] = from_acc<T>(A(0.5) * v * (A(1) + inner));
        }
      });
    });
  }

 private:
  static constexpr double kInvSqrt2 = 0.70710678118654752440;
  static constexpr double kSqrt2OverPi = 0.79788456080286535588;
  bool tanh_ = false;
};

template <class Op>
void reg_unary(sdk::Registrar& reg, const char* op, int since, int end, uint64_t types) {
  reg.kernel<Unary<Op>>("", op, since, end, "cpu", {{"T", 0, types}}, SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace

void register_activations(sdk::Registrar& reg) {
  const uint64_t ints = sdk::kSignedIntTypes;
  // Relu-14 adds signed integers.
  reg.kernel<Unary<ReluOp>>("", "Relu", 1, 13, "cpu", {{"T", 0, kRealTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<Unary<ReluOp, true>>("", "Relu", 14, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes | ints}}, SINGA_KERNEL_MAY_INPLACE);
  reg_unary<LeakyReluOp>(reg, "LeakyRelu", 1, 17, kRealTypes);
  reg_unary<SigmoidOp>(reg, "Sigmoid", 1, 17, kRealTypes);
  reg_unary<TanhOp>(reg, "Tanh", 1, 17, kRealTypes);
  reg_unary<EluOp>(reg, "Elu", 1, 17, kRealTypes);
  reg_unary<SeluOp>(reg, "Selu", 1, 17, kRealTypes);
  reg_unary<CeluOp>(reg, "Celu", 12, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<HardSigmoidOp>(reg, "HardSigmoid", 1, 17, kRealTypes);
  reg_unary<HardSwishOp>(reg, "HardSwish", 14, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<SoftplusOp>(reg, "Softplus", 1, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<SoftsignOp>(reg, "Softsign", 1, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<ThresholdedReluOp>(reg, "ThresholdedRelu", 10, SINGA_VERSION_OPEN, kRealTypes);
  reg.kernel<Gelu>("", "Gelu", 20, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg_unary<MishOp>(reg, "Mish", 18, 18, sdk::kFloatTypes);
  reg_unary<SwishOp>(reg, "Swish", 24, SINGA_VERSION_OPEN, kRealTypes);
  // Opset 22 adds bfloat16 to these (the kernels above already take it).
  reg_unary<EluOp>(reg, "Elu", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<SeluOp>(reg, "Selu", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<HardSigmoidOp>(reg, "HardSigmoid", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<HardSwishOp>(reg, "HardSwish", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<SoftplusOp>(reg, "Softplus", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<SoftsignOp>(reg, "Softsign", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<ThresholdedReluOp>(reg, "ThresholdedRelu", 22, SINGA_VERSION_OPEN, kRealTypes);
  reg_unary<MishOp>(reg, "Mish", 22, SINGA_VERSION_OPEN, kRealTypes);
  // Celu-28 adds float16, double and bfloat16 (taken above already).
  reg_unary<CeluOp>(reg, "Celu", 28, SINGA_VERSION_OPEN, kRealTypes);
  reg.kernel<Shrink>("", "Shrink", 9, SINGA_VERSION_OPEN, "cpu", {{"T", 0, sdk::kNumericTypes}}, SINGA_KERNEL_MAY_INPLACE);
  // PRelu-9 adds integer types.
  const uint64_t prelu_ints = bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64) | bit(SINGA_ONNX_UINT32) | bit(SINGA_ONNX_UINT64);
  reg.kernel<PRelu>("", "PRelu", 1, 8, "cpu", {{"T", 0, kRealTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<PRelu>("", "PRelu", 9, 17, "cpu", {{"T", 0, kRealTypes | prelu_ints}}, SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace nn
}  // namespace singa
