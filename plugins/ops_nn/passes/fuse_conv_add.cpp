// An Add of a Conv's output (that nothing else reads) and another tensor of
// its shape (ResNet's residual connections: conv2 + shortcut) becomes one
// ai.singa.cpu ConvAdd node in the Add's place:
//
//   ConvAdd(X, W, B?, Z) -> Y = activation(Conv(X, W, B) + Z)
//
// with the Conv's attributes. oneDNN's parts add Z while they move their
// 16-channel blocks back to NCHW, so the sum costs no pass over memory of its
// own. Runs after the inverted-residual fusion (whose blocks take their own
// skip Add); the activation after the Add (ResNet's Relu) then moves onto the
// node. Float Convs without an activation of their own (it would come before
// the sum) or a fused MaxPool or mean.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {
namespace {

// The Conv writing `v`, when only the Add reads it and it may take the sum.
GraphNode fusable(const Graph& g, const std::string& v) {
  GraphNode conv = g.producer(v);
  if (!conv.valid() || !sole_reader(g, v).valid() || !plain_conv(g, conv) || has_activation(conv) ||
      conv.has_attr("pool_kernel_shape") || conv.has_attr("global_average_pool"))
    return GraphNode(nullptr, g.raw());
  return conv;
}

}  // namespace

int fuse_conv_adds(Graph& g) {
  int fused = 0;
  for (GraphNode add : g.nodes()) {
    if (!add.alive() || !standard_op(add, "Add") || add.num_inputs() != 2 || add.num_outputs() != 1) continue;
    const std::string a = add.input_name(0), b = add.input_name(1), y = add.output_name(0);
    if (a.empty() || b.empty() || a == b || y.empty() || !float_value(g, a) || !float_value(g, b) ||
        !same_4d_shape(g, a, b) || !same_4d_shape(g, a, y))
      continue;
    // Of two Convs, the one with the larger window takes the sum: oneDNN runs
    // it and adds Z for free, where a 1x1 Conv (ResNet's downsampling
    // shortcut) would need a pass of its own.
    GraphNode convs[2] = {fusable(g, a), fusable(g, b)};
    auto area = [&](int k) {
      const auto w = conv_weight_shape(g, convs[k]);
      return w[2] * w[3];
    };
    int side = -1;
    for (int k = 0; k < 2; ++k)
      if (convs[k].valid() && (side < 0 || area(k) >= area(side))) side = k;
    if (side < 0) continue;
    GraphNode conv = convs[side];
    NewNode f(kCpuDomain, "ConvAdd");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = conv.input_names();
    f.inputs.resize(3);
    f.inputs.push_back(side == 0 ? b : a);
    f.outputs = {y};
    f.attrs_from = conv.raw();
    g.replace({conv, add}, {f});
    ++fused;
  }
  // The activation after each sum goes into the ConvAdd (unless activation
  // fusion is switched off, as the unfused reference runs it).
  // Counted here, as this pass's rewrites.
  if (fused && g.option((std::string("pass.") + kConvActivations).c_str()) != "0") fused += fuse_conv_activations(g);
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
