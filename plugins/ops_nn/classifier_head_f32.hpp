// classifier_head_f32.hpp - the Gemm of a ConvMeanGemm node
// (core/passes/fuse_conv_mean_gemm.cpp): a net's classifier over the means
// its last Conv computed, whose weights that Conv's kernel prefetched.
#ifndef SINGA_OPS_NN_CLASSIFIER_HEAD_F32_HPP
#define SINGA_OPS_NN_CLASSIFIER_HEAD_F32_HPP

#include <singa/kernel.hpp>

#include <cstdint>

namespace singa {
namespace nn {

// y [N, outputs] = means [N, M] x W^T + bias, W [outputs, M] where trans_b,
// else means x W with W [M, outputs]; bias a row of `outputs` values or null.
// Split over the pool's threads by output columns.
void classifier_head_f32(const sdk::Context& ctx, const float* means, int64_t N, int64_t M, const float* w,
                         bool trans_b, int64_t outputs, const float* bias, float* y);

}  // namespace nn
}  // namespace singa
#endif
