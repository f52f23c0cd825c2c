// sincos_f32.hpp - vectorised sin and cos over float32 arrays (AVX2 + FMA,
// 8 lanes): x is reduced by the nearest multiple q of pi/2 in three FMA steps
// (pi/2 split into short-mantissa parts, so q * part is exact for |q| < 2^12),
// then the minimax polynomials for sin and cos on [-pi/4, pi/4] (the Cephes
// sinf/cosf coefficients) are chosen and signed by q mod 4. About 1 ulp against
// the exact value; signed zeros kept. Lanes beyond |x| = 8192, and NaN / inf,
// go through libm instead, where the three-part reduction would lose bits.
//
// Callers check sincos_supported() once; the scalar loops are the fallback.
#ifndef SINGA_PLUGINS_COMMON_SINCOS_F32_HPP
#define SINGA_PLUGINS_COMMON_SINCOS_F32_HPP

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SINGA_HAVE_SINCOS_AVX2 1
#endif

namespace singa {
namespace vec {

inline bool sincos_supported() {
#ifdef SINGA_HAVE_SINCOS_AVX2
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

#ifdef SINGA_HAVE_SINCOS_AVX2
// sin (kCos = false) or cos of 8 lanes, all with |x| <= 8192.
template <bool kCos>
__attribute__((target("avx2,fma"))) inline __m256 sincos8(__m256 x) {
  const __m256 q = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.636619772367581343f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(q, _mm256_set1_ps(1.5703125f), x);
  r = _mm256_fnmadd_ps(q, _mm256_set1_ps(4.837512969970703125e-4f), r);
  r = _mm256_fnmadd_ps(q, _mm256_set1_ps(7.54978995489188216e-8f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  // sin(r) = r + r^3 (s1 + r^2 (s2 + r^2 s3)); cos(r) = 1 - r^2/2 + r^4 (c1 + r^2 (c2 + r^2 c3)).
  __m256 ps = _mm256_fmadd_ps(_mm256_set1_ps(-1.9515295891e-4f), r2, _mm256_set1_ps(8.3321608736e-3f));
  ps = _mm256_fmadd_ps(ps, r2, _mm256_set1_ps(-1.6666654611e-1f));
  const __m256 s = _mm256_fmadd_ps(_mm256_mul_ps(ps, r2), r, r);
  __m256 pc = _mm256_fmadd_ps(_mm256_set1_ps(2.443315711809948e-5f), r2, _mm256_set1_ps(-1.388731625493765e-3f));
  pc = _mm256_fmadd_ps(pc, r2, _mm256_set1_ps(4.166664568298827e-2f));
  const __m256 c = _mm256_fmadd_ps(_mm256_mul_ps(pc, r2), r2, _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), r2, _mm256_set1_ps(1.0f)));
  // Quadrant: sin(x) = [s, c, -s, -c][q & 3]; cos(x) = sin(x + pi/2), one quadrant on.
  __m256i qi = _mm256_cvtps_epi32(q);
  if (kCos) qi = _mm256_add_epi32(qi, _mm256_set1_epi32(1));
  const __m256 use_c = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(qi, _mm256_set1_epi32(1)), _mm256_set1_epi32(1)));
  const __m256 neg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(qi, _mm256_set1_epi32(2)), 30));
  return _mm256_xor_ps(_mm256_blendv_ps(s, c, use_c), neg);
}

template <bool kCos>
__attribute__((target("avx2,fma"))) inline void sincos_avx2(const float* x, float* y, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), limit = _mm256_set1_ps(8192.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    // NaN compares false under _CMP_LE_OQ, so it takes the libm path too.
    const __m256 ok = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), limit, _CMP_LE_OQ);
    if (_mm256_movemask_ps(ok) == 0xff) {
      _mm256_storeu_ps(y + i, sincos8<kCos>(v));
    } else {
      for (int64_t k = i; k < i + 8; ++k) y[k] = kCos ? std::cos(x[k]) : std::sin(x[k]);
    }
  }
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t k = i; k < n; ++k) buf[k - i] = x[k];
    sincos_avx2<kCos>(buf, buf, 8);
    for (int64_t k = i; k < n; ++k) y[k] = buf[k - i];
  }
}
#endif

// y = sin(x) / cos(x) for n floats (y may be x); libm where AVX2/FMA are missing.
inline void sin_f32(const float* x, float* y, int64_t n) {
#ifdef SINGA_HAVE_SINCOS_AVX2
  if (sincos_supported()) return sincos_avx2<false>(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
}
inline void cos_f32(const float* x, float* y, int64_t n) {
#ifdef SINGA_HAVE_SINCOS_AVX2
  if (sincos_supported()) return sincos_avx2<true>(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
}

}  // namespace vec
}  // namespace singa

#endif
