// unary_f32.hpp - elementwise activations and math (Sigmoid, Tanh, Exp, Log,
// Softplus, Mish, Elu, HardSwish, ...) over float arrays with AVX-512, 16
// lanes at a time, the tail under a mask, so that every element of a tensor
// goes through the same instructions. float16 and bfloat16 arrays convert 16
// values to float, compute, and convert back (rounding to nearest even, as
// sdk::half / sdk::bfloat16 do).
//
// unary_f32::run returns false when the CPU has no AVX-512 (or
// the runtime option cpu.avx512=0) or for a kind it does not know: the caller then
// runs its portable scalar loop.
//
// Accuracy, measured against double-precision references (tests/unit/
// test_vec_math.cpp): within a few ulp over the whole float line, subnormals
// included; see exp_avx512.hpp's full-range forms. Saturation is exact
// (sigmoid(+-inf) = 1 / 0, tanh(+-inf) = +-1, e^-inf = 0, softplus(x) = x for
// large x) and NaN propagates, except where the op itself maps NaN elsewhere
// (ThresholdedRelu: NaN > alpha is false, so 0).
#ifndef SINGA_PLUGINS_COMMON_UNARY_F32_HPP
#define SINGA_PLUGINS_COMMON_UNARY_F32_HPP

#include "exp_avx512.hpp"
#include "runtime_option.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace singa {
namespace vec {

enum class UnaryKind {
  kRelu,
  kLeakyRelu,        // alpha
  kThresholdedRelu,  // alpha
  kHardSigmoid,      // alpha, beta
  kHardSwish,
  kSoftsign,
  kSigmoid,
  kSwish,  // alpha
  kTanh,
  kExp,
  kLog,
  kSoftplus,
  kMish,
  kElu,   // alpha
  kSelu,  // alpha, gamma
  kCelu,  // alpha
  kGelu,  // approximate "none"
  kGeluTanh,
  kNeg,
  kAbs,
  kSqrt,
  kReciprocal,
};

struct UnaryParams {
  float alpha = 0.f, beta = 0.f, gamma = 0.f;
};

// The element types run() converts through float.
enum class UnaryType { kFloat, kHalf, kBFloat16 };

// True when the AVX-512 paths run: the CPU has AVX-512F and the runtime
// option cpu.avx512 is not 0 (as fast::avx512(), which not every plugin links).
inline bool unary_avx512() {
#if defined(SINGA_AVX512_BEGIN)
  static const bool on = [] {
    if (!ops::runtime_flag("cpu.avx512", true)) return false;
    __builtin_cpu_init();
    return bool(__builtin_cpu_supports("avx512f"));
  }();
  return on;
#else
  return false;
#endif
}

#ifdef SINGA_AVX512_BEGIN
namespace unary_detail {

SINGA_AVX512_BEGIN

struct Lanes {
  __m512 alpha, beta, gamma, zero, one;
  explicit Lanes(const UnaryParams& p)
      : alpha(_mm512_set1_ps(p.alpha)),
        beta(_mm512_set1_ps(p.beta)),
        gamma(_mm512_set1_ps(p.gamma)),
        zero(_mm512_setzero_ps()),
        one(_mm512_set1_ps(1.f)) {}
};

// min(1, max(0, v)) with NaN through (max/min return their second operand
// when either is NaN).
inline __m512 clamp01(__m512 v, const Lanes& c) {
  return _mm512_maskz_min_ps(kAllLanes, c.one, _mm512_maskz_max_ps(kAllLanes, c.zero, v));
}

// x sigmoid(z), for Swish and GELU: below z = 0 it is x e / (1 + e) with
// e = e^z = p 2^n, taken as (x p / (1 + e)) 2^n so that a subnormal result is
// rounded once (not a subnormal sigmoid's rounding scaled up by |x|). Below
// z = -120 it is x * 0 (the true value is under the least subnormal unless
// |x| > 1e50 |z|, beyond float).
inline __m512 x_sigmoid16(__m512 x, __m512 z, const Lanes& c) {
  __m512 n;
  const __m512 p = exp16_parts(_mm512_sub_ps(c.zero, _mm512_abs_ps(z)), &n);
  const __m512 d = _mm512_add_ps(c.one, _mm512_maskz_scalef_ps(kAllLanes, p, n));
  const __mmask16 neg = _mm512_cmp_ps_mask(z, c.zero, _CMP_LT_OQ);
  const __m512 r = _mm512_div_ps(_mm512_mul_ps(x, _mm512_mask_blend_ps(neg, c.one, p)), d);
  __m512 y = _mm512_mask_scalef_ps(r, neg, r, n);
  return _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(z, _mm512_set1_ps(-120.f), _CMP_LT_OQ), x, c.zero);
}

// GELU, x/2 (1 + erf(x / sqrt 2)) = x/2 erfc(-x / sqrt 2), with erfc(z) for
// z = |x| / sqrt 2 >= 0 as t e^{-z^2 + Q(t)}, t = 1 / (1 + z/2), Q the
// Chebyshev fit of Numerical Recipes' erfcc (fractional error < 1.2e-7 for
// all z >= 0). z^2 = x^2 / 2 is split exactly into hi + lo (an FMA gives
// x^2's rounding error), and e^-hi taken apart from e^{Q - lo}: a rounded z^2
// would cost z^2 ulp. Below 0 the result is x/2 erfc (relative accuracy all
// the way into the tail), above x (1 - erfc / 2). NaN through; -inf gives NaN
// (-inf * 0), as the formula does.
inline __m512 gelu16(__m512 x, const Lanes& c) {
  const __m512 a = _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(20.f), _mm512_abs_ps(x));  // erfc(14.2) = 0
  const __m512 t = _mm512_div_ps(c.one, _mm512_fmadd_ps(a, _mm512_set1_ps(0.35355339059327376f), c.one));
  __m512 q = _mm512_set1_ps(0.17087277f);
  const float coef[] = {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f,
                        0.09678418f,  0.37409196f, 1.00002368f,  -1.26551223f};
  for (float k : coef) q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(k));
  const __m512 hi = _mm512_mul_ps(a, a);
  const __m512 lo = _mm512_fmsub_ps(a, a, hi);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 e_hi = exp16_full(_mm512_mul_ps(hi, _mm512_set1_ps(-0.5f)));
  const __m512 tp = _mm512_mul_ps(t, exp16_full(_mm512_fnmadd_ps(lo, half, q)));  // erfc = tp e_hi
  const __m512 neg = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(x, half), tp), e_hi);
  const __m512 pos = _mm512_mul_ps(x, _mm512_fnmadd_ps(_mm512_mul_ps(tp, e_hi), half, c.one));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, c.zero, _CMP_LT_OQ), pos, neg);
}

