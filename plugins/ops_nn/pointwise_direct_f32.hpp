// pointwise_direct_f32.hpp - the product of a pointwise (1x1) convolution on
// NCHW activations, Y[M, P] = act(W[M, C] X[C, P] + bias), by a register-tiled
// AVX-512 kernel over weights packed once at prepare time.
//
// SqueezeNet's and ResNet's 1x1 layers have few input channels (16-512) and
// planes of 169-3025 pixels. oneDNN's sgemm packs both operands on every call
// and leaves the bias and activation to a second pass over Y; on the column
// blocks each thread takes (128 x 192 x 32 for SqueezeNet's expand layers) that
// overhead was as large as the arithmetic, and the expand layers ran at
// about 110 GFLOP/s on two cores against ORT's 280. Here a tile of 8 output
// channels x 48 pixels stays in 24 registers: each input channel costs three
// vector loads of X and eight broadcasts of packed weights for 24 FMAs, so
// the loop runs at the FMA units' rate from L1/L2 without packing X, and the
// bias and activation are applied before the single store. AVX-512 only:
// call where fast::avx512() holds.
#ifndef SINGA_OPS_NN_POINTWISE_DIRECT_F32_HPP
#define SINGA_OPS_NN_POINTWISE_DIRECT_F32_HPP

#include "fused_activation.hpp"

#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// Output channels per panel of packed weights, and pixels per tile: a
// tile's accumulators fill 24 of the 32 vector registers.
constexpr int64_t kPointwisePanel = 8;
constexpr int64_t kPointwiseTileCols = 48;

// W [M, C] in panels of kPointwisePanel output channels, each [C][8] (the
// last panel zero-padded): the weight of output m, input k at
// packed[(m / 8) * C * 8 + k * 8 + m % 8].
struct PointwiseWeights {
  int64_t M = 0, C = 0;
  std::vector<float> packed;
};

PointwiseWeights pointwise_weights(const float* w, int64_t M, int64_t C);

// The same layout with panels of `panel` output channels (pointwise_mean_f32.hpp).
PointwiseWeights pointwise_panels(const float* w, int64_t M, int64_t C, int64_t panel);

// True where the kernel can run: AVX-512 is there. Conv packs weights for
// it only then, and not under option cpu.pointwise_direct=0 (to compare
// with sgemm); unpacked weights take sgemm.
bool pointwise_direct_on();

// Output channels [m0, m0 + mn) (m0 a multiple of kPointwisePanel) and pixels
// [0, cols) of one image: y[m * ldy + p] = act(sum_k W[m, k] x[k * ldx + p] +
// bias[m]) with y and x already offset to the first row and pixel, and y
// pointing at row m0. bias: all M values (null: none). z (null: none): a
// summand laid out like y (rows ldy apart, offset like y), added before the
// activation while the tile is in registers (a ConvAdd's residual: a
// separate pass over Y and Z cost ResNet-50 almost as much as the product).
void pointwise_direct_f32(const PointwiseWeights& w, int64_t m0, int64_t mn, const float* x, int64_t ldx,
                          const float* bias, float* y, int64_t ldy, int64_t cols, const ops::FusedActivation& act,
                          const float* z = nullptr);

}  // namespace nn
}  // namespace singa
#endif
