// Conv (with its fused activation, if any) followed by a MaxPool that alone
// reads its output: one FusedConv whose pool_kernel_shape, pool_strides,
// pool_pads and pool_ceil_mode hold the MaxPool's window, and which writes
// the pooled result. Where oneDNN runs the convolution, each part pools its
// rows while they are still in 16-channel blocks and only the pooled rows go
// back to NCHW (conv_dnnl.cpp); elsewhere the kernel convolves into a buffer
// and runs MaxPool's own 2-D loop. Float 2-D Convs and MaxPools without
// Indices, dilation or auto_pad.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {
namespace {

bool plain_max_pool(const GraphNode& n) {
  if (!standard_op(n, "MaxPool") || n.num_inputs() != 1 || n.num_outputs() != 1 || n.output_name(0).empty())
    return false;
  if (n.attr_ints("kernel_shape").size() != 2) return false;
  const std::string auto_pad = n.attr_string("auto_pad", "");
  if (!auto_pad.empty() && auto_pad != "NOTSET") return false;
  if (n.attr_int("storage_order", 0) != 0) return false;
  return ints_all(n, "dilations", 1, 2) && (!n.has_attr("pads") || n.attr_ints("pads").size() == 4) &&
         (!n.has_attr("strides") || n.attr_ints("strides").size() == 2);
}

}  // namespace

int fuse_conv_pools(Graph& g) {
  int fused = 0;
  for (GraphNode conv : g.nodes()) {
    if (!conv.alive() || !plain_conv(g, conv) || conv.has_attr("pool_kernel_shape")) continue;
    const std::string y = conv.output_name(0);
    // Channels in 16s only: oneDNN pools nothing else, and the fallback's own convolution is slower than the two apart.
    if (shape_of(g, y).size() != 4 || shape_of(g, y)[1] % 16 != 0) continue;
    GraphNode pool = sole_reader(g, y);
    if (!pool.valid() || !plain_max_pool(pool)) continue;
    NewNode f(kCpuDomain, "FusedConv");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = conv.input_names();
    f.outputs = {pool.output_name(0)};
    f.attrs_from = conv.raw();
    f.attrs.push_back(sdk::Attr("pool_kernel_shape", pool.attr_ints("kernel_shape")));
    if (pool.has_attr("strides")) f.attrs.push_back(sdk::Attr("pool_strides", pool.attr_ints("strides")));
    if (pool.has_attr("pads")) f.attrs.push_back(sdk::Attr("pool_pads", pool.attr_ints("pads")));
    if (pool.has_attr("ceil_mode")) f.attrs.push_back(sdk::Attr("pool_ceil_mode", pool.attr_int("ceil_mode", 0)));
    g.replace({conv, pool}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
