// What a transformer does right after a projection goes into the projection's
// MatMul, on the CPU:
//
//   MatMul(A, B[, bias]) -> Gelu           the MatMul gains activation = "Gelu"
//   MatMul(A, B[, bias]) [-> Gelu] -> Add(., Z), Z of the product's shape
//                                          the MatMul gains Z as a fourth input
//
// so that Y = gelu(A B + bias) + Z comes out of one node. B must be a 2-D
// float constant (the projections' weights), the case singa's CPU MatMul runs
// through oneDNN's matmul primitive, which adds Z as a post-op while the
// tile is in registers; the GELU each part applies to its rows right after
// its product (plugins/ops_math/matmul_dnnl.cpp says why). The sgemm path
// applies both in one pass after the product. A BERT encoder's feed-forward
// GELU (128 x 1024) and its two residual Adds per layer (128 x 256) were
// separate passes over memory, 0.013 and 0.005 ms each at 2 threads.
//
// Runs after MatMul+Add (the bias row is the third input by then) and the
// GELU fusion. Only Gelu with approximate "none" (the GELU fusion's, and
// opset 20's default); the residual needs static shapes equal to the
// product's (no broadcast), and its node takes the Add's place, after Z's
// producer. No Gelu after a residual: the activation comes first in the node.
#include "conv_patterns.hpp"  // float_value
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

namespace {

// A MatMul that may take an epilogue: a float product with a 2-D constant B,
// no scale and no transposed B (the primitive's case), its output read only
// by the next node.
bool fusable(const graph::Graph& g, int y) {
  const int p = y >= 0 ? g.values[size_t(y)].producer : -1;
  if (p < 0 || !single_use(g, y) || g.values[size_t(y)].dtype != SINGA_ONNX_FLOAT) return false;
  const graph::Node& mm = g.nodes[size_t(p)];
  if (!plain_op(mm, "MatMul") || mm.inputs.size() < 2 || mm.inputs.size() > 3 || mm.outputs.size() != 1 ||
      mm.inputs[0] < 0 || !float_value(g, mm.inputs[0]))
    return false;
  const Tensor* b = float_constant(g, mm, 1);
  return b && b->ndim() == 2 && !find_attr(mm, "alpha") && !find_attr(mm, "transB");
}

int fuse_gelus(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& gelu = g.nodes[i];
    if (gelu.proto.op_type() != "Gelu" || !plain_onnx_node(gelu) || gelu.inputs.size() != 1 ||
        gelu.outputs.size() != 1 || gelu.outputs[0] < 0 || !fusable(g, gelu.inputs[0]))
      continue;
    const auto* approx = find_attr(gelu, "approximate");
    if (approx && approx->s() != "none") continue;
    const size_t mi = size_t(g.values[size_t(gelu.inputs[0])].producer);
    graph::Node& mm = g.nodes[mi];
    if (find_attr(mm, "activation")) continue;
    add_string_attr(mm.proto, "activation", "Gelu");
    absorb_reader(g, mi, i, "MatMul+Gelu", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

int fuse_residuals(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& add = g.nodes[i];
    if (!plain_two_value_add(add)) continue;
    const graph::Value& out = g.values[size_t(add.outputs[0])];
    bool same = graph::fully_known(out);
    for (int v : add.inputs) {
      const graph::Value& in = g.values[size_t(v)];
      same = same && float_value(g, v) && graph::fully_known(in) && in.dims == out.dims;
    }
    if (!same) continue;
    int side = -1;
    for (int k = 0; k < 2 && side < 0; ++k)
      if (fusable(g, add.inputs[size_t(k)])) side = k;
    if (side < 0) continue;
    const int y = add.inputs[size_t(side)], z = add.inputs[size_t(1 - side)];
    const size_t mi = size_t(g.values[size_t(y)].producer);
    // The fused node takes the Add's place, after Z's producer.
    const std::string name = node_name(g, g.nodes[mi]);
    graph::Node& node = move_onto_add(g, mi, i, z);
    node.label = "node '" + name + "' (MatMul+" + (find_attr(node, "activation") ? "Gelu+" : "") + "Add)";
    dead[mi] = true;
    ++fused;
  }
  if (fused) compact(g, dead);  // relinks producers and consumers
  return fused;
}

}  // namespace

int fuse_matmul_epilogues(graph::Graph& g) { return fuse_gelus(g) + fuse_residuals(g); }

}  // namespace passes
}  // namespace singa
