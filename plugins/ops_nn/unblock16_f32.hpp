// unblock16_f32.hpp - oneDNN's 16-channel-blocked output (nChw16c) back into
// rows of an NCHW tensor, with 16x16 register transposes (unblock16_f32.cpp).
//
// A convolution split into bands of output rows (conv_dnnl.cpp) writes each
// band into NCHW rows that are not contiguous across channels; oneDNN's
// reorder to such a strided view takes its generic code ("jit:uni"), which
// ran 4-6x slower per element than its dense one: SqueezeNet's 64x28x55
// bands took 0.05-0.07 ms each at 2 threads, more than the band's
// convolution. AVX-512 only: call where fast::avx512() holds. Serial: each
// band's task calls it for its own rows.
#ifndef SINGA_OPS_NN_UNBLOCK16_F32_HPP
#define SINGA_OPS_NN_UNBLOCK16_F32_HPP

#include "fused_activation.hpp"

#include <cstdint>

namespace singa {
namespace nn {

// b: [N][M / 16][R][W][16] (M a multiple of 16). Writes channel c, row r,
// column w of image n to y[n * y_image + c * y_channel + r * W + w], as
// act(value + z at the same place) where z (laid out like y; a fused residual
// Add, plugins/ops_nn/passes/fuse_conv_add.cpp) is given, else act(value).
void unblock16_f32(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W, int64_t y_image,
                   int64_t y_channel, const float* z = nullptr, const ops::FusedActivation& act = {});

// The reverse for whole planes: x holds `blocks` groups of 16 planes of HW
// floats (NCHW), y gets each group as [HW][16] (nChw16c).
void block16_f32(const float* x, float* y, int64_t blocks, int64_t HW);

}  // namespace nn
}  // namespace singa
#endif
