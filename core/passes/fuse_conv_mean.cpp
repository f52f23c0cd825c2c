// A pointwise Conv (with its fused activation, if any) whose output only a
// GlobalAveragePool reads: a net's head (SqueezeNet's classifier Conv,
// MobileNetV2's last 1x1 layer). The Conv gets global_average_pool = 1, an
// attribute only singa's CPU Conv kernel reads, and writes the [N, M, 1, 1]
// means itself: its kernel (plugins/ops_nn/pointwise_mean_f32.hpp) sums each
// tile of the product in registers, so the [N, M, H, W] product is never
// stored and read back. Runs after the activation and MaxPool fusions; CPU
// only; float 2-D 1x1 Convs of stride 1 without padding, with constant weights.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

int fuse_conv_means(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& conv = g.nodes[i];
    if (dead[i] || !pointwise_conv(g, conv) || find_attr(conv, "pool_kernel_shape") ||
        find_attr(conv, "global_average_pool"))
      continue;
    const auto& out = g.values[size_t(conv.outputs[0])];
    if (!out.rank_known || out.dims.size() != 4) continue;
    graph::Node* pool = sole_reader(g, conv.outputs[0], "GlobalAveragePool", 1);
    if (!pool || pool->outputs.size() != 1 || pool->outputs[0] < 0) continue;
    add_int_attr(conv.proto, "global_average_pool", 1);
    absorb_reader(g, i, index_of(g, *pool), "Conv+GlobalAveragePool", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
