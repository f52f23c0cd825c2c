// product_tiles_avx512.hpp - the inner loops of the AVX-512 register tiles
// of products: along the output channels (accumulate_tile: ops_nn's
// pointwise_mean_f32.cpp and pointwise_channels_last_f32.cpp, ops_rnn's LSTM
// input projection), NV vectors of 16 output channels by NP pixels or rows,
// each input channel costing NV vector loads of weights and NP broadcasts of
// X; and along the pixels (accumulate_rows: pointwise_direct_f32.cpp,
// winograd_f32.cpp's products), NR output rows by NV vectors of pixels, each
// input channel costing NV vector loads of X and NR broadcasts of weights.
// Only for callers that checked fast::avx512().
#ifndef SINGA_PLUGINS_COMMON_PRODUCT_TILES_AVX512_HPP
#define SINGA_PLUGINS_COMMON_PRODUCT_TILES_AVX512_HPP

#include <avx512_region.hpp>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

#include <cstdint>

namespace singa {
namespace fast {

SINGA_AVX512_BEGIN

// acc[j][p] += sum_k w[k * ldw + j * ldv + lane] * x[k * ldx + p * ldp] for
// k in [0, K): W's vectors side by side (ldv 16) or in panels of their own,
// X as planes (ldp 1) or as channels-last rows (ldx 1). Unrolled by pragma
// so that the accumulators stay in registers (without it GCC 12 kept them
// in memory: see pointwise_direct_f32.cpp).
template <int NV, int NP>
inline void accumulate_tile(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t K, __m512 (&acc)[NV][NP],
                            int64_t ldp = 1, int64_t ldv = 16) {
  for (int64_t k = 0; k < K; ++k) {
    const float* wk = w + k * ldw;
    const float* xk = x + k * ldx;
    __m512 wv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) wv[j] = _mm512_loadu_ps(wk + j * ldv);
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      const __m512 xv = _mm512_set1_ps(xk[p * ldp]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[j][p] = _mm512_fmadd_ps(wv[j], xv, acc[j][p]);
    }
  }
}

// acc[i][v] += w[k * NR + i] * x[k * ldx + 16 v + lane] for k in [0, K):
// weights packed NR to an input channel, X's vectors side by side, the last
// one loaded under the mask `last` when kTail (masked loads are slower on
// AMD's family 1Ah: full tiles use plain ones).
template <int NR, int NV, bool kTail = false>
inline void accumulate_rows(const float* w, const float* x, int64_t ldx, int64_t K, __m512 (&acc)[NR][NV],
                            __mmask16 last = 0xFFFF) {
  for (int64_t k = 0; k < K; ++k) {
    const float* xk = x + k * ldx;
    __m512 xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      xv[v] = kTail && v == NV - 1 ? _mm512_maskz_loadu_ps(last, xk + 16 * v) : _mm512_loadu_ps(xk + 16 * v);
    const float* wk = w + k * NR;
#pragma GCC unroll 8
    for (int i = 0; i < NR; ++i) {
      const __m512 wv = _mm512_set1_ps(wk[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(wv, xv[v], acc[i][v]);
    }
  }
}

SINGA_AVX512_END

}  // namespace fast
}  // namespace singa
#endif
#endif