template <UnaryKind K>
inline __m512 apply(__m512 x, const Lanes& c) {
  if constexpr (K == UnaryKind::kRelu) {
    return _mm512_maskz_max_ps(kAllLanes, c.zero, x);
  } else if constexpr (K == UnaryKind::kLeakyRelu) {
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, c.zero, _CMP_LT_OQ), x, c.alpha);
  } else if constexpr (K == UnaryKind::kThresholdedRelu) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, c.alpha, _CMP_GT_OQ), x);
  } else if constexpr (K == UnaryKind::kHardSigmoid) {
    return clamp01(_mm512_fmadd_ps(x, c.alpha, c.beta), c);
  } else if constexpr (K == UnaryKind::kHardSwish) {
    // (x + 3) / 6 rather than x / 6 + 1/2, which cancels near -3.
    const __m512 t = _mm512_mul_ps(_mm512_add_ps(x, _mm512_set1_ps(3.f)), _mm512_set1_ps(1.f / 6.f));
    return _mm512_mul_ps(x, clamp01(t, c));
  } else if constexpr (K == UnaryKind::kSoftsign) {
    return _mm512_div_ps(x, _mm512_add_ps(c.one, _mm512_abs_ps(x)));
  } else if constexpr (K == UnaryKind::kSigmoid) {
    return sigmoid16_full(x);
  } else if constexpr (K == UnaryKind::kSwish) {
    return x_sigmoid16(x, _mm512_mul_ps(x, c.alpha), c);
  } else if constexpr (K == UnaryKind::kTanh) {
    return tanh16_full(x);
  } else if constexpr (K == UnaryKind::kExp) {
    return exp16_full(x);
  } else if constexpr (K == UnaryKind::kLog) {
    return log16(x);
  } else if constexpr (K == UnaryKind::kSoftplus) {
    // max(x, 0) + ln(1 + e^-|x|): no overflow, relative accuracy below 0.
    const __m512 u = exp16_full(_mm512_sub_ps(c.zero, _mm512_abs_ps(x)));
    return _mm512_add_ps(_mm512_maskz_max_ps(kAllLanes, c.zero, x), log1p16_nonneg(u));
  } else if constexpr (K == UnaryKind::kMish) {
    // tanh(ln(1 + e)) = e (e + 2) / (e (e + 2) + 2) with e = e^x = p 2^n, so
    // x tanh(softplus x) = (x p q) 2^n, q = (e + 2) / (e (e + 2) + 2): one
    // rounding into the subnormals. Above 20 it is x, below -120 -0; -inf gives NaN
    // (-inf * 0), as the formula does.
    __m512 n;
    const __m512 xc = _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(20.f), x);
    const __m512 p = exp16_parts(xc, &n);
    const __m512 e = _mm512_maskz_scalef_ps(kAllLanes, p, n);
    const __m512 e2 = _mm512_add_ps(e, _mm512_set1_ps(2.f));
    const __m512 q = _mm512_div_ps(e2, _mm512_fmadd_ps(e, e2, _mm512_set1_ps(2.f)));
    __m512 y = _mm512_maskz_scalef_ps(kAllLanes, _mm512_mul_ps(_mm512_mul_ps(x, p), q), n);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(20.f), _CMP_GT_OQ), x);
    // Below -120 (e^x clamped there) x e^x is under the least subnormal: -0.
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-120.f), _CMP_LT_OQ), _mm512_set1_ps(-0.f));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ),
                              _mm512_set1_ps(__builtin_nanf("")));
  } else if constexpr (K == UnaryKind::kElu) {
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, c.zero, _CMP_LT_OQ), c.alpha, expm1_16(x));
  } else if constexpr (K == UnaryKind::kSelu) {
    // gamma x above 0, gamma alpha (e^x - 1) elsewhere (NaN included).
    const __m512 ga = _mm512_mul_ps(c.gamma, c.alpha);
    return _mm512_mask_mul_ps(_mm512_mul_ps(ga, expm1_16(x)), _mm512_cmp_ps_mask(x, c.zero, _CMP_GT_OQ), c.gamma, x);
  } else if constexpr (K == UnaryKind::kCelu) {
    const __m512 neg = _mm512_mul_ps(c.alpha, expm1_16(_mm512_div_ps(x, c.alpha)));
    return _mm512_mask_mov_ps(neg, _mm512_cmp_ps_mask(x, c.zero, _CMP_GT_OQ), x);
  } else if constexpr (K == UnaryKind::kGelu) {
    return gelu16(x, c);
  } else if constexpr (K == UnaryKind::kGeluTanh) {
    // x/2 (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
    // no cancellation for negative x.
    const __m512 x2 = _mm512_mul_ps(x, x);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(x2, x), _mm512_set1_ps(0.044715f), x);
    // u is rounded in float: the relative error grows as ~|2u| ulp in the
    // far negative tail (sigmoid's condition number there).
    return x_sigmoid16(x, _mm512_mul_ps(inner, _mm512_set1_ps(2.f * 0.79788456080286535588f)), c);
  } else if constexpr (K == UnaryKind::kNeg) {
    return _mm512_castsi512_ps(
        _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int32_t(0x80000000u))));
  } else if constexpr (K == UnaryKind::kAbs) {
    return _mm512_abs_ps(x);
  } else if constexpr (K == UnaryKind::kSqrt) {
    return _mm512_maskz_sqrt_ps(kAllLanes, x);
  } else {
    static_assert(K == UnaryKind::kReciprocal, "unknown kind");
    return _mm512_div_ps(c.one, x);
  }
}

