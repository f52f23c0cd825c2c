// activation_match.hpp - the graph-pass side of fused_activation.hpp: which
// standard activation nodes a pack's pass may fuse into the node before them
// (Relu, LeakyRelu, Clip with constant bounds, Sigmoid, Tanh, HardSigmoid,
// HardSwish, Swish, SiLU written as x * Sigmoid(x) and HardSwish written as
// x * HardSigmoid(x) or x * Clip(x + 3, 0, 6) / 6), and the attributes
// the fused op then carries. Header-only, shared by the packs that fuse
// activations (ops_nn's Convs, ops_math's Gemms).
#ifndef SINGA_PLUGINS_COMMON_ACTIVATION_MATCH_HPP
#define SINGA_PLUGINS_COMMON_ACTIVATION_MATCH_HPP

#include <singa/graph_pass.hpp>

#include "hard_swish_match.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace singa {
namespace ops {

// Appends to `out` the fused attributes for `act` when it is a standard
// activation that fused_activation.hpp computes; false (out untouched) otherwise.
inline bool activation_attrs(const sdk::Graph& g, const sdk::GraphNode& act, std::vector<sdk::Attr>& out) {
  const std::string d = act.domain(), op = act.op_type();
  if (!(d.empty() || d == "ai.onnx") || act.num_inputs() < 1 || act.num_outputs() != 1 || act.output_name(0).empty())
    return false;
  std::vector<sdk::Attr> add;
  if (op == "Relu") {
    if (act.num_inputs() != 1) return false;
  } else if (op == "LeakyRelu") {
    add.push_back(sdk::Attr("activation_alpha", act.attr_float("alpha", 0.01f)));
  } else if (op == "Sigmoid" || op == "Tanh" || op == "HardSwish") {
    if (act.num_inputs() != 1) return false;
  } else if (op == "HardSigmoid") {
    add.push_back(sdk::Attr("activation_alpha", act.attr_float("alpha", 0.2f)));
    add.push_back(sdk::Attr("activation_beta", act.attr_float("beta", 0.5f)));
  } else if (op == "Swish") {
    add.push_back(sdk::Attr("activation_alpha", act.attr_float("alpha", 1.f)));
  } else if (op == "Clip") {
    // From opset 11 the bounds are optional inputs that must be constant
    // scalars here; before, attributes.
    float lo = 0, hi = 0;
    if (!clip_bounds(g, act, lo, hi) || lo > hi) return false;
    add.push_back(sdk::Attr("activation_min", lo));
    add.push_back(sdk::Attr("activation_max", hi));
  } else {
    return false;
  }
  add.push_back(sdk::Attr("activation", op));
  out.insert(out.end(), add.begin(), add.end());
  return true;
}

// A standard node of type `op` with `ins` inputs and one named output.
inline bool standard_node(const sdk::GraphNode& n, const char* op, size_t ins) {
  const std::string d = n.domain();
  return n.valid() && (d.empty() || d == "ai.onnx") && n.op_type() == op && n.num_inputs() == ins &&
         n.num_outputs() == 1 && !n.output_name(0).empty();
}

// Whether `n` is a HardSigmoid with HardSwish's slope and offset (1/6, 1/2):
// y * HardSigmoid(y) is then HardSwish(y), the form torch exports
// hardswish in below opset 14.
inline bool hard_swish_gate(const sdk::GraphNode& n) {
  if (!standard_node(n, "HardSigmoid", 1)) return false;
  const float alpha = n.attr_float("alpha", 0.2f), beta = n.attr_float("beta", 0.5f);
  return std::abs(alpha - 1.f / 6.f) <= 1e-6f && std::abs(beta - 0.5f) <= 1e-6f;
}

// The activation applied to `y` (the output of the node a pass fuses into),
// when nothing else reads y: one node activation_attrs accepts, or a gated
// form as exporters write it, Mul(y, Sigmoid(y)) (SiLU) or
// Mul(y, HardSigmoid(y)) with alpha 1/6 and beta 1/2 (HardSwish) in either
// operand order, y read by just those two and the gate's result by just the
// Mul, or HardSwish through ReLU6 (hard_swish_match.hpp). On a match, `nodes` gets the activation's nodes (the last one writes
// the activated value), `attrs` its fused attributes (SiLU: Swish with
// alpha 1).
inline bool match_activation(const sdk::Graph& g, const std::string& y, std::vector<sdk::GraphNode>& nodes,
                             std::vector<sdk::Attr>& attrs) {
  if (y.empty() || g.is_output(y)) return false;
  const std::vector<sdk::GraphNode> readers = g.consumers(y);
  if (readers.size() == 1) {
    if (readers[0].input_name(0) != y || !activation_attrs(g, readers[0], attrs)) return false;
    nodes = {readers[0]};
    return true;
  }
  if (readers.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    const sdk::GraphNode& sig = readers[i];
    const sdk::GraphNode& mul = readers[1 - i];
    const bool silu = standard_node(sig, "Sigmoid", 1), hard_swish = !silu && hard_swish_gate(sig);
    if (!(silu || hard_swish) || !standard_node(mul, "Mul", 2) || sig.input_name(0) != y) continue;
    const std::string s = sig.output_name(0);
    const bool pair = (mul.input_name(0) == y && mul.input_name(1) == s) || (mul.input_name(0) == s && mul.input_name(1) == y);
    if (!pair || g.is_output(s) || g.consumers(s).size() != 1) continue;
    if (silu) attrs.push_back(sdk::Attr("activation_alpha", 1.f));
    attrs.push_back(sdk::Attr("activation", silu ? "Swish" : "HardSwish"));
    nodes = {sig, mul};
    return true;
  }
  if (match_relu6_hard_swish(g, y, readers, nodes)) {
    attrs.push_back(sdk::Attr("activation", "HardSwish"));
    return true;
  }
  return false;
}

}  // namespace ops
}  // namespace singa
#endif
