// topk_select.hpp - TopK's selection for a small k: one pass over the row
// keeping the k best (value, index) pairs sorted in a small buffer. Once the
// buffer is full only an element that beats its last entry is inserted, and
// for float32 that test runs on 16 elements at a time with AVX-512, so a
// typical row costs one vector compare per 16 elements instead of a sort.
//
// Order: NaN ranks above every number (largest first: NaNs lead; smallest
// first: they trail), and equal values keep their original order. A later
// element never ties its way in, since its index is larger.
#ifndef SINGA_OPS_REDUCE_TOPK_SELECT_HPP
#define SINGA_OPS_REDUCE_TOPK_SELECT_HPP

#include "../common/unary_f32.hpp"

#include <cstdint>
#include <utility>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>
#endif

namespace singa {
namespace ops {
namespace reduce {

// k above which TopK sorts instead (insertion into the buffer is O(k)).
constexpr int64_t kTopKSelectMax = 64;

// a ranks above b; NaN above every number, so the ordering stays strict-weak.
// Written without branches: offer() evaluates it in loops whose outcome the
// branch predictor cannot guess.
template <typename C> inline bool topk_above(C a, C b) {
  const bool an = a != a, bn = b != b;
  return (an & !bn) | (!an & !bn & (a > b));
}

// The k best of a row, best first: vals[0..k) and idx[0..k) (scratch the caller owns).
template <typename C> struct TopKBuffer {
  C* vals;
  int64_t* idx;
  int64_t k, size = 0;

  // Whether v (at a later index than every entry) ranks before entry e.
  bool beats(C v, int64_t e, bool largest) const {
    return largest ? topk_above(v, vals[e]) : topk_above(vals[e], v);
  }
  void offer(C v, int64_t j, bool largest) {
    if (size == k && !beats(v, k - 1, largest)) return;
    int64_t p = size < k ? size++ : k - 1;
    for (; p > 0 && beats(v, p - 1, largest); --p) {
      vals[p] = vals[p - 1];
      idx[p] = idx[p - 1];
    }
    vals[p] = v;
    idx[p] = j;
  }
};

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
// Offers x[i..n) to a full buffer, 64 then 16 at a time: one compare per
// vector against the buffer's last value picks a superset of the lanes that
// beat it (an unordered compare also lets NaNs through, which offer() then
// ranks), and only those go through offer().
inline void topk_scan_f32(TopKBuffer<float>& buf, const float* x, int64_t i, int64_t n, bool largest) {
  auto hits = [largest](__m512 v, __m512 vt) {
    return largest ? _mm512_cmp_ps_mask(v, vt, _CMP_NLE_UQ) : _mm512_cmp_ps_mask(v, vt, _CMP_NGE_UQ);
  };
  auto take = [&](unsigned h, int64_t at) {
    while (h) {
      const int l = __builtin_ctz(h);
      h &= h - 1;
      buf.offer(x[at + l], at + l, largest);
    }
  };
  __m512 vt = _mm512_set1_ps(buf.vals[buf.k - 1]);
  for (; i + 64 <= n; i += 64) {
    const __mmask16 h0 = hits(_mm512_loadu_ps(x + i), vt), h1 = hits(_mm512_loadu_ps(x + i + 16), vt);
    const __mmask16 h2 = hits(_mm512_loadu_ps(x + i + 32), vt), h3 = hits(_mm512_loadu_ps(x + i + 48), vt);
    if (!(h0 | h1 | h2 | h3)) continue;
    take(h0, i);
    take(h1, i + 16);
    take(h2, i + 32);
    take(h3, i + 48);
    vt = _mm512_set1_ps(buf.vals[buf.k - 1]);
  }
  for (; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    take(hits(_mm512_maskz_loadu_ps(lanes, x + i), vt) & lanes, i);
    vt = _mm512_set1_ps(buf.vals[buf.k - 1]);
  }
}
// A value that at least k elements of x[0..n) reach (largest: are >= it;
// else <=), from the per-lane maxima (minima) of its 16-element vectors: each
// lane's extreme is an element, so the k-th best of the 16 lane extremes
// bounds the k-th best element. Needs k <= 16 and n >= 16; false when the row
// holds a NaN (the ordering then needs offer() throughout).
inline bool topk_bound_f32(const float* x, int64_t n, int64_t k, bool largest, float* bound) {
  __m512 e = _mm512_loadu_ps(x);
  __mmask16 nan = _mm512_cmp_ps_mask(e, e, _CMP_UNORD_Q);
  int64_t i = 16;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    e = largest ? _mm512_maskz_max_ps(0xFFFF, e, v) : _mm512_maskz_min_ps(0xFFFF, e, v);
  }
  for (; i < n; ++i) nan |= __mmask16(x[i] != x[i]);
  if (nan) return false;
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, e);
  // k-th best of 16 by selection (k is small).
  for (int64_t a = 0; a < k; ++a)
    for (int b = int(a) + 1; b < 16; ++b)
      if (largest ? lanes[b] > lanes[a] : lanes[b] < lanes[a]) std::swap(lanes[a], lanes[b]);
  *bound = lanes[k - 1];
  return true;
}

// Offers to an empty buffer, in order, every element of x[0..n) that reaches
// `bound` (at least k do, and no other can be among the k best).
inline void topk_scan_bound_f32(TopKBuffer<float>& buf, const float* x, int64_t n, float bound, bool largest) {
  const __m512 vb = _mm512_set1_ps(bound);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
    unsigned h = (largest ? _mm512_cmp_ps_mask(v, vb, _CMP_GE_OQ) : _mm512_cmp_ps_mask(v, vb, _CMP_LE_OQ)) & lanes;
    while (h) {
      const int l = __builtin_ctz(h);
      h &= h - 1;
      buf.offer(x[i + l], i + l, largest);
    }
  }
}
SINGA_AVX512_END
#endif

// The k best of x[0..n) (k <= n, k <= kTopKSelectMax) into buf, best first.
template <typename C> void topk_select(TopKBuffer<C>& buf, const C* x, int64_t n, bool largest) {
  buf.size = 0;
#ifdef SINGA_AVX512_BEGIN
  // A bound first, so that only the few elements reaching it are offered
  // (random rows: ~11 offers of 768 for k = 5 instead of ~33).
  if constexpr (std::is_same<C, float>::value) {
    float bound;
    if (buf.k > 0 && buf.k <= 16 && n >= 64 && vec::unary_avx512() && topk_bound_f32(x, n, buf.k, largest, &bound)) {
      topk_scan_bound_f32(buf, x, n, bound, largest);
      return;
    }
  }
#endif
  int64_t j = 0;
  for (; j < n && buf.size < buf.k; ++j) buf.offer(x[j], j, largest);
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<C, float>::value) {
    if (buf.k > 0 && vec::unary_avx512()) {
      topk_scan_f32(buf, x, j, n, largest);
      return;
    }
  }
#endif
  for (; j < n; ++j) buf.offer(x[j], j, largest);
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
