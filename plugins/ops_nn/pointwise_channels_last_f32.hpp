// pointwise_channels_last_f32.hpp - pointwise (1x1) products into
// channels-last rows with bias and the fused activation, over weights
// packed once: the expand and project stages of inverted_residual_f32's
// bands.
//
// MobileNetV2's blocks multiply bands of a few hundred pixels by weights of
// 16-960 channels. Through oneDNN's sgemm each band call packed both
// operands (X read across its NCHW planes, or the band's channels-last
// rows) and a second pass over the band added the bias and applied the
// activation. Here a tile of 6 pixels by 64 output channels (four vectors
// of packed weights, six values of X broadcast) stays in 24 registers over
// the input channels and is stored activated, once. AVX-512 only: callers
// check fast::avx512() first.
#ifndef SINGA_OPS_NN_POINTWISE_CHANNELS_LAST_F32_HPP
#define SINGA_OPS_NN_POINTWISE_CHANNELS_LAST_F32_HPP

#include "fused_activation.hpp"
#include "pointwise_direct_f32.hpp"  // PointwiseWeights

#include <cstdint>

namespace singa {
namespace nn {

// Output channels per panel of the packed weights: one vector, so that any
// range of whole vectors of channels runs alone (the bands' channel slices).
constexpr int64_t kChannelsLastPanel = 16;

// W [M, K] packed for channels_last_product: panels of 16 output channels,
// each [K][16] (the last one zero-padded).
inline PointwiseWeights channels_last_weights(const float* w, int64_t M, int64_t K) {
  return pointwise_panels(w, M, K, kChannelsLastPanel);
}

// y[p * ldy + m - m0] = act(sum_k x[k * ldx + p * ldp] W[m, k] + b[m]) +
// add[p * ldy + m - m0] for pixels [0, P) and channels [m0, m1) (m0 a
// multiple of 16; m1 too, or w.M). A last part vector of 8 channels after a
// single whole one runs as 256-bit FMAs (MobileNetV2's project stages of 24
// outputs: a vector and a half of FMAs per pixel, where 32 padded ones
// would waste a quarter of them; AMD's Zen 4 runs a 256-bit FMA at twice the
// rate of a 512-bit one); any other, as a masked vector (a kws-style net's
// 172 outputs, EfficientNet's 40 and 120). X read as NCHW planes
// (ldx the plane, ldp 1) or as channels-last rows (ldx 1, ldp the row's
// width); b null: no bias; add null: nothing added (else a residual laid out
// like y).
void channels_last_product(const float* x, int64_t ldx, int64_t ldp, int64_t P, const PointwiseWeights& w,
                           int64_t m0, int64_t m1, const float* b, const ops::FusedActivation& act, float* y,
                           int64_t ldy, const float* add = nullptr);

}  // namespace nn
}  // namespace singa
#endif
