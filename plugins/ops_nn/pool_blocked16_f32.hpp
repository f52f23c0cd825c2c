// pool_blocked16_f32.hpp - max pooling of a convolution's output while it is
// still in oneDNN's 16-channel-blocked layout (nChw16c), for a Conv with a
// fused MaxPool (conv_dnnl.cpp): one vector holds a pixel's 16 channels, so a
// window is K x K plain loads and maxima, with no even/odd column split and
// no transpose of the unpooled rows; only the pooled rows go back to NCHW.
// AVX-512 only: call where fast::avx512() holds.
#ifndef SINGA_OPS_NN_POOL_BLOCKED16_F32_HPP
#define SINGA_OPS_NN_POOL_BLOCKED16_F32_HPP

#include "spatial.hpp"

#include <cstdint>

namespace singa {
namespace nn {

// b: [N][M / 16][R][W][16], rows [r0, r0 + R) of conv output planes pg.in
// (W == pg.in[2]); out: pooled rows [q0, q1) as [N][M / 16][q1 - q0][pg.out[2]][16].
// Each window's first tap inside the plane, then strictly greater taps in
// row-major order (MaxPool's rule, NaN included); a window wholly in the
// padding gives -inf. The rows the windows of [q0, q1) read must lie in b.
void max_pool_blocked16_f32(const float* b, int64_t N, int64_t M, int64_t R, int64_t r0, const Geometry& pg,
                            int64_t q0, int64_t q1, float* out);

}  // namespace nn
}  // namespace singa
#endif
