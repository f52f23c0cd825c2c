// minmax_f64.hpp - ReduceMax / ReduceMin over float64 with AVX-512, 8 lanes
// at a time and the tail under a mask: minmax_f32.hpp's scheme for doubles
// (vmaxpd / vminpd with the running value as second operand, a NaN read from
// x written over the lane, so NaN wins as in numpy). Exact, like any max/min.
//
// Callers check unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_OPS_REDUCE_MINMAX_F64_HPP
#define SINGA_OPS_REDUCE_MINMAX_F64_HPP

#include "../common/unary_f32.hpp"

#include <cstdint>
#include <limits>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

template <bool kMax>
inline __m512d minmax_step8(__m512d a, __m512d v) {
  const __m512d r = kMax ? _mm512_maskz_max_pd(0xFF, v, a) : _mm512_maskz_min_pd(0xFF, v, a);
  return _mm512_mask_mov_pd(r, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), v);
}

// max (kMax) or min of x[0..n); -inf / +inf when n is 0.
template <bool kMax>
inline double minmax_fold_f64(const double* x, int64_t n) {
  const double init = kMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  __m512d a0 = _mm512_set1_pd(init), a1 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = minmax_step8<kMax>(a0, _mm512_loadu_pd(x + i));
    a1 = minmax_step8<kMax>(a1, _mm512_loadu_pd(x + i + 8));
  }
  for (; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - i)) - 1);
    a0 = minmax_step8<kMax>(a0, _mm512_mask_loadu_pd(a0, m, x + i));  // lanes past the end read a0 itself
  }
  a0 = minmax_step8<kMax>(a0, a1);
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, a0);
  double r = lanes[0];
  for (int l = 1; l < 8; ++l) {
    const double v = lanes[l];
    if (v != v || r != r) return v != v ? v : r;
    r = kMax ? (v > r ? v : r) : (v < r ? v : r);
  }
  return r;
}

// acc[k] = max/min(acc[k], row[k]) for k < n.
template <bool kMax>
inline void minmax_row_f64(double* acc, const double* row, int64_t n) {
  for (int64_t k = 0; k < n; k += 8) {
    const __mmask8 m = n - k >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - k)) - 1);
    const __m512d a = _mm512_maskz_loadu_pd(m, acc + k);
    _mm512_mask_storeu_pd(acc + k, m, minmax_step8<kMax>(a, _mm512_maskz_loadu_pd(m, row + k)));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
