// depthwise_blocked_f32.hpp - the AVX-512 depthwise convolution on NCHW
// activations, 16 channels at a time (depthwise_blocked_f32.cpp).
//
// conv_nchw_f32's per-plane kernel vectorizes along a row, so on the deep,
// small planes of MobileNet-style nets (14x14, 7x7) most of its time went to
// copying rows of 7-14 floats in and out of the padded scratch plane: the
// 576-channel 14x14 layer ran at ~20 GFLOP/s, 7x slower than ONNX Runtime's
// blocked kernel. Here each task takes 16 channels and a band of output rows,
// transposes the input rows it reads into a zero-padded [row][column][16]
// buffer (16x16 register transposes; the rows of a band are contiguous in
// each channel's plane), runs the stencil with one 16-lane FMA per tap and
// pixel (no masks, no bounds checks), and transposes the band's outputs back
// into the channels' planes.
#ifndef SINGA_OPS_NN_DEPTHWISE_BLOCKED_F32_HPP
#define SINGA_OPS_NN_DEPTHWISE_BLOCKED_F32_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

namespace singa {
namespace nn {

// Channels [0, C / 16 * 16) of the depthwise convolution that
// conv_nchw_f32.hpp's depthwise_fits accepts (3x3, 5x5 or 7x7, stride 1 or 2).
// x [N, C, H, W], w [C, 1, K, K], bias [C] or null, y [N, C, OH, OW]; the
// remaining C % 16 channels are the caller's. Only where fast::avx512().
void depthwise_blocked_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                           int64_t N, int64_t C, const Geometry& g, const ops::FusedActivation& act);

}  // namespace nn
}  // namespace singa
#endif
