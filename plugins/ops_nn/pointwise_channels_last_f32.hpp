// pointwise_channels_last_f32.hpp - a pointwise (1x1) product from NCHW
// planes into channels-last rows, with bias and the fused activation: the
// expand stage of inverted_residual_f32's bands.
//
// MobileNetV2's expand layers read few channels (16-160) and write 6x as
// many. Through oneDNN's sgemm ('T', 'N') each band call packed X (read
// across its planes) and W, and a second pass over the band added the bias
// and applied the activation. Here a tile of 6 pixels by 64 output channels
// (four vectors of the transposed weights, six values of X broadcast) stays
// in 24 registers over the input channels and is stored activated, once.
// AVX-512 only: callers check fast::avx512() first.
#ifndef SINGA_OPS_NN_POINTWISE_CHANNELS_LAST_F32_HPP
#define SINGA_OPS_NN_POINTWISE_CHANNELS_LAST_F32_HPP

#include "fused_activation.hpp"
#include "pointwise_direct_f32.hpp"  // PointwiseWeights

#include <cstdint>

namespace singa {
namespace nn {

// e[p * ld + m] = act(sum_c x[c * plane + p] * wt[c * ld + m] + b[m]) for
// pixels [0, P) and channels [0, M), M a multiple of 16 (b null: no bias):
// a slice of M channels of rows ld wide.
void pointwise_to_channels_last(const float* x, int64_t plane, int64_t P, int64_t C, const float* wt, int64_t M,
                                int64_t ld, const float* b, const ops::FusedActivation& act, float* e);

// Output channels per panel of channels_last_product's packed weights.
constexpr int64_t kChannelsLastPanel = 64;

// W [M, K] packed for channels_last_product: panels of 64 output channels,
// each [K][64] (the last one zero-padded).
inline PointwiseWeights channels_last_weights(const float* w, int64_t M, int64_t K) {
  return pointwise_panels(w, M, K, kChannelsLastPanel);
}

// y[p * ldy + m] = sum_k d[p * ldd + k] W[m, k] for pixels [0, P) and the
// w.M channels (a multiple of 16), from channels-last rows d of w.C values:
// the project stage of inverted_residual_f32's bands, its weights packed
// once (oneDNN's sgemm packed both operands on every band call).
void channels_last_product(const float* d, int64_t P, int64_t ldd, const PointwiseWeights& w, float* y, int64_t ldy);

// pointwise_to_channels_last over weights packed by channels_last_weights
// (all w.M channels, rows ldy wide).
void planes_product(const float* x, int64_t plane, int64_t P, const PointwiseWeights& w, const float* b,
                    const ops::FusedActivation& act, float* y, int64_t ldy);

}  // namespace nn
}  // namespace singa
#endif
