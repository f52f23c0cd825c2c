#include "grad_check.hpp"

#include "grad_builder.hpp"

#include <singa/error.hpp>

#include <set>
#include <string>

namespace singa {
namespace autograd {

static bool maybe_real(int32_t t) {
  return t == 0 || t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_FLOAT16 ||
         t == SINGA_ONNX_BFLOAT16;
}

// Ops whose outputs are never floating point: no gradient passes them even
// where the graph does not know an output's type (an op newer than the ONNX
// library's shape inference, e.g. Shape-23).
static bool integer_outputs(const graph::Node& n) {
  static const std::set<std::string> ops = {"Shape", "Size", "NonZero", "ArgMax", "ArgMin", "Equal", "Greater",
                                            "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor", "Not",
                                            "IsNaN", "IsInf"};
  return (n.proto.domain().empty() || n.proto.domain() == "ai.onnx") && ops.count(n.proto.op_type());
}

void check_gradients(const graph::Graph& g, size_t stop, const std::vector<Variable>& env) {
  if (!recording()) return;
  std::vector<bool> carries(g.values.size(), false);
  for (size_t v = 0; v < g.values.size() && v < env.size(); ++v) carries[v] = env[v].defined() && env[v].requires_grad();
  std::string missing;
  size_t count = 0;
  for (size_t i = 0; i < stop && i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    bool in = false;
    for (int v : n.inputs) in = in || (v >= 0 && carries[size_t(v)]);
    if (!in || integer_outputs(n)) continue;
    bool out = false;
    for (int v : n.outputs)
      if (v >= 0 && maybe_real(g.values[size_t(v)].dtype)) out = carries[size_t(v)] = true;
    if (!out || has_gradient_hook(n.proto.domain(), n.proto.op_type(), n.opset)) continue;
    if (count++ < 8) missing += "\n  " + n.label + ": op '" + n.proto.op_type() + "' (opset " + std::to_string(n.opset) + ")";
  }
  if (count)
    throw Error(SINGA_UNIMPLEMENTED, g.source + ": " + std::to_string(count) +
                                         " node(s) that the gradient must pass through have no gradient:" + missing +
                                         (count > 8 ? "\n  ..." : "") +
                                         "\nFreeze the parameters before them (set_trainable(false)) or cut the "
                                         "model before them (last_layers).");
}

}  // namespace autograd
}  // namespace singa
