// tanh_f64_avx512.hpp - tanh and Mish over double arrays, 8 lanes with
// AVX-512: libm's tanh is a scalar call per element (3-5x ORT on the op
// matrix's float64 rows). Both are built on one double e^x.
//
// e^x: n = round(x / ln 2) (vrndscalepd), r = x - n ln 2 with ln 2 in two
// parts (|r| <= ln 2 / 2), e^r from its Taylor series to r^13 (truncation
// below 5e-18 relative), 2^n applied by vscalefpd (subnormal results are
// rounded once, below -745 gives 0).
// tanh: |x| < 0.625 uses m / (m + 2) with m = e^{2|x|} - 1 summed as a
// series of positive terms (no cancellation near 0, so tiny inputs and +-0 come
// back exact), else 1 - 2 / (e^{2|x|} + 1) with |x| clamped to 22 (tanh is 1
// in double beyond 19.1), sign copied back; NaN through.
// Mish: x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2), since
// (1 + e^x)^2 = n + 1: no log, no cancellation anywhere (2^n applied last,
// so results are rounded once down to the subnormals); x clamped to 40
// (the quotient is 1 in double beyond ~19), so +inf gives +inf, -inf gives
// -inf * 0 = NaN as the scalar formula.
// Measured against long double tanhl / log1pl / expl over a dense sweep
// (tests/unit/test_op_kernels_vec6.cpp states the bounds).
#ifndef SINGA_PLUGINS_COMMON_TANH_F64_AVX512_HPP
#define SINGA_PLUGINS_COMMON_TANH_F64_AVX512_HPP

#include "avx512_region.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace vec {
namespace f64_detail {

SINGA_AVX512_BEGIN

constexpr __mmask8 kAll8 = 0xFF;

// e^x = e^r 2^n for x in [-750, 710] (the caller clamps): e^r returned, n in *n_out.
inline __m512d exp8d_parts(__m512d x, __m512d* n_out) {
  const __m512d n = _mm512_maskz_roundscale_pd(kAll8, _mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634074)),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 = hi + lo with hi's low 32 bits zero, so n * hi is exact for |n| < 2^20.
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93147180369123816490e-01), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.90821492927058770002e-10), r);
  static constexpr double kInvFact[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
                                        1.0 / 3628800.0,    1.0 / 362880.0,    1.0 / 40320.0,
                                        1.0 / 5040.0,       1.0 / 720.0,       1.0 / 120.0,
                                        1.0 / 24.0,         1.0 / 6.0,         0.5};
  __m512d p = _mm512_set1_pd(kInvFact[0]);
  for (int k = 1; k < 12; ++k) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kInvFact[k]));
  // e^r = 1 + r + r^2 p(r): the leading terms added last keep the rounding near half an ulp.
  const __m512d r2 = _mm512_mul_pd(r, r);
  *n_out = n;
  return _mm512_add_pd(_mm512_set1_pd(1.0), _mm512_fmadd_pd(r2, p, r));
}

inline __m512d exp8d(__m512d x) {
  __m512d n;
  const __m512d er = exp8d_parts(x, &n);
  return _mm512_maskz_scalef_pd(kAll8, er, n);
}