// (maskz forms throughout: GCC 12's plain ones trip -Wmaybe-uninitialized.)
// 16 values (under mask m) of the element type to float and back.
template <UnaryType T>
inline __m512 load16(const void* p, __mmask16 m) {
  if constexpr (T == UnaryType::kFloat) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    // 16-bit lanes: always 16 whole values (run_range copies a tail through
    // a buffer).
    (void)m;
    __m256i v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (T == UnaryType::kHalf) return _mm512_maskz_cvtph_ps(kAllLanes, v);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAllLanes, _mm512_maskz_cvtepu16_epi32(kAllLanes, v), 16));
  }
}

template <UnaryType T>
inline void store16(void* p, __m512 v) {
  if constexpr (T == UnaryType::kHalf) {
    const __m256i h = _mm512_maskz_cvtps_ph(kAllLanes, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    std::memcpy(p, &h, sizeof h);
  } else {
    // sdk::bfloat16: NaN -> (bits >> 16) | 0x40, else round to nearest even.
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAllLanes, x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_maskz_srli_epi32(kAllLanes, _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_maskz_srli_epi32(kAllLanes, x, 16), _mm512_set1_epi32(0x40)));
    const __m256i h = _mm512_maskz_cvtepi32_epi16(kAllLanes, r);
    std::memcpy(p, &h, sizeof h);
  }
}

