// conv_nchw_f32.hpp - two float32 convolutions that run straight on NCHW
// activations, without oneDNN's reorders into its blocked layout and back:
//
//  - pointwise (1x1 kernel, no padding, one group): per image the
//    convolution is the product Y[M, H*W] = W[M, C] X[C, H*W], run on column
//    blocks through pointwise_direct_f32's register tile where the weights
//    were packed for it (AVX-512), else through oneDNN's sgemm with bias and
//    the fused activation applied to each block while it is still in cache (a
//    strided one first gathers the pixels it reads);
//  - depthwise (one input and one output channel per group, 3x3, 5x5 or 7x7
//    kernel, stride 1 or 2, no dilation, any padding): each channel's plane is
//    copied once into a zero-padded scratch plane (split into even and odd
//    columns for stride 2), so the stencil's inner loop has no bounds checks
//    and walks memory with unit stride (the compiler vectorizes it).
//
// Both are memory-bound in MobileNet-style networks, where the two reorders
// around each oneDNN convolution moved more bytes than the convolution itself
// (docs/performance.md).
#ifndef SINGA_OPS_NN_CONV_NCHW_F32_HPP
#define SINGA_OPS_NN_CONV_NCHW_F32_HPP

#include "fused_activation.hpp"
#include "pointwise_direct_f32.hpp"
#include "spatial.hpp"

namespace singa {
namespace nn {

// Adds bias[r] (null: none) to `rows` rows of `n` floats `ld` apart and applies
// the activation, in place: the epilogue of the pointwise products.
void bias_activation(const ops::FusedActivation& act, float* y, int64_t rows, int64_t n, int64_t ld,
                     const float* bias);

// y[i] = act(y[i] + z[i]) for n floats: a fused residual Add's epilogue
// (plugins/ops_nn/passes/fuse_conv_add.cpp) where no other pass over y takes it.
void sum_activation(const ops::FusedActivation& act, float* y, const float* z, int64_t n);

// True when conv_pointwise_f32 computes this convolution (2-D).
bool pointwise_fits(const Geometry& g, int64_t group);
// True for a pointwise conv that oneDNN's planned convolution runs faster:
// weights that outweigh the image's activations on planes of fewer than 64
// pixels (MobileNetV2's 320 -> 1280 head and ResNet-18's last shortcut, both
// 7x7). conv_pointwise_f32's sgemm repacks the weights on every call and its
// rows are only the plane wide; oneDNN reorders them once at prepare (the
// head 0.27 -> 0.23 ms at 1 thread, 0.14 -> 0.12 at 2, for 2.3 MiB of RSS).
bool pointwise_prefers_dnnl(const Geometry& g, int64_t group, int64_t C, int64_t M);
// x [N, C, H*W], w [M, C], bias [M] or null, y [N, M, H*W]. `packed`:
// pointwise_weights of w (or null), which takes the products through
// pointwise_direct_f32 instead of sgemm where AVX-512 is there. z (null:
// none): a summand of y's shape added before the activation, y =
// act(W X + bias + z), block by block while Y is in cache (a ConvAdd).
void conv_pointwise_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y, int64_t N,
                        int64_t C, int64_t M, int64_t HW, const ops::FusedActivation& act,
                        const PointwiseWeights* packed = nullptr, const float* z = nullptr);

// True when a window has a stride other than 1.
bool strided(const Geometry& g);

// x [N, C, input dims], y [N, M, output dims]: any strides; z as for
// conv_pointwise_f32.
void conv_pointwise_strided_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                                int64_t N, int64_t C, int64_t M, const Geometry& g, const ops::FusedActivation& act,
                                const PointwiseWeights* packed = nullptr, const float* z = nullptr);

// True when conv_depthwise_f32 computes this convolution (2-D, C == M == group).
bool depthwise_fits(const Geometry& g, int64_t C, int64_t M, int64_t group);
// x [N, C, H, W], w [C, 1, K, K], bias [C] or null, y [N, C, OH, OW].
// `blocked`: whole blocks of 16 channels through depthwise_blocked_f32 on
// AVX-512 (option cpu.depthwise_blocked; false: plane by plane, to compare).
void conv_depthwise_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y, int64_t N,
                        int64_t C, const Geometry& g, const ops::FusedActivation& act, bool blocked);

}  // namespace nn
}  // namespace singa
#endif
