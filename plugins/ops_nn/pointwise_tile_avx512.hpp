// pointwise_tile_avx512.hpp - the inner loop that the pointwise register
// tiles along the output channels share (pointwise_mean_f32.cpp,
// pointwise_channels_last_f32.cpp): NV vectors of 16 output channels by NP
// pixels, each input channel costing NV vector loads of weights and NP
// broadcasts of X. Only for callers that checked fast::avx512().
#ifndef SINGA_OPS_NN_POINTWISE_TILE_AVX512_HPP
#define SINGA_OPS_NN_POINTWISE_TILE_AVX512_HPP

#include <avx512_region.hpp>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

#include <cstdint>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

// acc[j][p] += sum_k w[k * ldw + j * ldv + lane] * x[k * ldx + p * ldp] for
// k in [0, K): W's vectors side by side (ldv 16) or in panels of their own,
// X as planes (ldp 1) or as channels-last rows (ldx 1). Unrolled by pragma
// so that the accumulators stay in registers (without it GCC 12 kept them
// in memory: see pointwise_direct_f32.cpp).
template <int NV, int NP>
inline void accumulate_tile(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t K,
                            __m512 (&acc)[NV][NP], int64_t ldp = 1, int64_t ldv = 16) {
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

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
#endif