template <UnaryKind K, UnaryType T>
void run_range(const void* x, void* y, int64_t n, const UnaryParams& prm) {
  const Lanes c(prm);
  if constexpr (T == UnaryType::kFloat) {
    const float* px = static_cast<const float*>(x);
    float* py = static_cast<float*>(y);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(py + i, apply<K>(_mm512_loadu_ps(px + i), c));
    if (i < n) {
      const __mmask16 m = __mmask16((1u << (n - i)) - 1u);
      _mm512_mask_storeu_ps(py + i, m, apply<K>(_mm512_maskz_loadu_ps(m, px + i), c));
    }
  } else {
    const uint16_t* px = static_cast<const uint16_t*>(x);
    uint16_t* py = static_cast<uint16_t*>(y);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) store16<T>(py + i, apply<K>(load16<T>(px + i, kAllLanes), c));
    if (i < n) {
      uint16_t in[16] = {}, out[16];
      std::memcpy(in, px + i, size_t(n - i) * 2);
      store16<T>(out, apply<K>(load16<T>(in, kAllLanes), c));
      std::memcpy(py + i, out, size_t(n - i) * 2);
    }
  }
}

SINGA_AVX512_END

template <UnaryType T>
bool run_typed(UnaryKind k, const void* x, void* y, int64_t n, const UnaryParams& p) {
  switch (k) {
#define SINGA_UNARY_CASE(K)                              \
  case UnaryKind::K:                                     \
    run_range<UnaryKind::K, T>(x, y, n, p);              \
    return true;
    SINGA_UNARY_CASE(kRelu)
    SINGA_UNARY_CASE(kLeakyRelu)
    SINGA_UNARY_CASE(kThresholdedRelu)
    SINGA_UNARY_CASE(kHardSigmoid)
    SINGA_UNARY_CASE(kHardSwish)
    SINGA_UNARY_CASE(kSoftsign)
    SINGA_UNARY_CASE(kSigmoid)
    SINGA_UNARY_CASE(kSwish)
    SINGA_UNARY_CASE(kTanh)
    SINGA_UNARY_CASE(kExp)
    SINGA_UNARY_CASE(kLog)
    SINGA_UNARY_CASE(kSoftplus)
    SINGA_UNARY_CASE(kMish)
    SINGA_UNARY_CASE(kElu)
    SINGA_UNARY_CASE(kSelu)
    SINGA_UNARY_CASE(kCelu)
    SINGA_UNARY_CASE(kGelu)
    SINGA_UNARY_CASE(kGeluTanh)
    SINGA_UNARY_CASE(kNeg)
    SINGA_UNARY_CASE(kAbs)
    SINGA_UNARY_CASE(kSqrt)
    SINGA_UNARY_CASE(kReciprocal)
#undef SINGA_UNARY_CASE
  }
  return false;
}

}  // namespace unary_detail
#endif

// y[i] = op(x[i]) for i < n (y may alias x), elements of type t. False
// (nothing written) when the AVX-512 path is off: run the scalar loop.
inline bool unary_run(UnaryKind k, UnaryType t, const UnaryParams& p, const void* x, void* y, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  if (!unary_avx512()) return false;
  switch (t) {
    case UnaryType::kFloat: return unary_detail::run_typed<UnaryType::kFloat>(k, x, y, n, p);
    case UnaryType::kHalf: return unary_detail::run_typed<UnaryType::kHalf>(k, x, y, n, p);
    case UnaryType::kBFloat16: return unary_detail::run_typed<UnaryType::kBFloat16>(k, x, y, n, p);
  }
  return false;
#else
  (void)k, (void)t, (void)p, (void)x, (void)y, (void)n;
  return false;
#endif
}

}  // namespace vec
}  // namespace singa
#endif
