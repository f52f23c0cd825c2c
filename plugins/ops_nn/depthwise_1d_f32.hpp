// depthwise_1d_f32.hpp - float 1-D depthwise convolution (one input and one
// output channel per group, any kernel length, stride and dilation, any
// padding): the conformer / ConvNeXt-1d / wav2vec conv module's long
// kernels (15, 31) over a few hundred frames. Each channel's row is copied
// once into a zero-padded scratch row, so the tap loop has no bounds checks
// and, at stride 1, walks both rows with unit stride (the compiler
// vectorizes it over the outputs); bias and the fused activation are applied
// while the row is in cache. The generic grouped path ran one small GEMM per
// channel, three times slower than ORT.
#ifndef SINGA_OPS_NN_DEPTHWISE_1D_F32_HPP
#define SINGA_OPS_NN_DEPTHWISE_1D_F32_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include "../common/vec_math.hpp"  // SINGA_VEC_CLONES

#include <singa/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// True for a 1-D convolution with C == M == group and sane pads.
inline bool depthwise_1d_fits(const Geometry& g, int64_t C, int64_t M, int64_t group) {
  const int j = kMaxSpatial - 1;
  return g.rank == 1 && group == C && M == C && C > 0 && g.out[j] > 0 && g.k[j] >= 1 && g.s[j] >= 1 && g.d[j] >= 1 &&
         g.pb[j] >= 0 && g.pe[j] >= 0;
}

// One channel: y[o] = sum_k w[k] * xp[o * s + k * d] over the padded row xp.
SINGA_VEC_CLONES inline void depthwise_1d_row(const float* __restrict xp, const float* __restrict w, int64_t K,
                                              int64_t s, int64_t d, int64_t out, float* __restrict y) {
  std::fill(y, y + out, 0.f);
  if (s == 1) {
    for (int64_t k = 0; k < K; ++k) {
      const float c = w[k];
      const float* __restrict r = xp + k * d;
      for (int64_t o = 0; o < out; ++o) y[o] += c * r[o];
    }
    return;
  }
  for (int64_t k = 0; k < K; ++k) {
    const float c = w[k];
    const float* __restrict r = xp + k * d;
    for (int64_t o = 0; o < out; ++o) y[o] += c * r[o * s];
  }
}

// x [N, C, L], w [C, 1, K], bias [C] or null, y [N, C, out].
inline void conv_depthwise_1d_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                                  int64_t N, int64_t C, const Geometry& g, const ops::FusedActivation& act) {
  const int j = kMaxSpatial - 1;
  const int64_t L = g.in[j], K = g.k[j], s = g.s[j], d = g.d[j], pb = g.pb[j], out = g.out[j];
  // The padded row holds every position an output reads, pads included.
  const int64_t padded = std::max<int64_t>((out - 1) * s + (K - 1) * d + 1, pb + L);
  const int64_t work = std::max<int64_t>(1, out * K);
  ctx.parallel_for(N * C, std::max<int64_t>(1, 32768 / work), [&](int64_t r0, int64_t r1) {
    std::vector<float> xp(size_t(padded), 0.f);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % C;
      const float* src = x + r * L;
      std::fill(xp.begin(), xp.end(), 0.f);
      std::copy(src, src + std::min(L, padded - pb), xp.begin() + pb);
      float* yr = y + r * out;
      depthwise_1d_row(xp.data(), w + c * K, K, s, d, out, yr);
      act.apply_rows(yr, 1, out, out, bias ? bias + c : nullptr);
    }
  });
}

}  // namespace nn
}  // namespace singa
#endif
