// max_pool_3s1_narrow_f32.hpp - MaxPool with 3x3 windows, stride 1 and one
// pixel of padding on every side ("same" size) over planes at most 32 floats
// wide: GoogLeNet's Inception pools on 28x28, 14x14 and 7x7 planes, and any
// other net's on planes that narrow.
//
// The general path copies each plane into a buffer with its edges repeated,
// runs the row kernel, and copies the rows back: on planes this small the
// copies cost several times the comparisons (480 planes of 14x14 took about
// 0.09 ms at 1 thread, against 0.05 ms for ONNX Runtime on its blocked
// layout). Here a plane row is one or two masked vector loads; its left and
// right neighbours (edge repeated) are lane permutes of them, and each output row
// takes its nine taps from three such rows in registers, then one masked
// store. Repeating the edge tap next to itself keeps the scalar loop's result
// (see max_pool_replicated in pool.cpp): taps are visited in row-major order
// and one replaces the best so far only when strictly greater, so NaN and ties
// come out as the generic loop gives them. AVX-512 only: call where
// fast::avx512() holds.
#ifndef SINGA_OPS_NN_MAX_POOL_3S1_NARROW_F32_HPP
#define SINGA_OPS_NN_MAX_POOL_3S1_NARROW_F32_HPP

#include <avx512_region.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>
#endif

namespace singa {
namespace nn {

// Whether max_pool_3s1_narrow_f32 computes a max pool over H x W planes into
// OH x OW ones with windows k, strides s and leading pads pb (each {rows,
// columns}): 3x3, stride 1, a pad of 1 before, output the input's size (so a
// pad of 1 after), 1 <= W <= 32.
inline bool max_pool_3s1_narrow_fits(int64_t H, int64_t W, int64_t OH, int64_t OW, const int64_t k[2],
                                     const int64_t s[2], const int64_t pb[2]) {
  return k[0] == 3 && k[1] == 3 && s[0] == 1 && s[1] == 1 && pb[0] == 1 && pb[1] == 1 && OH == H && OW == W &&
         H >= 1 && W >= 1 && W <= 32;
}

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN

// The lane permutes that give a plane row's left and right neighbours (lane c
// of the left one reads column max(c - 1, 0), of the right one min(c + 1,
// W - 1): the window's first and last columns, edge repeated), for the row's
// first 16 columns and, on planes wider than 16, the rest (indices into both
// vectors, as _mm512_permutex2var_ps reads them).
struct NarrowPoolLanes {
  __mmask16 lo_mask, hi_mask;
  __m512i left_lo, right_lo, left_hi, right_hi;
  explicit NarrowPoolLanes(int64_t W) {
    alignas(64) int32_t i[4][16];
    for (int c = 0; c < 16; ++c) {
      i[0][c] = std::max(c - 1, 0);
      i[1][c] = std::min<int>(c + 1, int(W) - 1);
      i[2][c] = std::min<int>(c + 15, int(W) - 1);
      i[3][c] = std::min<int>(c + 17, int(W) - 1);
    }
    left_lo = _mm512_load_si512(i[0]);
    right_lo = _mm512_load_si512(i[1]);
    left_hi = _mm512_load_si512(i[2]);
    right_hi = _mm512_load_si512(i[3]);
    lo_mask = __mmask16(W >= 16 ? 0xFFFF : (1u << W) - 1);
    hi_mask = __mmask16(W <= 16 ? 0 : W >= 32 ? 0xFFFF : (1u << (W - 16)) - 1);
  }
};

// Row x of a plane as its left, centre and right columns, V vectors of 16.
template <int V>
inline void max_pool_3s1_narrow_row(const float* x, const NarrowPoolLanes& l, __m512 (*t)[3]) {
  const __m512 lo = _mm512_maskz_loadu_ps(l.lo_mask, x);
  if (V == 1) {
    t[0][0] = _mm512_permutex2var_ps(lo, l.left_lo, lo);
    t[0][1] = lo;
    t[0][2] = _mm512_permutex2var_ps(lo, l.right_lo, lo);
    return;
  }
  const __m512 hi = _mm512_maskz_loadu_ps(l.hi_mask, x + 16);
  t[0][0] = _mm512_permutex2var_ps(lo, l.left_lo, lo);
  t[0][1] = lo;
  t[0][2] = _mm512_permutex2var_ps(lo, l.right_lo, hi);
  t[V - 1][0] = _mm512_permutex2var_ps(lo, l.left_hi, hi);
  t[V - 1][1] = hi;
  t[V - 1][2] = _mm512_permutex2var_ps(lo, l.right_hi, hi);
}

// One plane: x [H, W] into y [H, W], W <= 16 * V. A masked max of (v, best)
// gives v only where v > best (ordered), best on ties and NaN: the
// strictly-greater rule in one instruction.
template <int V>
inline void max_pool_3s1_narrow_plane_v(const float* x, int64_t H, int64_t W, const NarrowPoolLanes& l, float* y) {
  __m512 taps[3][V][3];  // taps[r % 3]: row r's three columns
  max_pool_3s1_narrow_row<V>(x, l, taps[0]);
  if (H > 1) max_pool_3s1_narrow_row<V>(x + W, l, taps[1]);
  for (int64_t i = 0; i < H; ++i) {
    const int64_t a = std::max<int64_t>(i - 1, 0), c = std::min<int64_t>(i + 1, H - 1);
    if (c > i && c > 1) max_pool_3s1_narrow_row<V>(x + c * W, l, taps[c % 3]);
    for (int v = 0; v < V; ++v) {
      const __m512* ta = taps[a % 3][v];
      __m512 best = ta[0];
      best = _mm512_maskz_max_ps(0xFFFF, ta[1], best);
      best = _mm512_maskz_max_ps(0xFFFF, ta[2], best);
      for (const __m512* t : {taps[i % 3][v], taps[c % 3][v]})
        for (int j = 0; j < 3; ++j) best = _mm512_maskz_max_ps(0xFFFF, t[j], best);
      _mm512_mask_storeu_ps(y + i * W + 16 * v, v == 0 ? l.lo_mask : l.hi_mask, best);
    }
  }
}

// Planes [0, planes) of x, each H x W, into y (see max_pool_3s1_narrow_fits).
inline void max_pool_3s1_narrow_f32(const float* x, int64_t planes, int64_t H, int64_t W, float* y) {
  const NarrowPoolLanes l(W);
  for (int64_t p = 0; p < planes; ++p) {
    if (W <= 16)
      max_pool_3s1_narrow_plane_v<1>(x + p * H * W, H, W, l, y + p * H * W);
    else
      max_pool_3s1_narrow_plane_v<2>(x + p * H * W, H, W, l, y + p * H * W);
  }
}

SINGA_AVX512_END
#else
inline void max_pool_3s1_narrow_f32(const float*, int64_t, int64_t, int64_t, float*) { std::abort(); }
#endif

}  // namespace nn
}  // namespace singa
#endif
