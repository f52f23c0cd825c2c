// unary.cpp - elementwise one-input math: roots, exponentials, rounding,
// trigonometry, sign/abs/neg and the IsNaN/IsInf predicates.
#include "math_common.hpp"
#include "registry.hpp"
#include "half_convert_f32.hpp"
#include "round_avx512.hpp"
#include "sincos_f32.hpp"
#include "unary_f32.hpp"
#include "vec_math.hpp"

namespace singa {
namespace ops {
namespace math {
namespace {

// float, double, float16; opset 22 added bfloat16 (kTrigTypes is what the
// kernels implement, the registrations narrow it by opset).
constexpr uint64_t kTrigTypes17 = sdk::kFloatTypes;
constexpr uint64_t kTrigTypes = kFloatLike;
constexpr int64_t kCheap = 16384;                  // elements per task for one-instruction ops
constexpr int64_t kCostly = 4096;                  // ... for libm calls

// Each functor runs on the compute type (float for 16-bit floats) and lists
// the dtypes it implements and its parallel grain.
#define SINGA_FLOAT_UNARY(NAME, TYPES, GRAIN, EXPR) \
  struct NAME {                                     \
    static constexpr uint64_t kTypes = TYPES;       \
    static constexpr int64_t kGrain = GRAIN;        \
    template <typename C>                           \
    C operator()(C x) const {                       \
      return EXPR;                                  \
    }                                               \
  };

SINGA_FLOAT_UNARY(SqrtFn, kFloatLike, kCostly, std::sqrt(x))
SINGA_FLOAT_UNARY(ExpFn, kFloatLike, kCostly, std::exp(x))
SINGA_FLOAT_UNARY(LogFn, kFloatLike, kCostly, std::log(x))
SINGA_FLOAT_UNARY(ReciprocalFn, kFloatLike, kCheap, C(1) / x)
SINGA_FLOAT_UNARY(FloorFn, kFloatLike, kCheap, std::floor(x))
SINGA_FLOAT_UNARY(CeilFn, kFloatLike, kCheap, std::ceil(x))
SINGA_FLOAT_UNARY(SinFn, kTrigTypes, kCostly, std::sin(x))
SINGA_FLOAT_UNARY(CosFn, kTrigTypes, kCostly, std::cos(x))
SINGA_FLOAT_UNARY(TanFn, kTrigTypes, kCostly, std::tan(x))
SINGA_FLOAT_UNARY(AsinFn, kTrigTypes, kCostly, std::asin(x))
SINGA_FLOAT_UNARY(AcosFn, kTrigTypes, kCostly, std::acos(x))
SINGA_FLOAT_UNARY(AtanFn, kTrigTypes, kCostly, std::atan(x))
SINGA_FLOAT_UNARY(SinhFn, kTrigTypes, kCostly, std::sinh(x))
SINGA_FLOAT_UNARY(CoshFn, kTrigTypes, kCostly, std::cosh(x))
SINGA_FLOAT_UNARY(AsinhFn, kTrigTypes, kCostly, std::asinh(x))
SINGA_FLOAT_UNARY(AcoshFn, kTrigTypes, kCostly, std::acosh(x))
SINGA_FLOAT_UNARY(AtanhFn, kTrigTypes, kCostly, std::atanh(x))
#undef SINGA_FLOAT_UNARY

struct RoundFn {
  static constexpr uint64_t kTypes = kFloatLike;
  static constexpr int64_t kGrain = kCheap;
  template <typename C>
  C operator()(C x) const {
    return round_half_even(x);
  }
};

// ONNX lists integer types for Erf too: computed in double, truncated back.
struct ErfFn {
  static constexpr uint64_t kTypes = kNumeric;
  static constexpr int64_t kGrain = kCostly;
  template <typename C>
  auto operator()(C x) const {
    if constexpr (is_int_v<C>)
      return std::erf(double(x));
    else
      return std::erf(x);
  }
};

struct AbsFn {
  static constexpr uint64_t kTypes = kNumeric;
  static constexpr int64_t kGrain = kCheap;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point<C>::value)
      return std::fabs(x);
    else if constexpr (std::is_signed<C>::value)
      return x < 0 ? wrap_neg(x) : x;
    else
      return x;
  }
};

struct NegFn {
  static constexpr uint64_t kTypes = kSignedNumeric;
  static constexpr int64_t kGrain = kCheap;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return wrap_neg(x);
    else
      return -x;
  }
};

// NaN stays NaN for floats.
struct SignFn {
  static constexpr uint64_t kTypes = kNumeric;
  static constexpr int64_t kGrain = kCheap;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point<C>::value)
      return x > 0 ? C(1) : x < 0 ? C(-1) : x;
    else if constexpr (std::is_signed<C>::value)
      return C((x > 0) - (x < 0));
    else
      return C(x > 0);
  }
};

