// channels_last_f32.hpp - the conversions of the fused band kernels
// (inverted_residual_f32.hpp), which keep a band of
// activations channels-last ([pixel][channel]) in cache between oneDNN sgemm
// calls while the graph's tensors stay NCHW. AVX-512 only: callers check
// fast::avx512() first.
#ifndef SINGA_OPS_NN_CHANNELS_LAST_F32_HPP
#define SINGA_OPS_NN_CHANNELS_LAST_F32_HPP

#include "fused_activation.hpp"

#include <cstdint>

namespace singa {
namespace nn {

// e[p * ld + c] = act(e[p * ld + c] + b[c]) for `pixels` pixels of C
// channels, C a multiple of 16 (b null: no bias).
void bias_act_channels_last(float* e, int64_t pixels, int64_t C, int64_t ld, const float* b,
                            const ops::FusedActivation& act);

// e[p][c] = x[c * plane + p] for pixels [0, n) and channels [0, C), C a
// multiple of 16: NCHW planes taken channels-last.
void to_channels_last(const float* x, int64_t plane, int64_t n, int64_t C, float* e);

// y[c * ld + p] = act(yt[p * M + c] + b[c]) + add[c * ld + p] for pixels
// [0, P) and channels [0, M), any M: a channels-last result back to NCHW
// planes `ld` apart, through 16x16 register transposes (b null: no bias; add
// null: nothing added, else a residual in y's layout).
void store_nchw(const float* yt, int64_t P, int64_t M, const float* b, const ops::FusedActivation& act, float* y,
                int64_t ld, const float* add = nullptr);

// y[p * M + c] = act(yt[p * M + c] + b[c]) + add[p * M + c] for pixels
// [0, P) and channels [0, M), any M: a channels-last result finished in its
// own layout (yt may be y; b null: no bias; add null: nothing added).
void store_channels_last(const float* yt, int64_t P, int64_t M, const float* b, const ops::FusedActivation& act,
                         float* y, const float* add = nullptr);

}  // namespace nn
}  // namespace singa
#endif
