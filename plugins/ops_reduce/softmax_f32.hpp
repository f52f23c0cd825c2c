// softmax_f32.hpp - Softmax / LogSoftmax of one contiguous float row with
// AVX-512: the maximum, then exp(x - max) with exp_avx512.hpp's exp16 (its
// vrndscaleps and vscalefps; the compiler's clone of fast_exp built 2^n from
// integer bits and ran BERT's 128-wide score rows at ~2x ORT) summed in the
// same pass, then the scale or the log-sum subtraction. The tail goes under a
// mask, so every element takes the same instructions.
//
// A NaN is passed over by the maximum but makes the sum, so every output,
// NaN, as softmax.cpp's portable row does. Callers check unary_avx512() first.
#ifndef SINGA_OPS_REDUCE_SOFTMAX_F32_HPP
#define SINGA_OPS_REDUCE_SOFTMAX_F32_HPP

#include "../common/exp_avx512.hpp"
#include "../common/unary_f32.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

// y = softmax(x) (Log: log_softmax(x)) over n > 0 floats; y may be x.
template <bool Log>
inline void softmax_row_avx512(const float* x, float* y, int64_t n) {
  using vec::kAllLanes;
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (n - full)) - 1);
  // vmaxps returns its second operand when either is NaN: the running value.
  __m512 m = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < full; i += 16) m = _mm512_maskz_max_ps(kAllLanes, _mm512_loadu_ps(x + i), m);
  if (tail) m = _mm512_mask_max_ps(m, tail, _mm512_maskz_loadu_ps(tail, x + full), m);
  const float mx = vec::lane_max16(m);
  const __m512 mv = _mm512_set1_ps(mx);

  // Float lanes over blocks of 256 elements, the block sums in double, so a
  // long row keeps a double sum's accuracy.
  double sum = 0;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 e = vec::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv));
    if (!Log) _mm512_storeu_ps(y + i, e);
    acc = _mm512_add_ps(acc, e);
    if ((i & 255) == 240) sum += double(vec::lane_sum16(acc)), acc = _mm512_setzero_ps();
  }
  if (tail) {
    const __m512 e = vec::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mv));
    if (!Log) _mm512_mask_storeu_ps(y + full, tail, e);
    acc = _mm512_mask_add_ps(acc, tail, acc, e);
  }
  sum += double(vec::lane_sum16(acc));

  if (!Log) {
    // Probabilities below the least normal float are written as 0 (their
    // true value is smaller still): a masked row of a transformer left two
    // thirds of its scores subnormal, and the product with V that reads
    // them ran ~100x slower on the CPU's subnormal assists (masked BERT at
    // seq 128: 17 ms per attention x V MatMul).
    // Lanes whose product would be subnormal are masked off before the
    // multiply as well (a subnormal result or operand takes an assist too:
    // 80% of the row's time with a QDQ BERT's scores); the rounding of the
    // product can still land a lane just under FLT_MIN, hence the second test.
    const __m512 inv = _mm512_set1_ps(float(1.0 / sum)), least = _mm512_set1_ps(FLT_MIN),
                 least_e = _mm512_set1_ps(float(FLT_MIN * sum)), zero = _mm512_setzero_ps();
    auto scaled = [&](__m512 e) {
      const __m512 v = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(e, least_e, _CMP_NLT_UQ), e, inv);
      return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, least, _CMP_LT_OQ), zero);  // NaN stays NaN
    };
    for (int64_t i = 0; i < full; i += 16) _mm512_storeu_ps(y + i, scaled(_mm512_loadu_ps(y + i)));
    if (tail) _mm512_mask_storeu_ps(y + full, tail, scaled(_mm512_maskz_loadu_ps(tail, y + full)));
  } else {
    // (x - max) first: exact for the values near the maximum that matter most.
    const __m512 ls = _mm512_set1_ps(float(std::log(sum)));
    for (int64_t i = 0; i < full; i += 16)
      _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv), ls));
    if (tail)
      _mm512_mask_storeu_ps(y + full, tail,
                            _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mv), ls));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
