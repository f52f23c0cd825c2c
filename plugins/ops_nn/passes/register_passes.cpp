// The order of the ops_nn passes: the squeeze-and-excitation gates first (a
// gate takes its Sigmoid before a Conv could), activations next (the later
// fusions carry them along), the multi-Conv blocks before the single-Conv fusions that
// would take their Convs, the sums after the blocks (which take their own
// skip Add), and the layouts last, once every Conv's final op is known.
#include "register_passes.hpp"
#include "fuse_attention.hpp"
#include "fuse_passes.hpp"
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
    int (*fn)(sdk::Graph&);
  };
  // The 8-bit passes run where the core still shows DequantizeLinear of
  // constant weights (SINGA_PASS_PRIORITY_QUANTIZED and above), before any
  // pass takes the float Conv.
  const Entry quantized[] = {
      {"cpu.qdq_conv", fuse_qdq_convs},
      {"cpu.qdq_elementwise", fuse_qdq_elementwise},
      {"cpu.qdq_layout", use_qdq_channels_last},
      {"cpu.dynq_conv", fuse_dynq_convs},
  };
  const Entry order[] = {
      {"cpu.squeeze_excites", fuse_squeeze_excites},
      {kConvActivations, fuse_conv_activations},
      {"cpu.inverted_residuals", fuse_inverted_residuals},
      {"cpu.conv_pools", fuse_conv_pools},
      {"cpu.conv_means", fuse_conv_means},
      {"cpu.conv_mean_gemms", fuse_conv_mean_gemms},
      {"cpu.conv_adds", fuse_conv_adds},
      {"cpu.blocked_layout", use_blocked_layout},
      {"cpu.channels_last", use_channels_last},
  };
  // The attention block, among ops_math's MatMul passes (fuse_attention.hpp).
  sdk::register_graph_pass(reg, kAttentionPass, "cpu", kAttentionPriority, fuse_attention);
  sdk::register_graph_pass(reg, kPoolBeforeConv, "cpu", kPoolBeforeConvPriority, pool_before_convs);
  sdk::register_graph_pass(reg, kBatchNormPools, "cpu", kBatchNormPoolsPriority, fuse_batch_norm_pools);
  sdk::register_graph_pass(reg, kBatchNormConvs, "cpu", kBatchNormConvsPriority, fuse_batch_norm_convs);
  // Higher priority runs first; the gaps leave room for other packs' passes.
  int32_t priority = SINGA_PASS_PRIORITY_QUANTIZED + 40;
  for (const Entry& e : quantized) {
    sdk::register_graph_pass(reg, e.name, "cpu", priority, e.fn);
    priority -= 10;
  }
  priority = 1000;
  for (const Entry& e : order) {
    sdk::register_graph_pass(reg, e.name, "cpu", priority, e.fn);
    priority -= 10;
  }
  register_bf16_conv(reg);  // Bf16Conv and cpu.bf16_convs (at 935: after the fusions, before the layouts)
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
