// MatMul(A, B) + C -> Gemm(A, B, C) where Gemm means the same thing: A is a
// 2-D float matrix [M, K], B a constant [K, N] and C a constant that
// broadcasts to [M, N] one way ([N], [1, N] or [M, N]). One GEMM call with
// the bias in its accumulator replaces two passes over the output.
//
// For the CPU, a batched A [..., M, K] (a transformer's projections: [batch,
// seq, d]) with a bias row C ([N] or [1, ..., 1, N]) keeps its MatMul, which
// gains C as a third input: singa's CPU MatMul folds such a product into one
// GEMM and adds the row as it stores the result. ONNX's MatMul has two inputs,
// so the node is only for that kernel (the checker has already run).
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

namespace {

// C is [N], or [1, ..., 1, N] of rank at most `rank`.
bool bias_row(const Shape& cs, int64_t N, size_t rank) {
  if (cs.empty() || cs.size() > rank || cs.back() != N) return false;
  for (size_t d = 0; d + 1 < cs.size(); ++d)
    if (cs[d] != 1) return false;
  return true;
}

}  // namespace

int fuse_matmul_add(graph::Graph& g, bool batched_bias) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& mm = g.nodes[i];
    if (!plain_op(mm, "MatMul", 2) || mm.outputs.size() != 1) continue;
    const int y = mm.outputs[0];
    if (y < 0 || !single_use(g, y) || mm.inputs[0] < 0) continue;
    const graph::Value& a = g.values[size_t(mm.inputs[0])];
    const Tensor* b = float_constant(g, mm, 1);
    if (a.dtype != SINGA_ONNX_FLOAT || !a.rank_known || a.dims.size() < 2 || !b || b->ndim() != 2) continue;
    const bool batched = a.dims.size() > 2;
    if (batched && !batched_bias) continue;
    const int64_t M = a.dims[a.dims.size() - 2], N = b->shape()[1];
    graph::Node* addp = sole_reader(g, y, "Add", 2);
    if (!addp || addp->outputs.size() != 1 || addp->outputs[0] < 0 || addp->inputs[0] == addp->inputs[1]) continue;
    graph::Node& add = *addp;
    const size_t j = index_of(g, add);
    const size_t other = add.inputs[0] == y ? 1 : 0;
    const Tensor* c = float_constant(g, add, other);
    if (!c) continue;
    const Shape& cs = c->shape();
    const bool row = bias_row(cs, N, a.dims.size());
    const bool full = !batched && cs.size() == 2 && M >= 0 && cs[0] == M && cs[1] == N;
    if (!row && !full) continue;
    // Gemm came in opset 1 but takes a broadcast C unconditionally only from 7.
    if (mm.opset < 7) continue;
    if (!batched) mm.proto.set_op_type("Gemm");
    mm.proto.add_input(g.values[size_t(add.inputs[other])].name);
    mm.inputs.push_back(add.inputs[other]);
    mm.explicit_inputs = mm.inputs.size();
    absorb_reader(g, i, j, std::string(batched ? "MatMul with a bias" : "Gemm") + " from MatMul+Add", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
