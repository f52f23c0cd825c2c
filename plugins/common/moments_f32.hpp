// moments_f32.hpp - the sum of a float32 run and the sum of its squared
// deviations from a mean, in double with AVX-512 (8 double lanes, two
// accumulators), for the normalisations' statistics. The scalar double loops
// they replace do not vectorise (a double sum must keep its order); these
// change the order of the additions only, which in double leaves the float
// statistics unchanged to far below a float ulp.
//
// Callers check vec::unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_PLUGINS_COMMON_MOMENTS_F32_HPP
#define SINGA_PLUGINS_COMMON_MOMENTS_F32_HPP

#include "unary_f32.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace vec {

SINGA_AVX512_BEGIN

// The lanes of a sum in a fixed order; GCC 12's _mm512_reduce_add_pd trips
// -Wuninitialized on its extract.
inline double lane_sum8(__m512d v) {
  alignas(64) double l[8];
  _mm512_store_pd(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// sum of x[0..n) in double.
inline double sum_f32(const float* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm512_add_pd(a0, _mm512_maskz_cvtps_pd(__mmask8(0xFF), _mm256_loadu_ps(x + i)));
    a1 = _mm512_add_pd(a1, _mm512_maskz_cvtps_pd(__mmask8(0xFF), _mm256_loadu_ps(x + i + 8)));
  }
  double s = lane_sum8(_mm512_add_pd(a0, a1));
  for (; i < n; ++i) s += double(x[i]);
  return s;
}

// sum of (x[i] - mean)^2 over x[0..n) in double.
inline double sum_sq_dev_f32(const float* x, int64_t n, double mean) {
  const __m512d m = _mm512_set1_pd(mean);
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512d d0 = _mm512_sub_pd(_mm512_maskz_cvtps_pd(__mmask8(0xFF), _mm256_loadu_ps(x + i)), m);
    const __m512d d1 = _mm512_sub_pd(_mm512_maskz_cvtps_pd(__mmask8(0xFF), _mm256_loadu_ps(x + i + 8)), m);
    a0 = _mm512_fmadd_pd(d0, d0, a0);
    a1 = _mm512_fmadd_pd(d1, d1, a1);
  }
  double s = lane_sum8(_mm512_add_pd(a0, a1));
  for (; i < n; ++i) {
    const double d = double(x[i]) - mean;
    s += d * d;
  }
  return s;
}

SINGA_AVX512_END

}  // namespace vec
}  // namespace singa
#endif
#endif
