// The end of a squeeze-and-excitation block (EfficientNet, MobileNetV3):
//   GlobalAveragePool -> Conv 1x1 -> act -> Conv 1x1 -> Sigmoid | HardSigmoid
//   -> Mul with the block's input
// The Mul of a [N, C, H, W] tensor by a [N, C, 1, 1] gate (either operand
// order), with the Sigmoid or HardSigmoid that alone feeds the gate operand,
// becomes one ai.singa.cpu ChannelGate(X, G) carrying the activation
// (channel_gate.cpp): the N*C gates go through it, then each channel's plane
// is scaled once. The squeeze Convs themselves take the ordinary Conv +
// activation fusion (fuse_conv_activation.cpp). A gate with no activation
// node of its own (already fused into its Conv) gives a ChannelGate without one.
// Where the SE sits between a depthwise Conv and a 1x1 project Conv, the
// inverted-residual pass then takes the pool, both Convs and the ChannelGate
// into its ExpandDepthwiseProject node (fuse_inverted_residual.cpp).
#include "fuse_passes.hpp"
#include "conv_match.hpp"

#include <activation_match.hpp>

namespace singa {
namespace nn {
namespace passes {
namespace {

// x is [N, C, spatial...] and gate is [N or 1, C, 1, ...], C and the
// trailing ones known, the batch dims equal or the gate's 1.
bool channel_gate_shapes(const Graph& g, const std::string& x, const std::string& gate) {
  const auto xs = shape_of(g, x), gs = shape_of(g, gate);
  if (xs.size() < 3 || gs.size() != xs.size() || xs[1] <= 0 || gs[1] != xs[1]) return false;
  if (!(gs[0] == 1 || (gs[0] == xs[0] && gs[0] > 0))) return false;
  bool spatial = false;  // a gate over 1x1 planes is an ordinary Mul
  for (size_t d = 2; d < gs.size(); ++d) {
    if (gs[d] != 1) return false;
    spatial = spatial || xs[d] != 1;
  }
  return spatial;
}

}  // namespace

int fuse_squeeze_excites(Graph& g) {
  int fused = 0;
  for (GraphNode mul : g.nodes()) {
    if (!mul.alive() || !ops::standard_node(mul, "Mul", 2)) continue;
    const std::string y = mul.output_name(0);
    if (!float_value(g, y)) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string x = mul.input_name(size_t(1 - side)), gate = mul.input_name(size_t(side));
      if (x == gate || !float_value(g, x) || !float_value(g, gate) || !channel_gate_shapes(g, x, gate)) continue;
      NewNode f(kCpuDomain, "ChannelGate");
      f.name = mul.name();
      f.opset = 1;
      f.outputs = {y};
      std::vector<GraphNode> nodes{mul};
      // Sigmoid or HardSigmoid read by nothing else moves into the op.
      GraphNode act = g.producer(gate);
      const bool own = act.valid() && sole_reader(g, gate) == mul &&
                       (ops::standard_node(act, "Sigmoid", 1) || ops::standard_node(act, "HardSigmoid", 1));
      if (own && ops::activation_attrs(g, act, f.attrs)) {
        f.inputs = {x, act.input_name(0)};
        nodes.push_back(act);
      } else {
        f.inputs = {x, gate};
      }
      g.replace(nodes, {f});
      ++fused;
      break;
    }
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
