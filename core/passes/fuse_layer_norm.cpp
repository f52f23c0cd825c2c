// LayerNormalization written out as its arithmetic, the way exporters emit it
// before opset 17 (PyTorch's nn.LayerNorm at opset 13):
//
//   m = ReduceMean(x, axes=[-1])     d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2), [-1])  s = Sqrt(Add(v, eps))
//   y = Add(Mul(Div(d, s), gamma), beta)      (Mul/Add in either order)
//
// becomes one LayerNormalization node (axis -1, epsilon eps, Scale gamma, B
// beta): one pass over each row instead of nine nodes and their temporaries.
// The node is marked opset 17 (the version that defines the op), whatever the
// model imports, so the executor picks an opset-17 kernel; optimize() runs
// this only for a device that has one (any device, any plugin).
#include "graph_edit.hpp"
#include "passes.hpp"

#include <cmath>

namespace singa {
namespace passes {
namespace {

// A float scalar initializer at `slot` (one element, any rank).
bool scalar_at(const graph::Graph& g, const graph::Node& n, size_t slot, float& out) {
  const Tensor* t = float_constant(g, n, slot);
  if (!t || t->numel() != 1) return false;
  out = t->data<float>()[0];
  return true;
}

// ReduceMean over the last axis only, keeping it. Its axes is an attribute
// up to opset 17, the newest the ONNX library here (1.12) loads; from 18 it
// is an input, which this does not read (no match, the nodes stay).
bool mean_over_last_axis(const graph::Node& n, int64_t rank) {
  if (n.opset >= 18) return false;
  if (const auto* k = find_attr(n, "keepdims"); k && k->i() != 1) return false;
  const auto* a = find_attr(n, "axes");
  if (!a || a->ints_size() != 1) return false;
  const int64_t axis = a->ints(0);
  return axis == -1 || (rank > 0 && axis == rank - 1);
}

// The other input of a two-input node, given one of them.
int other_input(const graph::Node& n, int one) { return n.inputs[0] == one ? n.inputs[1] : n.inputs[0]; }

// A float initializer of shape [C] or [1, ..., 1, C].
bool per_channel(const graph::Graph& g, int value, int64_t C) {
  if (value < 0) return false;
  const graph::Value& v = g.values[size_t(value)];
  if (!v.is_initializer || v.constant.dtype() != SINGA_ONNX_FLOAT || v.constant.numel() != C) return false;
  const Shape& s = v.constant.shape();
  return !s.empty() && s.back() == C;
}

}  // namespace

int fuse_layer_norm(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& sub = g.nodes[i];
    if (dead[i] || !plain_op(sub, "Sub", 2) || sub.outputs.size() != 1) continue;
    const int x = sub.inputs[0], m = sub.inputs[1], d = sub.outputs[0];
    if (x < 0 || m < 0 || d < 0) continue;
    const graph::Value& xv = g.values[size_t(x)];
    if (xv.dtype != SINGA_ONNX_FLOAT || (xv.rank_known && xv.dims.empty())) continue;
    // Shapes after an exporter's Reshape arithmetic are often unknown here
    // (inferred before folding); then axes must say -1 and C comes from gamma.
    const int64_t rank = xv.rank_known ? int64_t(xv.dims.size()) : -1;
    const int64_t known_c = xv.rank_known ? xv.dims.back() : -1;
    // m = ReduceMean(x) over the last axis, read only by this Sub.
    const int mp = g.values[size_t(m)].producer;
    if (mp < 0 || !single_use(g, m)) continue;
    graph::Node& mean = g.nodes[size_t(mp)];
    if (!plain_op(mean, "ReduceMean") || mean.inputs.empty() || mean.inputs[0] != x ||
        !mean_over_last_axis(mean, rank))
      continue;
    // d is read by exactly Pow(d, 2) and Div(d, s).
    const auto& dc = g.values[size_t(d)].consumers;
    if (dc.size() != 2 || g.values[size_t(d)].is_output) continue;
    graph::Node* pow = nullptr;
    graph::Node* div = nullptr;
    for (int c : dc) {
      graph::Node& n = g.nodes[size_t(c)];
      if (!plain_onnx_node(n) || n.inputs.size() != 2 || n.inputs[0] != d) continue;
      if (n.proto.op_type() == "Pow") pow = &n;
      if (n.proto.op_type() == "Div") div = &n;
    }
    float two = 0, eps = 0;
    if (!pow || !div || !scalar_at(g, *pow, 1, two) || two != 2.f) continue;
    graph::Node* var = sole_reader(g, pow->outputs[0], "ReduceMean");
    if (!var || !mean_over_last_axis(*var, rank)) continue;
    graph::Node* add_eps = sole_reader(g, var->outputs[0], "Add", 2);
    if (!add_eps) continue;
    const size_t eps_slot = add_eps->inputs[0] == var->outputs[0] ? 1 : 0;
    if (!scalar_at(g, *add_eps, eps_slot, eps) || !(eps >= 0) || !std::isfinite(eps)) continue;
    graph::Node* sqrt = sole_reader(g, add_eps->outputs[0], "Sqrt");
    if (!sqrt || div->inputs[1] != sqrt->outputs[0] || !single_use(g, sqrt->outputs[0])) continue;
    // Scale, then an optional bias.
    graph::Node* mul = sole_reader(g, div->outputs[0], "Mul", 2);
    if (!mul) continue;
    const int gamma = other_input(*mul, div->outputs[0]);
    if (gamma < 0 || !g.values[size_t(gamma)].is_initializer) continue;
    const int64_t C = g.values[size_t(gamma)].constant.numel();
    // With x's last dim unknown, a gamma of one value could be broadcasting
    // a last dim of 1 (whose normalised value is 0) up to C: leave those.
    if (known_c > 0 ? C != known_c : C < 2) continue;
    if (!per_channel(g, gamma, C)) continue;
    graph::Node* last = mul;
    int beta = -1;
    if (graph::Node* add = sole_reader(g, mul->outputs[0], "Add", 2)) {
      const int b = other_input(*add, mul->outputs[0]);
      if (per_channel(g, b, C)) beta = b, last = add;
    }

    // The last node becomes the LayerNormalization; the rest go.
    ::onnx::NodeProto p;
    p.set_name(last->proto.name());
    p.set_op_type("LayerNormalization");
    for (int v : {x, gamma, beta})
      if (v >= 0) p.add_input(g.values[size_t(v)].name);
    p.add_output(g.values[size_t(last->outputs[0])].name);
    add_int_attr(p, "axis", -1);
    add_float_attr(p, "epsilon", eps);
    last->proto = p;
    last->inputs = beta >= 0 ? std::vector<int>{x, gamma, beta} : std::vector<int>{x, gamma};
    last->explicit_inputs = last->inputs.size();
    last->opset = kLayerNormOpset;
    last->label = "node '" + (p.name().empty() ? p.output(0) : p.name()) + "' (LayerNormalization, fused)";
    for (graph::Node* n : {&mean, &sub, pow, var, add_eps, sqrt, div, mul})
      if (n != last) dead[index_of(g, *n)] = true;
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