// BitwiseNot (opset 18): every integer type.
struct BitNotFn {
  static constexpr uint64_t kTypes = sdk::kIntTypes;
  static constexpr int64_t kGrain = kCheap;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return C(~x);
    else
      return x;
  }
};

// The ops with an AVX-512 form (unary_f32.hpp) for float, float16 and
// bfloat16: Fn -> its kind; other ops and types run the scalar loop.
template <typename Fn>
constexpr bool vec_kind(vec::UnaryKind* k) {
  if constexpr (std::is_same<Fn, ExpFn>::value) return *k = vec::UnaryKind::kExp, true;
  if constexpr (std::is_same<Fn, LogFn>::value) return *k = vec::UnaryKind::kLog, true;
  if constexpr (std::is_same<Fn, SqrtFn>::value) return *k = vec::UnaryKind::kSqrt, true;
  if constexpr (std::is_same<Fn, ReciprocalFn>::value) return *k = vec::UnaryKind::kReciprocal, true;
  if constexpr (std::is_same<Fn, NegFn>::value) return *k = vec::UnaryKind::kNeg, true;
  if constexpr (std::is_same<Fn, AbsFn>::value) return *k = vec::UnaryKind::kAbs, true;
  return false;
}

// Floor, Ceil and Round: their vrndscale mode (round_avx512.hpp), else -1.
template <typename Fn>
constexpr int round_mode() {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<Fn, FloorFn>::value) return vec::kRoundFloor;
  if constexpr (std::is_same<Fn, CeilFn>::value) return vec::kRoundCeil;
  if constexpr (std::is_same<Fn, RoundFn>::value) return vec::kRoundEven;
#endif
  return -1;
}

// The types round_avx512 runs: float, double and float16.
template <typename Fn, typename T>
constexpr bool kRoundVec = round_mode<Fn>() >= 0 && (std::is_same<T, float>::value ||
                                                     std::is_same<T, double>::value || std::is_same<T, half>::value);

// Floor/Ceil/Round of n elements with AVX-512, for kRoundVec types once
// vec::unary_avx512() said yes.
template <typename Fn, typename T>
void round_avx512(const T* in, T* out, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  constexpr int kMode = round_mode<Fn>();
  if constexpr (std::is_same<T, float>::value) vec::round_f32<kMode>(in, out, n);
  if constexpr (std::is_same<T, double>::value) vec::round_f64<kMode>(in, out, n);
  if constexpr (std::is_same<T, half>::value) {
    static_assert(sizeof(half) == 2, "float16 is stored as 16 bits");
    vec::round_f16<kMode>(reinterpret_cast<const uint16_t*>(in), reinterpret_cast<uint16_t*>(out), n);
  }
#endif
  (void)in, (void)out, (void)n;
}

template <typename T>
constexpr bool vec_type(vec::UnaryType* t) {
  if constexpr (std::is_same<T, float>::value) return *t = vec::UnaryType::kFloat, true;
  if constexpr (std::is_same<T, half>::value) return *t = vec::UnaryType::kHalf, true;
  if constexpr (std::is_same<T, bfloat16>::value) return *t = vec::UnaryType::kBFloat16, true;
  return false;
}

// Erf, Sin and Cos have float32 vector forms only (vec_math.hpp,
// sincos_f32.hpp; Erf's branch-free rational form, ample for 16-bit
// results): float16 and bfloat16 run them on float blocks of 256,
// converted on the way in and rounded on the way out as the scalar loop
// rounds std::erf / std::sin of the widened value. 1 for these ops.
template <typename Fn>
constexpr bool kViaFloat = std::is_same<Fn, ErfFn>::value || std::is_same<Fn, SinFn>::value ||
                           std::is_same<Fn, CosFn>::value;

