// argext_f32.hpp - ArgMax / ArgMin (and Hardmax's argmax) over float32 with
// AVX-512. The portable loop carries a compare-and-branch per element.
//
// A contiguous row takes two passes: the extreme value with NaN winning
// (minmax_f32.hpp), then the first (or, with select_last_index, the last)
// position holding it, 16 lanes at a time. That is the same answer as the
// sequential "replace when better" walk: ties go to the first (last) index,
// -0 and +0 tie, and the first (last) NaN wins over every number.
//
// A strided axis keeps, per lane of a block of the kept inner run, the best
// value and its index, updated a whole row at a time under a compare mask.
//
// Callers check unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_OPS_REDUCE_ARGEXT_F32_HPP
#define SINGA_OPS_REDUCE_ARGEXT_F32_HPP

#include "minmax_f32.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

// Index of the maximum (kMax) or minimum of x[0..n), n > 0; `last` picks the
// last of equal extremes.
template <bool kMax>
inline int64_t arg_extreme_row_f32(const float* x, int64_t n, bool last) {
  const float m = minmax_fold_f32<kMax>(x, n);
  const bool nan = m != m;
  const __m512 vm = _mm512_set1_ps(m);
  auto hits = [&](__mmask16 lanes, const float* p) -> __mmask16 {
    const __m512 v = _mm512_maskz_loadu_ps(lanes, p);
    return nan ? _mm512_mask_cmp_ps_mask(lanes, v, v, _CMP_UNORD_Q) : _mm512_mask_cmp_ps_mask(lanes, v, vm, _CMP_EQ_OQ);
  };
  if (!last) {
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      const unsigned h = hits(lanes, x + i);
      if (h) return i + __builtin_ctz(h);
    }
  } else {
    for (int64_t i = (n - 1) / 16 * 16; i >= 0; i -= 16) {
      const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      const unsigned h = hits(lanes, x + i);
      if (h) return i + 31 - __builtin_clz(h);
    }
  }
  return 0;  // not reached: m is one of the elements
}

// One row j of a strided ArgMax/ArgMin over a block of n lanes: where row[k]
// beats best[k] (NaN counts as the extreme; kLast lets an equal value, or a
// NaN after a NaN, replace), best[k] = row[k] and idx[k] = j.
template <bool kMax, bool kLast>
inline void arg_extreme_cols_f32(float* best, int32_t* idx, const float* row, int32_t j, int64_t n) {
  const __m512i vj = _mm512_set1_epi32(j);
  constexpr int cmp = kMax ? (kLast ? _CMP_GE_OQ : _CMP_GT_OQ) : (kLast ? _CMP_LE_OQ : _CMP_LT_OQ);
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 lanes = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, row + k);
    const __m512 b = _mm512_maskz_loadu_ps(lanes, best + k);
    const __mmask16 vnan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __mmask16 bnan = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    // Ordered compares are false when either side is NaN.
    __mmask16 take = _mm512_cmp_ps_mask(v, b, cmp) | __mmask16(vnan & ~bnan);
    if (kLast) take |= __mmask16(vnan & bnan);
    take &= lanes;
    _mm512_mask_storeu_ps(best + k, take, v);
    _mm512_mask_storeu_epi32(idx + k, take, vj);
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
