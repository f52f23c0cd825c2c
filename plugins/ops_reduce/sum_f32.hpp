// sum_f32.hpp - float32 sums for ReduceSum / ReduceMean / ReduceSumSquare /
// ReduceL1 / ReduceL2 with AVX-512. The portable fold widens every element to
// double, which halves the vector width and adds a conversion per element.
// Here elements are added in float32 lanes over blocks of kSumFlush elements
// (rows), and each block's partial sums are added into double: the float32
// error grows only with the block length (64 adds per lane at most), while a
// long reduction keeps the accuracy of a double sum. The float32 result agrees
// with a double-precision sum to a few ulps for sums of same-sign values.
//
// Callers check unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_OPS_REDUCE_SUM_F32_HPP
#define SINGA_OPS_REDUCE_SUM_F32_HPP

#include "../common/unary_f32.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

// What each element contributes: x, x*x or |x|.
enum class SumTerm { kPlain, kSquare, kAbs };

// Elements (contiguous fold) or rows (kept inner run) summed in float32
// before the partial sums move into double.
constexpr int64_t kSumFlush = 1024;
constexpr int64_t kSumRowFlush = 64;

SINGA_AVX512_BEGIN

template <SumTerm kTerm>
inline __m512 sum_term16(__m512 v) {
  if (kTerm == SumTerm::kSquare) return _mm512_mul_ps(v, v);
  if (kTerm == SumTerm::kAbs) return _mm512_abs_ps(v);
  return v;
}

// Lanes of a float32 vector, summed in double.
// (maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized in its own headers.)
inline double sum_lanes_f64(__m512 v) {
  const __m512d lo = _mm512_maskz_cvtps_pd(0xFF, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 0)));
  const __m512d hi = _mm512_maskz_cvtps_pd(0xFF, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1)));
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, _mm512_add_pd(lo, hi));
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// sum of term(x[i]) for i < n, in double.
template <SumTerm kTerm>
inline double sum_fold_f32(const float* x, int64_t n) {
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumFlush) {
    const int64_t e = n - b < kSumFlush ? n : b + kSumFlush;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = b;
    for (; i + 64 <= e; i += 64) {
      a0 = _mm512_add_ps(a0, sum_term16<kTerm>(_mm512_loadu_ps(x + i)));
      a1 = _mm512_add_ps(a1, sum_term16<kTerm>(_mm512_loadu_ps(x + i + 16)));
      a2 = _mm512_add_ps(a2, sum_term16<kTerm>(_mm512_loadu_ps(x + i + 32)));
      a3 = _mm512_add_ps(a3, sum_term16<kTerm>(_mm512_loadu_ps(x + i + 48)));
    }
    for (; i < e; i += 16) {
      const __mmask16 m = e - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (e - i)) - 1);
      a0 = _mm512_add_ps(a0, sum_term16<kTerm>(_mm512_maskz_loadu_ps(m, x + i)));
    }
    total += sum_lanes_f64(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
  return total;
}

// acc[k] += term(row[k]) for k < n: one row of a reduction whose kept inner
// run is contiguous.
template <SumTerm kTerm>
inline void sum_row_f32(float* acc, const float* row, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    _mm512_storeu_ps(acc + k, _mm512_add_ps(_mm512_loadu_ps(acc + k), sum_term16<kTerm>(_mm512_loadu_ps(row + k))));
  if (k < n) {
    const __mmask16 m = __mmask16((1u << (n - k)) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m, acc + k);
    _mm512_mask_storeu_ps(acc + k, m, _mm512_add_ps(a, sum_term16<kTerm>(_mm512_maskz_loadu_ps(m, row + k))));
  }
}

// wide[k] += acc[k], acc[k] = 0 for k < n: moves float32 partial sums into double.
inline void sum_flush_f32(double* wide, float* acc, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    wide[k] += double(acc[k]);
    acc[k] = 0.f;
  }
}

// y[0..n) = the float16 values x[0..n) as float32, 16 at a time (vcvtph2ps).
// A NaN keeps its payload here, which a reduction never shows (a NaN result
// is written as the output type's NaN), so there is no fix-up as in
// half_convert_f32.hpp.
inline void half_to_f32_avx512(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    alignas(32) uint16_t tail[16] = {};
    for (int64_t k = i; k < n; ++k) tail[k - i] = x[k];
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_cvtph_ps(m, _mm256_load_si256(reinterpret_cast<const __m256i*>(tail))));
  }
}

// y[0..n) = the float32 values x[0..n) rounded to float16 and back (vcvtps2ph
// to nearest even, then vcvtph2ps): the values a Cast to float16 would hold.
inline void f32_round_half_avx512(const float* x, float* y, int64_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_maskz_cvtph_ps(0xFFFF, _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(x + i), kRound)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_maskz_cvtph_ps(m, _mm512_maskz_cvtps_ph(m, _mm512_maskz_loadu_ps(m, x + i), kRound)));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
