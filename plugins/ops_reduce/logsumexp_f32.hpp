// logsumexp_f32.hpp - ReduceLogSumExp's sum of e^(x - max) over float32 with
// AVX-512 (exp16 from exp_avx512.hpp, within 2 ulp of expf), where the
// portable fold calls std::exp in double per element. The terms are summed in
// float32 lanes over blocks and the block sums in double, as in sum_f32.hpp;
// each term is at most 1 and the maximum's term is exactly 1, so the log of
// the sum is good to a few float32 ulps. exp16 gives e^-87 (not 0) below -87,
// which adds at most count * 1.6e-38 to a sum of at least 1.
//
// With an infinite or NaN maximum the sum is meaningless, but ReduceLogSumExp
// then returns the maximum itself. Callers check unary_avx512() first.
#ifndef SINGA_OPS_REDUCE_LOGSUMEXP_F32_HPP
#define SINGA_OPS_REDUCE_LOGSUMEXP_F32_HPP

#include "sum_f32.hpp"

#ifdef SINGA_AVX512_BEGIN
#include "../common/exp_avx512.hpp"

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

// sum of e^(x[i] - m) for i < n, in double.
inline double sum_exp_fold_f32(const float* x, int64_t n, float m) {
  const __m512 vm = _mm512_set1_ps(m);
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumFlush) {
    const int64_t e = n - b < kSumFlush ? n : b + kSumFlush;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int64_t i = b;
    for (; i + 32 <= e; i += 32) {
      a0 = _mm512_add_ps(a0, vec::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm)));
      a1 = _mm512_add_ps(a1, vec::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm)));
    }
    for (; i < e; i += 16) {
      const __mmask16 k = e - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (e - i)) - 1);
      const __m512 t = vec::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm));
      a0 = _mm512_mask_add_ps(a0, k, a0, t);
    }
    total += sum_lanes_f64(_mm512_add_ps(a0, a1));
  }
  return total;
}

// acc[k] += e^(row[k] - m[k]) for k < n.
inline void sum_exp_row_f32(float* acc, const float* row, const float* m, int64_t n) {
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 l = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
    const __m512 t = vec::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(l, row + k), _mm512_maskz_loadu_ps(l, m + k)));
    _mm512_mask_storeu_ps(acc + k, l, _mm512_add_ps(_mm512_maskz_loadu_ps(l, acc + k), t));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