inline __m512d tanh8d(__m512d x) {
  const __m512d ax = _mm512_abs_pd(x);
  // Small |x|: tanh(a) = m / (m + 2) with m = e^{2a} - 1 from its Taylor series
  // (2a <= 1.25: terms to y^20, truncation below 4e-17 relative); every term is
  // positive, so there is no cancellation and tiny inputs come back exact.
  const __m512d y2a = _mm512_add_pd(ax, ax);
  // 1/k! for k = 20 down to 2, so no division runs per vector.
  static constexpr double kInv[] = {
      1.0 / 2432902008176640000.0, 1.0 / 121645100408832000.0, 1.0 / 6402373705728000.0, 1.0 / 355687428096000.0,
      1.0 / 20922789888000.0,      1.0 / 1307674368000.0,      1.0 / 87178291200.0,      1.0 / 6227020800.0,
      1.0 / 479001600.0,           1.0 / 39916800.0,           1.0 / 3628800.0,          1.0 / 362880.0,
      1.0 / 40320.0,               1.0 / 5040.0,               1.0 / 720.0,              1.0 / 120.0,
      1.0 / 24.0,                  1.0 / 6.0,                  0.5};
  __m512d t = _mm512_set1_pd(kInv[0]);
  for (int k = 1; k < 19; ++k) t = _mm512_fmadd_pd(t, y2a, _mm512_set1_pd(kInv[k]));
  const __m512d m = _mm512_fmadd_pd(_mm512_mul_pd(y2a, y2a), t, y2a);
  const __m512d small = _mm512_div_pd(m, _mm512_add_pd(m, _mm512_set1_pd(2.0)));
  // Large |x|: 1 - 2 / (e^{2|x|} + 1), |x| clamped (a NaN lane becomes 22 here; NaN
  // lanes are restored below).
  const __m512d c = _mm512_maskz_min_pd(kAll8, ax, _mm512_set1_pd(22.0));
  const __m512d s = exp8d(_mm512_add_pd(c, c));
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d big = _mm512_sub_pd(one, _mm512_div_pd(_mm512_set1_pd(2.0), _mm512_add_pd(s, one)));
  const __m512i sign = _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(INT64_MIN));
  const __mmask8 is_small = _mm512_cmp_pd_mask(ax, _mm512_set1_pd(0.625), _CMP_LT_OQ);
  // Both parts on |x|, the sign copied back (so -0 stays -0).
  const __m512d mag = _mm512_mask_blend_pd(is_small, big, small);
  __m512d y = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(mag), sign));
  const __mmask8 nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_add_pd(y, nan, x, x);
}

inline __m512d mish8d(__m512d x) {
  const __m512d c = _mm512_maskz_max_pd(kAll8, _mm512_maskz_min_pd(kAll8, x, _mm512_set1_pd(40.0)), _mm512_set1_pd(-750.0));
  __m512d k;
  const __m512d er = exp8d_parts(c, &k);
  const __m512d e = _mm512_maskz_scalef_pd(kAll8, er, k);
  const __m512d e2 = _mm512_add_pd(e, _mm512_set1_pd(2.0));
  const __m512d n = _mm512_mul_pd(e, e2);
  // x e^r (e + 2) / (n + 2), scaled by 2^k last: e^x itself may be subnormal
  // below x = -708 while Mish (|x| times larger) is not.
  // (x times the quotient, so a huge x cannot overflow before the scaling).
  const __m512d q = _mm512_mul_pd(x, _mm512_div_pd(_mm512_mul_pd(er, e2), _mm512_add_pd(n, _mm512_set1_pd(2.0))));
  __m512d y = _mm512_maskz_scalef_pd(kAll8, q, k);
  // Below the clamp x * 0, as the scalar formula: -0, and NaN for -inf.
  const __mmask8 low = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-750.0), _CMP_LT_OQ);
  y = _mm512_mask_mul_pd(y, low, x, _mm512_setzero_pd());
  const __mmask8 nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_add_pd(y, nan, x, x);
}

// y[i] = tanh(x[i]) (kTanh) or mish(x[i]) for i < n; the tail through a
// masked load and store.
template <bool kTanh>
inline void run8d(const double* x, double* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    _mm512_storeu_pd(y + i, kTanh ? tanh8d(v) : mish8d(v));
  }
  if (i < n) {
    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1u);
    const __m512d v = _mm512_maskz_loadu_pd(m, x + i);
    _mm512_mask_storeu_pd(y + i, m, kTanh ? tanh8d(v) : mish8d(v));
  }
}

inline void tanh_f64(const double* x, double* y, int64_t n) { run8d<true>(x, y, n); }
inline void mish_f64(const double* x, double* y, int64_t n) { run8d<false>(x, y, n); }

SINGA_AVX512_END

}  // namespace f64_detail
}  // namespace vec
}  // namespace singa
#endif
#endif
