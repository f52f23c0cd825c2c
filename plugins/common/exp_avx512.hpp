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

inline __m512 exp16(__m512 x) {
  // max_ps returns its second operand when either is NaN, so a NaN stays one.
  x = _mm512_maskz_max_ps(kAllLanes, _mm512_set1_ps(-87.f), x);
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
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
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