template <typename Fn> void float_kernel(float* v, int64_t n) {
  if constexpr (std::is_same<Fn, ErfFn>::value) vec::erf_rational_inplace(v, n);
  if constexpr (std::is_same<Fn, SinFn>::value) vec::sin_f32(v, v, n);
  if constexpr (std::is_same<Fn, CosFn>::value) vec::cos_f32(v, v, n);
}

template <typename Fn, typename T> void via_float_blocks(const T* in, T* out, int64_t n) {
  constexpr int64_t kBlock = 256;
  float buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    if constexpr (std::is_same<T, half>::value) {
      vec::f16_to_f32(reinterpret_cast<const uint16_t*>(in + b), buf, m);
      float_kernel<Fn>(buf, m);
      vec::f32_to_f16(buf, reinterpret_cast<uint16_t*>(out + b), m);
    } else {
      for (int64_t i = 0; i < m; ++i) buf[i] = float(in[b + i]);
      float_kernel<Fn>(buf, m);
      for (int64_t i = 0; i < m; ++i) out[b + i] = T(buf[i]);
    }
  }
}

// Sqrt and Reciprocal of doubles, 8 lanes at a time: vsqrtpd and vdivpd are
// correctly rounded, as std::sqrt and 1 / x, so the bits are the scalar
// loop's (which libm's errno handling keeps from vectorizing).
template <typename Fn> constexpr bool kF64Vec = std::is_same<Fn, SqrtFn>::value || std::is_same<Fn, ReciprocalFn>::value;

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
template <typename Fn> void f64_avx512(const double* in, double* out, int64_t n) {
  auto op = [](__m512d v) {
    if constexpr (std::is_same<Fn, SqrtFn>::value)
      return _mm512_sqrt_pd(v);
    else
      return _mm512_div_pd(_mm512_set1_pd(1.0), v);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(out + i, op(_mm512_loadu_pd(in + i)));
  if (i < n) {
    const __mmask8 m = __mmask8((1u << (n - i)) - 1u);
    _mm512_mask_storeu_pd(out + i, m, op(_mm512_maskz_loadu_pd(m, in + i)));
  }
}
SINGA_AVX512_END
#endif

// Sign of float16 / bfloat16 by bit operations, 16 lanes at a time: +-0
// stays, a NaN becomes the encoding sdk::half / sdk::bfloat16 give the float
// NaN (sign | 0x7e00; the bits | 0x40), anything else +-1. The scalar loop's
// bits, without a conversion per element.
#ifdef SINGA_HAVE_F16C_PATH
template <typename T> __attribute__((target("avx2"))) void sign16(const T* in, T* out, int64_t n) {
  constexpr bool kHalf = std::is_same<T, half>::value;
  const auto* x = reinterpret_cast<const uint16_t*>(in);
  auto* y = reinterpret_cast<uint16_t*>(out);
  const __m256i mag = _mm256_set1_epi16(0x7fff), sgn = _mm256_set1_epi16(int16_t(0x8000));
  const __m256i inf = _mm256_set1_epi16(kHalf ? 0x7c00 : 0x7f80), one = _mm256_set1_epi16(kHalf ? 0x3c00 : 0x3f80);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i a = _mm256_and_si256(h, mag), s = _mm256_and_si256(h, sgn);
    const __m256i zero = _mm256_cmpeq_epi16(a, _mm256_setzero_si256()), nan = _mm256_cmpgt_epi16(a, inf);
    const __m256i nan_bits = kHalf ? _mm256_or_si256(s, _mm256_set1_epi16(0x7e00)) : _mm256_or_si256(h, _mm256_set1_epi16(0x40));
    __m256i r = _mm256_or_si256(s, one);
    r = _mm256_blendv_epi8(r, nan_bits, nan);
    r = _mm256_blendv_epi8(r, h, zero);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  for (; i < n; ++i) {
    const float v = float(in[i]);
    out[i] = T(v > 0 ? 1.f : v < 0 ? -1.f : v);
  }
}
#endif

template <typename Fn>
class UnaryKernel {
 public:
  explicit UnaryKernel(const sdk::Node& node) {}
  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    sdk::Tensor x = ctx.input(0);
    sdk::Tensor y = ctx.output(0, x.shape(), x.dtype());
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_same<Fn, ErfFn>::value && std::is_same<T, float>::value) {
            // GELU's Erf: libm's erff was a sixth of a BERT encoder's run.
            const float* in = x.data<float>();
            float* out = y.data<float>();
            ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) {
              std::copy(in + b, in + e, out + b);
              vec::erf_inplace(out + b, e - b);
            });
          } else if constexpr ((std::is_same<Fn, SinFn>::value || std::is_same<Fn, CosFn>::value) &&
                               std::is_same<T, float>::value) {
            // Vector sin/cos (sincos_f32.hpp): libm per element was 3x ORT.
            const float* in = x.data<float>();
            float* out = y.data<float>();
            ctx.parallel_for(x.numel(), kCheap, [&](int64_t b, int64_t e) {
              if (std::is_same<Fn, SinFn>::value)
                vec::sin_f32(in + b, out + b, e - b);
              else
                vec::cos_f32(in + b, out + b, e - b);
            });
          } else if constexpr (kViaFloat<Fn> && (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value)) {
            const T* in = x.data<T>();
            T* out = y.data<T>();
            ctx.parallel_for(x.numel(), kCostly, [&](int64_t b, int64_t e) { via_float_blocks<Fn, T>(in + b, out + b, e - b); });
#ifdef SINGA_HAVE_F16C_PATH
          } else if constexpr (std::is_same<Fn, SignFn>::value &&
                               (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value)) {
            const T* in = x.data<T>();
            T* out = y.data<T>();
            if (__builtin_cpu_supports("avx2")) {
              ctx.parallel_for(x.numel(), kCheap, [&](int64_t b, int64_t e) { sign16<T>(in + b, out + b, e - b); });
            } else {
              unary_map<T, T>(ctx, x, y, Fn::kGrain, [](T v) { return convert<T>(Fn{}(compute_t<T>(v))); });
            }
#endif
          } else if constexpr (in_mask<T>(Fn::kTypes)) {
#ifdef SINGA_AVX512_BEGIN
            if constexpr (kF64Vec<Fn> && std::is_same<T, double>::value) {
              if (vec::unary_avx512()) {
                const double* in = x.data<double>();
                double* out = y.data<double>();
                ctx.parallel_for(x.numel(), kCheap, [&](int64_t b, int64_t e) { f64_avx512<Fn>(in + b, out + b, e - b); });
                return;
              }
            }
#endif
            if constexpr (kRoundVec<Fn, T>) {
              if (vec::unary_avx512()) {
                const T* in = x.data<T>();
                T* out = y.data<T>();
                ctx.parallel_for(x.numel(), kCheap,
                                 [&](int64_t b, int64_t e) { round_avx512<Fn, T>(in + b, out + b, e - b); });
                return;
              }
            }
            vec::UnaryKind k{};
            vec::UnaryType t{};
            if (vec_kind<Fn>(&k) && vec_type<T>(&t) && vec::unary_avx512()) {
              const T* in = x.data<T>();
              T* out = y.data<T>();
              ctx.parallel_for(x.numel(), kCheap, [&](int64_t b, int64_t e) {
                vec::unary_run(k, t, vec::UnaryParams(), in + b, out + b, e - b);
              });
              return;
            }
            unary_map<T, T>(ctx, x, y, Fn::kGrain, [](T v) { return convert<T>(Fn{}(compute_t<T>(v))); });
          }
        },
        Fn::kTypes);
  }
};

