// inverted_residual_f32.hpp - MobileNetV2's block body in one pass: a
// pointwise "expand" convolution (optional), a depthwise convolution, and a
// pointwise "project" convolution, each with its bias and fused activation
// (the ai.singa ExpandDepthwiseProject node of plugins/ops_nn/passes/fuse_inverted_residual.cpp).
//
// Run as three convolutions, the expanded tensor (6x the block's input) goes
// to memory and back twice, and the depthwise kernel transposes it into
// channel blocks and its result back (depthwise_blocked_f32.hpp): on
// MobileNetV2 those transposes took as long as the stencil itself. Here each
// task takes a band of output rows and keeps the band's expanded rows and
// depthwise result channels-last ([pixel][channel]) in a buffer that stays in
// L2: the expand product writes channels-last directly (oneDNN's sgemm with
// both operands transposed), the stencil reads and writes 16 channels per
// vector without any transpose, and the project product writes the band's
// result channels-last too, which goes to the NCHW output through 16x16
// register transposes with the bias and activation (at the 7x7 and 112x112
// planes oneDNN's sgemm ran [pixels, Me] x [Me, M] 20-60% faster than the
// NCHW form, or than reading the band transposed). Expanded rows that the next band
// also reads are kept, not recomputed.
#ifndef SINGA_OPS_NN_INVERTED_RESIDUAL_F32_HPP
#define SINGA_OPS_NN_INVERTED_RESIDUAL_F32_HPP

#include "conv_thin_f32.hpp"
#include "fused_activation.hpp"
#include "pointwise_direct_f32.hpp"  // PointwiseWeights
#include "spatial.hpp"

#include <vector>

namespace singa {
namespace nn {

// A squeeze-and-excitation between the depthwise and project stages
// (EfficientNet, MnasNet, MobileNetV3): gate = gate_act(W2 act(W1 mean + B1)
// + B2) per image and expanded channel, mean the depthwise result's spatial
// mean, and the project stage reads the depthwise result times its gate.
// W1 [R, Me], W2 [Me, R]; the biases may be null.
struct SqueezeExcite {
  int64_t R = 0;
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
  const float* w2t = nullptr;  // W2's transpose [R, Me] where prepared (faster), or null
  ops::FusedActivation act, gate_act;
};

struct InvertedResidual {
  int64_t N = 0, C = 0;  // images and input channels
  int64_t Me = 0;        // expanded (depthwise) channels; C when there is no expand stage
  int64_t M = 0;         // output channels (Me without a project stage)
  // false: no project stage, Y is the depthwise result [N, Me, OH, OW] (an
  // EfficientNet block's expand and depthwise stages, whose result a
  // squeeze-and-excitation reads before the project Conv).
  bool project = true;
  // Without a project stage: where not null, the depthwise result's mean
  // per image and channel, [N, Me], goes here too (a squeeze-and-excitation's
  // GlobalAveragePool, summed while the band is in cache).
  float* means = nullptr;
  // With a project stage: where not null, Y's mean per image and output
  // channel, [N, M], goes here (a ReduceMean over H and W after the block,
  // a net's head); y may then be null, and the block's result is summed a
  // band at a time without being stored.
  float* y_means = nullptr;
  // Where not null (with a project stage), the squeeze-and-excitation
  // between the depthwise and project stages: the whole image's depthwise
  // result is kept channels-last, its means give the gates, and the project
  // stage then runs over it (the gates scale its weights, or the result
  // where that is fewer multiplies), with no NCHW copy of the result between.
  const SqueezeExcite* se = nullptr;
  bool expand = true;    // false: the depthwise convolution reads X itself
  // The expand stage is a KxK convolution of an image of few channels (a
  // net's stem, MobileNetV2's 3 -> 32 3x3/2) over the window `stem`, not a
  // 1x1 one: X [N, C, stem.in] and the depthwise input is [N, Me, stem.out].
  bool stem_conv = false;
  Geometry stem;
  bool residual = false;  // Y += X, the block's skip connection (same shape: stride 1, M == C)
  // X [N, H, W, C] and Y [N, OH, OW, M] channels-last instead of NCHW: the
  // layout between two such blocks (plugins/ops_nn/passes/channels_last_layout.cpp),
  // which spares the project stage its transposes to NCHW and the expand
  // stage its reads across NCHW planes.
  bool x_channels_last = false, y_channels_last = false;
  Geometry dw;           // the depthwise window, one that depthwise_fits accepts
  ops::FusedActivation expand_act, dw_act, project_act;
  // Paths that options turn off to compare (expand_depthwise_project.cpp
  // reads them): the bands' register tiles for the expand and project stages
  // (cpu.band_tiles; off: oneDNN's sgemm), and the staged path's depthwise
  // stage in 16-channel blocks (cpu.depthwise_blocked).
  bool band_tiles = true, depthwise_blocked = true;
};

// The weights in the layouts of the band kernel, the expanded channels
// padded to whole vectors (Mp, zero weights): wdt [K*K][Mp] (tap-major),
// and for each product either its panels for the register tile
// (pointwise_channels_last_f32.hpp; w1p, and w2p over the Me true inputs of Mp-wide rows) or, with
// option cpu.band_tiles=0, its transpose for oneDNN's sgemm (w1t [C][Mp],
// w2t [Mp][M]). Made once per node where the weights are constants; empty
// where the band kernel does not run.
struct InvertedResidualWeights {
  std::vector<float> w1t, wdt, w2t;
  PointwiseWeights w1p, w2p;  // in place of w1t / w2t where the register tiles run
  ThinConvWeights w1thin;     // in place of w1p / w1t for a stem stage (conv_thin_f32.hpp)
  // True when these are the weights of a block of shape s.
  bool fit(const InvertedResidual& s) const;
};

// True when the band kernel runs (AVX-512, and for a stem stage a window
// conv_thin_fits takes; expanded channels that are not whole vectors run
// padded to them); otherwise the three
// stages run one after the other on whole tensors.
bool inverted_residual_bands(const InvertedResidual& s);

// w1 [Me, C] (null without expand; [Me, C, KH, KW] for a stem stage), wd [Me, K, K], w2 [M, Me] (null
// without a project stage).
InvertedResidualWeights inverted_residual_weights(const float* w1, const float* wd, const float* w2,
                                                  const InvertedResidual& s);

// x [N, C, H, W] (or [N, H, W, C] where x_channels_last); w1 [Me, C] (or a
// stem's [Me, C, KH, KW]) and b1 [Me] (null without expand; b1 may be null),
// wd [Me, K, K], bd [Me] or null, w2 [M, Me] and b2 [M] or null (both null
// without a project stage); y [N, M, OH,
// OW] (or [N, OH, OW, M] where y_channels_last), or null where only
// s.y_means is wanted.
// `prepared`: inverted_residual_weights of these weights, or null.
void inverted_residual_f32(const sdk::Context& ctx, const float* x, const float* w1, const float* b1, const float* wd,
                           const float* bd, const float* w2, const float* b2, float* y, const InvertedResidual& s,
                           const InvertedResidualWeights* prepared);

}  // namespace nn
}  // namespace singa
#endif
