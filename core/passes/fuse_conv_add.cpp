// An Add of a Conv's output (that nothing else reads) and another tensor of
// its shape (ResNet's residual connections: conv2 + shortcut) becomes one
// ai.singa::ConvAdd node (plugins/ops_nn/conv.cpp) in the Add's place:
//
//   ConvAdd(X, W, B?, Z) -> Y = activation(Conv(X, W, B) + Z)
//
// with the Conv's attributes. oneDNN's parts add Z while they move their
// 16-channel blocks back to NCHW, so the sum costs no pass over memory of
// its own (an Add of ResNet-18's 64x56x56 tensors: 0.03 ms at 1 and 2
// threads). Runs after the inverted-residual fusion (whose blocks take their
// own skip Add) and before a second activation fusion, which moves the Relu
// after the Add onto the node. CPU only; float Convs without an activation
// of their own (it would come before the sum) or a fused MaxPool.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

namespace {

// A Conv whose output only the Add reads and that may take the sum.
bool fusable(graph::Graph& g, int v) {
  const int p = g.values[size_t(v)].producer;
  if (p < 0 || !single_use(g, v)) return false;
  const graph::Node& conv = g.nodes[size_t(p)];
  return plain_conv(g, conv) && !find_attr(conv, "activation") && !find_attr(conv, "pool_kernel_shape");
}

int64_t kernel_area(const graph::Graph& g, const graph::Node& conv) {
  const auto& w = conv_weights(g, conv)->shape();
  return w[2] * w[3];
}

}  // namespace

int fuse_conv_adds(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& add = g.nodes[i];
    if (!plain_two_value_add(add)) continue;
    if (!float_value(g, add.inputs[0]) || !float_value(g, add.inputs[1]) ||
        !same_4d_shape(g, add.inputs[0], add.inputs[1]) || !same_4d_shape(g, add.inputs[0], add.outputs[0]))
      continue;
    // Of two Convs, the one with the larger window takes the sum: oneDNN
    // runs it and adds Z for free, where a 1x1 Conv (ResNet's downsampling
    // shortcut) would need a pass of its own.
    auto area = [&](int k) { return kernel_area(g, g.nodes[size_t(g.values[size_t(add.inputs[size_t(k)])].producer)]); };
    int side = -1;
    for (int k = 0; k < 2; ++k)
      if (fusable(g, add.inputs[size_t(k)]) && (side < 0 || area(k) >= area(side))) side = k;
    if (side < 0) continue;
    const int y = add.inputs[size_t(side)], z = add.inputs[size_t(1 - side)];
    const size_t ci = size_t(g.values[size_t(y)].producer);
    // The fused node takes the Add's place, after both its inputs' producers.
    const std::string name = node_name(g, g.nodes[ci]);
    graph::Node& node = move_onto_add(g, ci, i, z);
    node.proto.set_op_type("ConvAdd");
    node.proto.set_domain(kFusedDomain);
    node.opset = 1;
    node.label = "node '" + name + "' (Conv+Add)";
    dead[ci] = true;
    ++fused;
  }
  if (fused) compact(g, dead);  // relinks producers and consumers
  return fused;
}

}  // namespace passes
}  // namespace singa
