// GELU written out as its arithmetic, the way exporters emit it before Gelu
// became an ONNX op (opset 20; PyTorch's nn.GELU at opset 13):
//
//   e = Erf(Div(x, sqrt(2)))    (or Mul(x, 1/sqrt(2)))
//   y = Mul(Mul(x, Add(e, 1)), 0.5)        (operands of Add/Mul in either order)
//
// becomes one Gelu node (approximate "none"): one pass instead of five nodes
// and four temporaries. Like the LayerNorm fusion, the node is marked with the
// opset that defines the op (20) so that the executor picks such a kernel,
// and optimize() runs it only for a device that has one.
#include "graph_edit.hpp"
#include "passes.hpp"

#include <cmath>

namespace singa {
namespace passes {
namespace {

// The two-input node's other operand is a float scalar initializer near `want`.
bool other_is(const graph::Graph& g, const graph::Node& n, int one, float want) {
  const size_t slot = n.inputs[0] == one ? 1 : 0;
  if (n.inputs[slot == 1 ? 0 : 1] != one) return false;
  const Tensor* t = float_constant(g, n, slot);
  return t && t->numel() == 1 && std::fabs(t->data<float>()[0] - want) <= 1e-6f * std::fabs(want);
}

}  // namespace

int fuse_gelu(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& erf = g.nodes[i];
    if (dead[i] || !plain_op(erf, "Erf", 1) || erf.outputs.size() != 1 || erf.inputs[0] < 0) continue;
    // Its input: x / sqrt(2) or x * (1 / sqrt(2)), read only by the Erf.
    const int t = erf.inputs[0];
    const int tp = g.values[size_t(t)].producer;
    if (tp < 0 || !single_use(g, t)) continue;
    graph::Node& scale = g.nodes[size_t(tp)];
    if (!plain_onnx_node(scale) || scale.inputs.size() != 2) continue;
    // x is the operand that is not the constant (Div: the dividend).
    const std::string& sop = scale.proto.op_type();
    const float inv_sqrt2 = float(1 / std::sqrt(2.0));
    int x = -1;
    if (sop == "Div" && other_is(g, scale, scale.inputs[0], float(std::sqrt(2.0)))) x = scale.inputs[0];
    if (sop == "Mul")
      for (int c : {scale.inputs[0], scale.inputs[1]})
        if (x < 0 && other_is(g, scale, c, inv_sqrt2)) x = c;
    if (x < 0 || g.values[size_t(x)].dtype != SINGA_ONNX_FLOAT) continue;
    graph::Node* add = sole_reader(g, erf.outputs[0], "Add", 2);
    if (!add || !other_is(g, *add, erf.outputs[0], 1.f)) continue;
    graph::Node* mul = sole_reader(g, add->outputs[0], "Mul", 2);
    if (!mul || (mul->inputs[0] == x ? mul->inputs[1] : mul->inputs[0]) != add->outputs[0] ||
        (mul->inputs[0] != x && mul->inputs[1] != x))
      continue;
    graph::Node* half = sole_reader(g, mul->outputs[0], "Mul", 2);
    if (!half || !other_is(g, *half, mul->outputs[0], 0.5f)) continue;

    ::onnx::NodeProto p;
    p.set_name(half->proto.name());
    p.set_op_type("Gelu");
    p.add_input(g.values[size_t(x)].name);
    p.add_output(g.values[size_t(half->outputs[0])].name);
    half->proto = p;
    half->inputs = {x};
    half->explicit_inputs = 1;
    half->opset = kGeluOpset;
    half->label = "node '" + (p.name().empty() ? p.output(0) : p.name()) + "' (Gelu, fused)";
    for (graph::Node* n : {&scale, &erf, add, mul}) dead[index_of(g, *n)] = true;
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
