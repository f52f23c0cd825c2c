// A pointwise Conv (with its fused activation, if any) whose output only a
// GlobalAveragePool reads: a net's head (SqueezeNet's classifier Conv,
// MobileNetV2's last 1x1 layer). One FusedConv with global_average_pool = 1
// writes the [N, M, 1, 1] means itself: its kernel (pointwise_mean_f32.hpp)
// sums each tile of the product in registers, so the [N, M, H, W] product is
// never stored and read back. Float 2-D 1x1 Convs of stride 1 without padding,
// with constant weights.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {

int fuse_conv_means(Graph& g) {
  int fused = 0;
  for (GraphNode conv : g.nodes()) {
    if (!conv.alive() || !pointwise_conv(g, conv) || conv.has_attr("pool_kernel_shape") ||
        conv.has_attr("global_average_pool"))
      continue;
    const std::string y = conv.output_name(0);
    if (shape_of(g, y).size() != 4) continue;
    GraphNode pool = sole_reader(g, y);
    if (!pool.valid() || !standard_op(pool, "GlobalAveragePool") || pool.num_inputs() != 1 ||
        pool.num_outputs() != 1 || pool.output_name(0).empty())
      continue;
    NewNode f(kCpuDomain, "FusedConv");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = conv.input_names();
    f.outputs = {pool.output_name(0)};
    f.attrs_from = conv.raw();
    f.attrs.push_back(sdk::Attr("global_average_pool", 1));
    g.replace({conv, pool}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
