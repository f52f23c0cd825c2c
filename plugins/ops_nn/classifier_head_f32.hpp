// classifier_head_f32.hpp - the Gemm of a ConvMeanGemm node
// (plugins/ops_nn/passes/fuse_conv_mean_gemm.cpp): a net's classifier over the means
// its last Conv computed.
//
// At batch 1 the Gemm is a matrix-vector product bound by reading its
// weights (MobileNetV2's 1280 -> 1000: 5 MB, mostly out of L3 in the net),
// so there it runs panel by panel inside the conv instead (ClassifierPanels):
// each panel of 64 means, once computed, multiplies the classifier's
// columns for those 64 inputs, which the conv's tiles brought into L2 while
// the arithmetic ran. Larger batches read the weights once through sgemm.
#ifndef SINGA_OPS_NN_CLASSIFIER_HEAD_F32_HPP
#define SINGA_OPS_NN_CLASSIFIER_HEAD_F32_HPP

#include <singa/kernel.hpp>

#include <line_aligned.hpp>

#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// y [N, outputs] = means [N, M] x W^T + bias, W [outputs, M] where trans_b,
// else means x W with W [M, outputs]; bias a row of `outputs` values or null.
// Split over the pool's threads by output columns.
void classifier_head_f32(const sdk::Context& ctx, const float* means, int64_t N, int64_t M, const float* w,
                         bool trans_b, int64_t outputs, const float* bias, float* y);

// Outputs per register group of classifier_panel_f32 (eight vectors).
constexpr int64_t kClassifierGroup = 128;

// W packed per panel of `panel` inputs: panel j is one contiguous block
// [groups][panel][kClassifierGroup] (outputs zero-padded to `padded`, a
// multiple of kClassifierGroup; inputs past M zero), so that a panel's
// product streams its block front to back.
struct ClassifierPanels {
  int64_t M = 0, outputs = 0, padded = 0, panel = 0;
  std::vector<float> packed;  // from its first line on (line_aligned.hpp); moved, never copied

  ClassifierPanels() = default;
  ClassifierPanels(ClassifierPanels&&) = default;
  ClassifierPanels(const ClassifierPanels&) = delete;
  ClassifierPanels& operator=(const ClassifierPanels&) = delete;

  int64_t panels() const { return panel > 0 ? (M + panel - 1) / panel : 0; }
  float* block(int64_t j) { return fast::line_start(packed.data()) + j * padded * panel; }
  const float* block(int64_t j) const { return fast::line_start(packed.data()) + j * padded * panel; }
  int64_t block_bytes() const { return padded * panel * int64_t(sizeof(float)); }
};

// W as classifier_head_f32 takes it (trans_b: [outputs, M], else [M, outputs]).
ClassifierPanels classifier_panels(const float* w, bool trans_b, int64_t M, int64_t outputs, int64_t panel);

// partial[o] (+)= sum_k W[o, j * panel + k] means[k] for the panel's `rows`
// inputs (k < rows) and all padded outputs o; adds to partial when
// `accumulate`, else overwrites it. AVX-512 only: call where
// pointwise_direct_on() holds.
void classifier_panel_f32(const ClassifierPanels& c, int64_t j, const float* means, int64_t rows, float* partial,
                          bool accumulate);

// y[o] = bias[o] + sum over the `parts` partials (each `padded` long) of
// partials[part * padded + o], for o < outputs; bias may be null.
void classifier_sum_f32(const ClassifierPanels& c, const float* partials, int64_t parts, const float* bias, float* y);

}  // namespace nn
}  // namespace singa
#endif
