// conv_thin_f32.hpp - direct float convolution of inputs with few channels
// (a network's stem on RGB images), optionally with a fused MaxPool.
//
// oneDNN's code for these ran at 50-73% of a core's FP32 peak (ResNet-18's
// 3 -> 64 7x7/2 conv 1.2 ms against ONNX Runtime's 0.92, MobileNetV2's 3 -> 32
// 3x3/2 0.16 ms at 1 thread) and wrote a whole band of 16-channel blocks
// before our pooling read it back. Here the kernel keeps 6 pixels x 64
// channels (or 12 x 32) of accumulators in registers: every tap costs one
// weight vector per 16 channels and one broadcast input value per pixel, and
// the few input channels mean each input value is loaded once per 64
// channels. A task takes a band of output rows a few rows at a time: conv
// rows into 16-channel blocks in L2, pooled there (pool_blocked16_f32.hpp)
// when a MaxPool is fused, then to NCHW with the activation
// (unblock16_f32.hpp). The activation after the pool is the same as before
// it for the monotonic ones this path takes. AVX-512 only.
#ifndef SINGA_OPS_NN_CONV_THIN_F32_HPP
#define SINGA_OPS_NN_CONV_THIN_F32_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include <vector>

namespace singa {
namespace nn {

// The convolution's input channels, output channels and window, with the
// weights packed for the kernel: groups of 64 (or 32) output channels, each
// [C][KH][KW][channels of the group].
struct ThinConvWeights {
  int64_t C = 0, M = 0, KH = 0, KW = 0, group_width = 0;
  std::vector<float> packed;
};

// True when conv_thin_f32 takes the convolution: AVX-512, 2-D, one group,
// at most 4 input channels, output channels a multiple of 32, equal strides
// of 1 or 2, no dilation, and (with a fused pool `pool`, else null) an
// activation that commutes with the maximum.
bool conv_thin_fits(const Geometry& g, int64_t C, int64_t M, int64_t group, const ops::FusedActivation& act,
                    const Geometry* pool);

// w [M, C, KH, KW].
ThinConvWeights conv_thin_weights(const float* w, int64_t M, int64_t C, int64_t KH, int64_t KW);

// x [N, C, H, W], bias [M] or null; y [N, M, OH, OW], or the pooled
// [N, M, PH, PW] where `pool` (the MaxPool's window over the conv output) is
// given: y = act(MaxPool(Conv(x) + bias)). `blocked_out`: y in 16-channel
// blocks (blocked16_f32.hpp) instead of NCHW.
void conv_thin_f32(const sdk::Context& ctx, const float* x, const ThinConvWeights& w, const float* bias, float* y,
                   int64_t N, const Geometry& g, const ops::FusedActivation& act, const Geometry* pool,
                   bool blocked_out = false);

// Output rows [r0, r1) of one image x [C, H, W], act(conv + bias),
// channels-last into y ([pixel][M], row r0's first pixel at y), on the
// calling thread: ExpandDepthwiseProject's stem stage
// (inverted_residual_f32.hpp), which filters the rows while they are in L2.
void conv_thin_rows_channels_last(const float* x, const ThinConvWeights& w, const float* bias, const Geometry& g,
                                  const ops::FusedActivation& act, int64_t r0, int64_t r1, float* y);

}  // namespace nn
}  // namespace singa
#endif
