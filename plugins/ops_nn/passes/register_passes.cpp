// The order of the ops_nn passes: the squeeze-and-excitation gates first (a
// gate takes its Sigmoid before a Conv could), activations next (the later
// fusions carry them along), the multi-Conv blocks before the single-Conv fusions that
// would take their Convs, the sums after the blocks (which take their own
// skip Add), and the layouts last, once every Conv's final op is known.
#include "register_passes.hpp"
#include "fuse_attention.hpp"
#include "fuse_passes.hpp"
#include "fuse_qdq_softmax.hpp"
#include "../conv_bf16.hpp"
#include "fuse_batch_norm_conv.hpp"
#include "fuse_batch_norm_pool.hpp"
#include "pool_before_conv.hpp"

namespace singa {
namespace nn {
namespace passes {

void register_graph_passes(sdk::Registrar& reg) {
  struct Entry {
    const char* name;
    int32_t priority;  // higher runs first; the gaps leave room for other packs' passes
    int (*fn)(sdk::Graph&);
  };
  // The 8-bit passes run where the core still shows DequantizeLinear of
  // constant weights (SINGA_PASS_PRIORITY_QUANTIZED and above), before any
  // pass takes the float Conv.
  constexpr int32_t q = SINGA_PASS_PRIORITY_QUANTIZED;
  const Entry entries[] = {
      {kAttentionPass, kAttentionPriority, fuse_attention},  // among ops_math's MatMul passes
      {"cpu.qdq_conv", q + 40, fuse_qdq_convs},
      {kQdqSoftmaxPass, q + 35, fuse_qdq_softmaxes},  // before qdq_elementwise
      {"cpu.qdq_elementwise", q + 30, fuse_qdq_elementwise},
      {"cpu.qdq_layout", q + 20, use_qdq_channels_last},
      {"cpu.dynq_conv", q + 10, fuse_dynq_convs},
      {"cpu.glus", 1010, fuse_glus},
      {kPoolBeforeConv, kPoolBeforeConvPriority, pool_before_convs},  // 1005: before BatchNorm+pool takes the pool
      {"cpu.squeeze_excites", 1000, fuse_squeeze_excites},
      {kConvActivations, 990, fuse_conv_activations},
      {kBatchNormPools, kBatchNormPoolsPriority, fuse_batch_norm_pools},  // 985: with its activation fused
      {"cpu.inverted_residuals", 980, fuse_inverted_residuals},
      {"cpu.conv_pools", 970, fuse_conv_pools},
      {"cpu.conv_reduce_means", 965, fuse_conv_reduce_means},
      {"cpu.conv_means", 960, fuse_conv_means},
      {"cpu.conv_mean_gemms", 950, fuse_conv_mean_gemms},
      {"cpu.conv_adds", 940, fuse_conv_adds},
      // cpu.bf16_convs at 935 (register_bf16_conv): after the fusions, before the layouts.
      {"cpu.blocked_layout", 930, use_blocked_layout},
      {"cpu.channels_last", 920, use_channels_last},
      {kBatchNormConvs, kBatchNormConvsPriority, fuse_batch_norm_convs},  // 915: on values left plain
  };
  for (const Entry& e : entries) sdk::register_graph_pass(reg, e.name, "cpu", e.priority, e.fn);
  register_bf16_conv(reg);  // the Bf16Conv kernel and cpu.bf16_convs
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
