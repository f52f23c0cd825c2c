// blocked16_f32.hpp - moving float activations kept in oneDNN's 16-channel
// blocked layout (nChw16c) between Convs (plugins/ops_nn/passes/blocked_layout.cpp).
//
// A tensor of logical shape [N, C, H, W] (C a multiple of 16) in blocks is
// [N][C / 16][H][W][16]: the same number of floats as NCHW, so the memory
// plan sizes it alike. A band of rows [r0, r1) of one block is contiguous
// there, so a Conv's bands move in and out with plain copies instead of the
// 16x16 transposes that NCHW needs (unblock16_f32.hpp), and a whole tensor is
// oneDNN's own layout, which it reads and writes in place.
#ifndef SINGA_OPS_NN_BLOCKED16_F32_HPP
#define SINGA_OPS_NN_BLOCKED16_F32_HPP

#include "fused_activation.hpp"

#include <cstdint>

namespace singa {
namespace nn {

// Rows [r0, r0 + R) of a blocked [N, C, H, W] tensor x into the dense
// blocked band b: [N][C / 16][R][W][16].
void load_blocked16_rows(const float* x, float* b, int64_t N, int64_t C, int64_t H, int64_t W, int64_t r0,
                         int64_t R);

// The dense blocked band b ([N][M / 16][R][W][16]) into rows [r0, r0 + R) of
// channels [m0, m0 + M) of a blocked [N, YM, YH, W] tensor y, as act(value +
// z at the same place) where z (laid out like y; a fused residual Add) is
// given, else act(value).
void store_blocked16_rows(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W, int64_t YM,
                          int64_t YH, int64_t m0, int64_t r0, const float* z, const ops::FusedActivation& act);

// Rows [r0, r0 + R) of all M channels of an [N, M, H, W] tensor y from the
// dense blocked band b ([N][M / 16][R][W][16]), as act(value): kept in
// blocks where `blocked` (store_blocked16_rows), else into NCHW
// (unblock16_f32; AVX-512 only). The band kernels' store of a conv or pool
// band, whichever layout their node writes.
void store_band16(const float* b, float* y, bool blocked, int64_t N, int64_t M, int64_t R, int64_t W, int64_t H,
                  int64_t r0, const ops::FusedActivation& act);

// Whole tensors, for the paths that need NCHW (a Conv that oneDNN does not
// run after all): [N, C, HW] <-> [N][C / 16][HW][16]. Serial.
void nchw_to_blocked16(const float* x, float* y, int64_t N, int64_t C, int64_t HW);
void blocked16_to_nchw(const float* x, float* y, int64_t N, int64_t C, int64_t HW);

}  // namespace nn
}  // namespace singa
#endif
