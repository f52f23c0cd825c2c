// exp_avx512.hpp - e^x on 16 float lanes with AVX-512 instructions, for the
// kernels whose time is an exp per element (attention's softmax, an LSTM
// step's gates), the sigmoid and tanh built on it, and the lane sum and
// maximum that a softmax row needs.
//
// vec_math.hpp's exp_one is the same polynomial written for the compiler to
// vectorise, but its AVX-512 clone builds 2^n from integer bits and clamps
// with selects: on a 128-key softmax row (max, exp, sum) it took 7.1 us per
// 128 x 128 scores against 2.9 us here, where vrndscaleps rounds and
// vscalefps applies 2^n in one instruction each. Only inside
// SINGA_AVX512_BEGIN/END, for callers that checked fast::avx512().
//
// Accuracy: within 2 ulp of expf on [-87, 0] and beyond, as exp_one (the same
// range reduction and Cephes polynomial). Inputs below -87 give e^-87, above
// 88.7 +inf; a NaN comes out NaN.
#ifndef SINGA_PLUGINS_COMMON_EXP_AVX512_HPP
#define SINGA_PLUGINS_COMMON_EXP_AVX512_HPP

#include "avx512_region.hpp"

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace vec {

SINGA_AVX512_BEGIN

// The maskz forms with every lane set: GCC 12's plain max/roundscale/scalef
// intrinsics trip -Wmaybe-uninitialized (their unused source operand).
constexpr __mmask16 kAllLanes = 0xFFFF;

// e^x = p * 2^n for an x already clamped by the caller: n = round(x / ln 2)
// and p = e^r, r = x - n ln 2, from its degree-7 polynomial.
inline __m512 exp16_reduce(__m512 x, __m512* n_out) {
  const __m512 n = _mm512_maskz_roundscale_ps(kAllLanes, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln 2 with ln 2 split in two, so that n * 0.693359375 is exact.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  *n_out = n;
  return _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
}

inline __m512 exp16(__m512 x) {
  // max_ps returns its second operand when either is NaN, so a NaN stays one.
  x = _mm512_maskz_max_ps(kAllLanes, _mm512_set1_ps(-87.f), x);
  __m512 n;
  const __m512 p = exp16_reduce(x, &n);
  return _mm512_maskz_scalef_ps(kAllLanes, p, n);
}

// 1 / (1 + e^-x) and tanh, as vec_math.hpp's sigmoid_inplace and
// tanh_inplace compute them lane by lane (the same formulas, so a kernel that
// moves from those arrays to registers keeps its results): tanh(x) = sign(x)
// (1 - 2 / (e^{2|x|} + 1)), with x - x^3/3 + 2x^5/15 below |x| = 1/16 where
// the formula would cancel. e^x overflowing to +inf gives 0 and 1, as it
// should; a NaN comes out NaN.
inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

inline __m512 tanh16(__m512 v) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 a = _mm512_abs_ps(v);
  const __m512 big =
      _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.f), _mm512_add_ps(exp16(_mm512_add_ps(a, a)), one)));
  const __m512 v2 = _mm512_mul_ps(v, v);
  const __m512 poly = _mm512_fmadd_ps(v2, _mm512_set1_ps(0.133333333f), _mm512_set1_ps(-0.333333333f));
  const __m512 small = _mm512_mul_ps(v, _mm512_fmadd_ps(v2, poly, one));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 signed_big = _mm512_mask_sub_ps(big, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero, big);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.0625f), _CMP_LT_OQ), signed_big, small);
}

// ---- Full-range forms for the elementwise ops (unary_f32.hpp): within a few
// ulp of libm over the whole float line, subnormal results included, with
// exact saturation (e^-inf = 0, e^+inf = +inf, tanh(+-inf) = +-1) and NaN
// propagated. exp16 above keeps its clamp for the kernels built on it.

// e^x as p * 2^n with p in [0.7, 1.42] (both as floats): the caller may
// scale a product by 2^n in one rounding (Mish's x e^x below e^-87). x is
// clamped to [-120, 89]: n runs from -173 (x e^x below the least subnormal
// for x up to 1e6) to 128 (past the largest float).
inline __m512 exp16_parts(__m512 x, __m512* n_out) {
  x = _mm512_maskz_max_ps(kAllLanes, _mm512_set1_ps(-120.f), x);  // NaN stays NaN
  x = _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(89.f), x);
  return exp16_reduce(x, n_out);
}

// e^x, subnormal results rounded once (vscalefps).
inline __m512 exp16_full(__m512 x) {
  __m512 n;
  const __m512 p = exp16_parts(x, &n);
  return _mm512_maskz_scalef_ps(kAllLanes, p, n);
}