// ------------------------------------------------------------ predicates

template <typename Pred>
void predicate_map(sdk::Context& ctx, uint64_t types, Pred pred) {
  sdk::check(ctx.has_input(0), "input X is missing");
  sdk::Tensor x = ctx.input(0);
  sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_BOOL);
  sdk::dispatch(
      x.dtype(),
      [&](auto tag) {
        using T = decltype(tag);
        if constexpr (in_mask<T>(kFloatLike)) {
          unary_map<T, bool>(ctx, x, y, kCheap, [&pred](T v) { return pred(compute_t<T>(v)); });
        }
      },
      types);
}

class IsNaNKernel {
 public:
  explicit IsNaNKernel(const sdk::Node& node) {}
  void compute(sdk::Context& ctx) const {
    predicate_map(ctx, kFloatLike, [](auto v) { return v != v; });
  }
};

class IsInfKernel {
 public:
  explicit IsInfKernel(const sdk::Node& node)
      : negative_(node.attr_int("detect_negative", 1) != 0), positive_(node.attr_int("detect_positive", 1) != 0) {}
  void compute(sdk::Context& ctx) const {
    bool neg = negative_, pos = positive_;
    predicate_map(ctx, kFloatLike, [neg, pos](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
  }

 private:
  bool negative_, positive_;
};

template <typename Fn>
void reg_unary(sdk::Registrar& reg, const char* op, int since) {
  reg.kernel<UnaryKernel<Fn>>("", op, since, 17, "cpu", {{"T", 0, Fn::kTypes}}, SINGA_KERNEL_MAY_INPLACE);
}

// Ops whose version 22 added bfloat16: `types17` up to opset 21, Fn::kTypes from 22.
template <typename Fn>
void reg_unary22(sdk::Registrar& reg, const char* op, int since, uint64_t types17) {
  reg.kernel<UnaryKernel<Fn>>("", op, since, 17, "cpu", {{"T", 0, types17}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<UnaryKernel<Fn>>("", op, 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, Fn::kTypes}}, SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace

void register_unary(sdk::Registrar& reg) {
  // Opset 1 versions differ only in the ignored consumed_inputs attribute.
  reg_unary<SqrtFn>(reg, "Sqrt", 1);
  reg_unary<ExpFn>(reg, "Exp", 1);
  reg_unary<LogFn>(reg, "Log", 1);
  reg_unary<ReciprocalFn>(reg, "Reciprocal", 1);
  reg_unary<FloorFn>(reg, "Floor", 1);
  reg_unary<CeilFn>(reg, "Ceil", 1);
  reg_unary<AbsFn>(reg, "Abs", 1);
  reg_unary<NegFn>(reg, "Neg", 1);
  reg_unary<ErfFn>(reg, "Erf", 9);
  reg_unary<SignFn>(reg, "Sign", 9);
  reg_unary22<RoundFn>(reg, "Round", 11, sdk::kFloatTypes);
  reg_unary22<SinFn>(reg, "Sin", 7, kTrigTypes17);
  reg_unary22<CosFn>(reg, "Cos", 7, kTrigTypes17);
  reg_unary22<TanFn>(reg, "Tan", 7, kTrigTypes17);
  reg_unary22<AsinFn>(reg, "Asin", 7, kTrigTypes17);
  reg_unary22<AcosFn>(reg, "Acos", 7, kTrigTypes17);
  reg_unary22<AtanFn>(reg, "Atan", 7, kTrigTypes17);
  reg_unary22<SinhFn>(reg, "Sinh", 9, kTrigTypes17);
  reg_unary22<CoshFn>(reg, "Cosh", 9, kTrigTypes17);
  reg_unary22<AsinhFn>(reg, "Asinh", 9, kTrigTypes17);
  reg_unary22<AcoshFn>(reg, "Acosh", 9, kTrigTypes17);
  reg_unary22<AtanhFn>(reg, "Atanh", 9, kTrigTypes17);
  reg.kernel<UnaryKernel<BitNotFn>>("", "BitwiseNot", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, BitNotFn::kTypes}},
                                    SINGA_KERNEL_MAY_INPLACE);
  // Version 20 of IsNaN/IsInf added the float8 types (not implemented here).
  reg.kernel<IsNaNKernel>("", "IsNaN", 20, SINGA_VERSION_OPEN, "cpu",
                          {{"T1", 0, kFloatLike}, {"T2", -1, sdk::bit(SINGA_ONNX_BOOL)}});
  reg.kernel<IsInfKernel>("", "IsInf", 20, SINGA_VERSION_OPEN, "cpu",
                          {{"T1", 0, kFloatLike}, {"T2", -1, sdk::bit(SINGA_ONNX_BOOL)}});
  reg.kernel<IsNaNKernel>("", "IsNaN", 9, 17, "cpu", {{"T1", 0, kFloatLike}, {"T2", -1, sdk::bit(SINGA_ONNX_BOOL)}});
  reg.kernel<IsInfKernel>("", "IsInf", 10, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kFloatLike}, {"T2", -1, sdk::bit(SINGA_ONNX_BOOL)}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
