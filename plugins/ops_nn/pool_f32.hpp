// pool_f32.hpp - float pooling: MaxPool's 2-D path for other kernels, and the
// AVX-512 pieces of the inference and training paths (pool_f32.cpp; call
// those only where fast::avx512() holds).
#ifndef SINGA_OPS_NN_POOL_F32_HPP
#define SINGA_OPS_NN_POOL_F32_HPP

#include "spatial.hpp"

#include <cstdint>

namespace singa {
namespace nn {

// MaxPool's float 2-D path (pool.cpp, any CPU): `planes` planes of g.in into
// g.out, no dilation, no Indices. For kernels that pool their own output (a
// Conv with a fused MaxPool, when oneDNN does not run it).
void max_pool_2d_f32(const sdk::Context& ctx, const Geometry& g, int64_t planes, const float* x, float* y);

// 2x2 windows, stride 2, no padding, over one plane of width W (2 * OH rows
// and 2 * OW columns of it are read). Writes each window's maximum to y and,
// when idx is not null, base + its row-major position in the plane. Ties
// keep the first tap in row-major order and NaN never wins, as the generic
// MaxPool loop does. The plane must have fewer than 2^31 elements.
void max_pool_2x2_f32(const float* x, int64_t W, int64_t OH, int64_t OW, int64_t base, float* y, int64_t* idx);

// One output row of a 3x3, stride-2 max pool whose n windows lie inside the
// plane: rows[kh] is window row kh at the first window's column. Same
// first-tap / strictly-greater rule as the scalar loop.
void max_pool_row_3s2_f32(const float* const* rows, int64_t n, float* y);

// The same for 3x3 windows with stride 1 (rows[kh] holds n + 2 columns).
void max_pool_row_3s1_f32(const float* const* rows, int64_t n, float* y);

// Its gradient: dx (the whole plane, H x W) gets each window's dy at the tap
// idx names (idx as max_pool_2x2_f32 writes it, base included) and 0 at
// every other position. Returns false, with dx partly written, when some
// index is not a tap of its own window (not this pooling's Indices): the
// caller then runs its generic scatter.
bool max_pool_2x2_grad_f32(const float* dy, const int64_t* idx, int64_t base, int64_t H, int64_t W, int64_t OH,
                           int64_t OW, float* dx);

// max_pool_2x2_f32 and max_pool_2x2_grad_f32 for planes 8 floats wide (W =
// 8, OW = 4; H rows of which 2 * OH are pooled), four output rows per vector
// with plain loads and stores: the general row code's masked ones are slow
// on some CPUs (AMD family 1Ah) and its rows of 4 fill a quarter of a vector.
void max_pool_2x2_w8_f32(const float* x, int64_t OH, int64_t base, float* y, int64_t* idx);
bool max_pool_2x2_grad_w8_f32(const float* dy, const int64_t* idx, int64_t base, int64_t H, int64_t OH, float* dx);

}  // namespace nn
}  // namespace singa
#endif
