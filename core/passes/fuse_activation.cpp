// Conv/Gemm followed by Relu, LeakyRelu or Clip: the activation is applied by
// the Conv/Gemm kernel while the output is still in cache. The fused node
// keeps its op type and gains attributes that only singa's CPU kernels read
// (the ONNX checker has already run, so they do not trip it):
//   activation        "Relu" | "LeakyRelu" | "Clip"
//   activation_alpha  LeakyRelu's alpha
//   activation_min, activation_max   Clip's bounds
// This pass therefore runs only for graphs prepared on the CPU. It also takes
// ai.singa::ConvAdd (fuse_conv_add.cpp), whose activation follows the sum.
#include "conv_patterns.hpp"  // is_conv_add
#include "graph_edit.hpp"
#include "passes.hpp"

#include <limits>

namespace singa {
namespace passes {
namespace {

// Clip's bound from opset 11 on is an optional scalar input that must be a
// constant here; before that it is an attribute.
bool clip_bound(const graph::Graph& g, const graph::Node& clip, size_t slot, const char* attr, float dflt, float& out) {
  out = dflt;
  if (clip.opset < 11) {
    if (const auto* a = find_attr(clip, attr)) out = a->f();
    return true;
  }
  if (slot >= clip.inputs.size() || clip.inputs[slot] < 0) return true;
  const Tensor* t = float_constant(g, clip, slot);
  if (!t || t->numel() != 1) return false;
  out = t->data<float>()[0];
  return true;
}

}  // namespace

int fuse_activations(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& n = g.nodes[i];
    const std::string& op = n.proto.op_type();
    const bool conv_add = is_conv_add(n);
    if (!(conv_add || (plain_onnx_node(n) && (op == "Conv" || op == "Gemm"))) || n.outputs.size() != 1 ||
        n.outputs[0] < 0)
      continue;
    if (find_attr(n, "activation")) continue;
    const int y = n.outputs[0];
    if (!single_use(g, y) || g.values[size_t(y)].dtype != SINGA_ONNX_FLOAT) continue;
    const size_t j = size_t(g.values[size_t(y)].consumers[0]);
    graph::Node& act = g.nodes[j];
    const std::string& aop = act.proto.op_type();
    if (!plain_onnx_node(act) || act.inputs.empty() || act.inputs[0] != y || act.outputs.size() != 1 || act.outputs[0] < 0) continue;
    ::onnx::NodeProto& p = n.proto;
    if (aop == "Relu") {
      if (act.inputs.size() != 1) continue;
    } else if (aop == "LeakyRelu") {
      const auto* a = find_attr(act, "alpha");
      add_float_attr(p, "activation_alpha", a ? a->f() : 0.01f);
    } else if (aop == "Clip") {
      float lo = 0, hi = 0;
      if (!clip_bound(g, act, 1, "min", std::numeric_limits<float>::lowest(), lo) ||
          !clip_bound(g, act, 2, "max", std::numeric_limits<float>::max(), hi))
        continue;
      if (lo > hi) continue;
      add_float_attr(p, "activation_min", lo);
      add_float_attr(p, "activation_max", hi);
    } else {
      continue;
    }
    add_string_attr(p, "activation", aop);
    absorb_reader(g, i, j, op + "+" + aop, dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