// e^x - 1: x + x^2/2! + ... + x^11/11! below |x| = 0.69 (truncation < 1e-9
// relative), e^x - 1 above (no cancellation left to speak of there).
inline __m512 expm1_16(__m512 x) {
  __m512 p = _mm512_set1_ps(2.50521084e-8f);  // 1/11!
  const float inv_fact[] = {2.75573192e-7f, 2.75573192e-6f, 2.48015873e-5f, 1.98412698e-4f, 1.38888889e-3f,
                            8.33333333e-3f, 4.16666667e-2f, 1.66666667e-1f, 0.5f};  // 1/10! .. 1/2!
  for (float c : inv_fact) p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(c));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, x), x, x);
  const __m512 big = _mm512_sub_ps(exp16_full(x), _mm512_set1_ps(1.f));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(0.69f), _CMP_LT_OQ), big, small);
}

// ln x: x = m 2^e with m in [sqrt(1/2), sqrt 2) (vgetmantps/vgetexpps, which
// normalise subnormals), then Cephes' logf polynomial in m - 1. ln 0 = -inf,
// ln(x < 0) = NaN, ln(+inf) = +inf, NaN stays NaN.
inline __m512 log16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  __m512 m = _mm512_maskz_getmant_ps(kAllLanes, x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  __m512 e = _mm512_maskz_getexp_ps(kAllLanes, x);
  const __mmask16 high = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, high, m, _mm512_set1_ps(0.5f));
  e = _mm512_mask_add_ps(e, high, e, one);
  const __m512 f = _mm512_sub_ps(m, one);
  const __m512 z = _mm512_mul_ps(f, f);
  __m512 p = _mm512_set1_ps(7.0376836292e-2f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.1514610310e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.1676998740e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.2420140846e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.4249322787e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.6668057665e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.0000714765e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-2.4999993993e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(3.3333331174e-1f));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
  y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
  y = _mm512_fmadd_ps(z, _mm512_set1_ps(-0.5f), y);
  y = _mm512_add_ps(f, y);
  y = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), y);
  const __m512 zero = _mm512_setzero_ps();
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, zero, _CMP_EQ_OQ), _mm512_set1_ps(-__builtin_inff()));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), _mm512_set1_ps(__builtin_nanf("")));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(__builtin_inff()), _CMP_EQ_OQ), x);
}

// ln(1 + u) for u >= 0 (Softplus and Mish feed it e^-|x|): ln w with w = 1 + u
// rounded, plus the rounding's correction (u - (w - 1)) / w, so that tiny u
// gives u.
inline __m512 log1p16_nonneg(__m512 u) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 w = _mm512_add_ps(one, u);
  const __m512 corr = _mm512_div_ps(_mm512_sub_ps(u, _mm512_sub_ps(w, one)), w);
  return _mm512_add_ps(log16(w), corr);
}

// 1 / (1 + e^-x) as e / (1 + e) below 0 and 1 / (1 + e) above, e = e^-|x|:
// relative accuracy on both sides (sigmoid(-100) is a subnormal, not 0).
inline __m512 sigmoid16_full(__m512 x) {
  const __m512 e = exp16_full(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)));
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.f), e);
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_div_ps(_mm512_mask_blend_ps(neg, _mm512_set1_ps(1.f), e), d);
}

// tanh: x + x^3 P(x^2) below |x| = 0.625 (a relative least-squares fit of our
// own, < 1 ulp there), sign(x) (1 - 2 / (e^{2|x|} + 1)) above, where tanh >
// 0.55 and the subtraction loses under an ulp.
inline __m512 tanh16_full(__m512 v) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 a = _mm512_abs_ps(v);
  const __m512 big =
      _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.f), _mm512_add_ps(exp16_full(_mm512_add_ps(a, a)), one)));
  const __m512 s = _mm512_mul_ps(v, v);
  __m512 p = _mm512_set1_ps(0.002135038375854492f);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.008167373947799206f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.0216959360986948f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.053945716470479965f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.13333195447921753f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.3333333134651184f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(v, s), p, v);
  // sign(v) onto big: NaN keeps its NaN.
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(int32_t(0x80000000u)));
  const __m512 signed_big = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(big), sign));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ), signed_big, small);
}

// The sum and the maximum of the 16 lanes, in halving steps (GCC 12's
// _mm512_reduce_* trip the same warning). A NaN lane may or may not win the
// maximum.
inline float lane_sum16(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAllLanes, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAllLanes, v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAllLanes, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAllLanes, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

inline float lane_max16(__m512 v) {
  v = _mm512_maskz_max_ps(kAllLanes, v, _mm512_maskz_shuffle_f32x4(kAllLanes, v, v, 0x4E));
  v = _mm512_maskz_max_ps(kAllLanes, v, _mm512_maskz_shuffle_f32x4(kAllLanes, v, v, 0xB1));
  v = _mm512_maskz_max_ps(kAllLanes, v, _mm512_maskz_permute_ps(kAllLanes, v, 0x4E));
  v = _mm512_maskz_max_ps(kAllLanes, v, _mm512_maskz_permute_ps(kAllLanes, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

SINGA_AVX512_END

}  // namespace vec
}  // namespace singa
#endif
#endif
