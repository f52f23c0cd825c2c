// minmax_f32.hpp - ReduceMax / ReduceMin over float32 with AVX-512, 16 lanes
// at a time and the tail under a mask. The portable fold keeps numpy's "NaN
// wins" rule with a compare-and-select that GCC leaves scalar; here vmaxps /
// vminps take the running value as second operand, so a NaN already in it
// stays, and a NaN read from x is written over the lane. Max and min of
// floats are exact, so the result equals the double-precision fold's.
//
// Callers check unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_OPS_REDUCE_MINMAX_F32_HPP
#define SINGA_OPS_REDUCE_MINMAX_F32_HPP

#include "../common/unary_f32.hpp"

#include <cstdint>
#include <limits>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

// max/min of v and the running value a, with a NaN from either side kept.
template <bool kMax>
inline __m512 minmax_step16(__m512 a, __m512 v) {
  const __m512 r = kMax ? _mm512_maskz_max_ps(vec::kAllLanes, v, a) : _mm512_maskz_min_ps(vec::kAllLanes, v, a);
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
}

// max (kMax) or min of x[0..n); -inf / +inf when n is 0.
template <bool kMax>
inline float minmax_fold_f32(const float* x, int64_t n) {
  const float init = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m512 a0 = _mm512_set1_ps(init), a1 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = minmax_step16<kMax>(a0, _mm512_loadu_ps(x + i));
    a1 = minmax_step16<kMax>(a1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    a0 = minmax_step16<kMax>(a0, _mm512_mask_loadu_ps(a0, m, x + i));  // lanes past the end read a0 itself
  }
  a0 = minmax_step16<kMax>(a0, a1);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, a0);
  float r = lanes[0];
  for (int l = 1; l < 16; ++l) {
    const float v = lanes[l];
    if (v != v || r != r) return v != v ? v : r;
    r = kMax ? (v > r ? v : r) : (v < r ? v : r);
  }
  return r;
}

// acc[k] = max/min(acc[k], row[k]) for k < n: one row of a reduction whose
// kept inner run is contiguous.
template <bool kMax>
inline void minmax_row_f32(float* acc, const float* row, int64_t n) {
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m, acc + k);
    _mm512_mask_storeu_ps(acc + k, m, minmax_step16<kMax>(a, _mm512_maskz_loadu_ps(m, row + k)));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
