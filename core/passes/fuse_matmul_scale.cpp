// MatMul followed by a Div or Mul by a constant float scalar that alone reads
// its product (the attention scores' Q K^T / sqrt(d)): the scale moves into
// the MatMul as an `alpha` attribute that singa's CPU MatMul passes to the
// GEMM, one pass over the scores fewer. CPU only (other devices' MatMul
// kernels do not read it), float only, and not on a MatMul that already took
// a bias row (fuse_matmul_add.cpp): (A B + c) / s is not alpha A B + c.
#include "graph_edit.hpp"
#include "passes.hpp"

#include <cmath>

namespace singa {
namespace passes {

int fuse_matmul_scales(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& mm = g.nodes[i];
    if (dead[i] || !plain_op(mm, "MatMul", 2) || mm.outputs.size() != 1 || mm.outputs[0] < 0 || find_attr(mm, "alpha"))
      continue;
    const int y = mm.outputs[0];
    if (g.values[size_t(y)].dtype != SINGA_ONNX_FLOAT) continue;
    graph::Node* scale = sole_reader(g, y, "Div", 2);
    if (!scale) scale = sole_reader(g, y, "Mul", 2);
    if (!scale || scale->outputs.size() != 1 || scale->outputs[0] < 0) continue;
    const bool div = scale->proto.op_type() == "Div";
    // The product is the dividend of a Div, either operand of a Mul.
    const size_t slot = scale->inputs[0] == y ? 1 : 0;
    if (scale->inputs[slot == 1 ? 0 : 1] != y || scale->inputs[slot] == y || (div && slot != 1)) continue;
    const Tensor* c = float_constant(g, *scale, slot);
    if (!c || c->numel() != 1) continue;
    const float v = c->data<float>()[0];
    const float alpha = div ? 1.f / v : v;
    if (!std::isfinite(alpha) || v == 0.f) continue;
    // The scalar must not broadcast the product to a higher rank.
    const auto& out = g.values[size_t(scale->outputs[0])];
    const auto& prod = g.values[size_t(y)];
    if (!out.rank_known || !prod.rank_known || out.dims.size() != prod.dims.size()) continue;
    add_float_attr(mm.proto, "alpha", alpha);
    absorb_reader(g, i, index_of(g, *scale), "MatMul+" + scale->proto.op_type(), dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
