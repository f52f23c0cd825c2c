// pointwise_mean_f32.hpp - a pointwise (1x1) convolution whose only reader is
// a GlobalAveragePool (plugins/ops_nn/passes/fuse_conv_mean.cpp): per image,
// y[m] = mean_p act(sum_k W[m, k] x[k, p] + bias[m]), without writing the
// [M, P] product.
//
// Those convs are a net's head: SqueezeNet's 512 -> 1000 classifier on a
// 13x13 plane, MobileNetV2's 320 -> 1280 layer on 7x7. Their weights outweigh
// the activations and their planes are a few vectors of pixels wide, so the
// kernel runs along the output channels instead: a tile of 64 channels (four
// vectors of packed weights) by 6 pixels (broadcast from X) keeps 24
// accumulators in registers, each input channel costing four vector loads and
// six broadcasts for 24 FMAs, and the activated tile is summed in registers.
// AVX-512 only: call where pointwise_direct_on() holds.
#ifndef SINGA_OPS_NN_POINTWISE_MEAN_F32_HPP
#define SINGA_OPS_NN_POINTWISE_MEAN_F32_HPP

#include "fused_activation.hpp"
#include "pointwise_direct_f32.hpp"  // PointwiseWeights

#include <cstdint>

namespace singa {
namespace nn {

// Output channels per panel of packed weights.
constexpr int64_t kMeanPanel = 64;

// W [M, C] in panels of 64 output channels, each [C][64] (the last panel
// zero-padded): the weight of output m, input k at
// packed[(m / 64) * C * 64 + k * 64 + m % 64].
inline PointwiseWeights pointwise_mean_weights(const float* w, int64_t M, int64_t C) {
  return pointwise_panels(w, M, C, kMeanPanel);
}

// Memory that a panel's tiles bring towards the cache as they go, spread
// over their multiply-adds: the next node's weights, which would otherwise
// come from DRAM once this node, bound by its arithmetic, is done (a
// classifier head's Gemm: plugins/ops_nn/passes/fuse_conv_mean_gemm.cpp).
struct PrefetchRange {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool to_l2 = false;  // into L2 only: more than L1 holds, read right after the panel
};

// Panel `panel` of one image: x is [C, P] (P > 0 pixels), bias all M values
// (null: none); writes y[m] for the panel's output channels m < M.
void pointwise_mean_f32(const PointwiseWeights& w, int64_t panel, const float* x, int64_t P, const float* bias,
                        const ops::FusedActivation& act, float* y, PrefetchRange prefetch = {});

}  // namespace nn
}  // namespace singa
#endif
