// MatMul(A, B) + C -> Gemm(A, B, C) where Gemm means the same thing: A is a
// 2-D float matrix [M, K], B a constant [K, N] and C a constant that
// broadcasts to [M, N] one way ([N], [1, N] or [M, N]). One GEMM call with
// the bias in its accumulator replaces two passes over the output. Device
// neutral: Gemm is a standard op. (A batched A with a bias row is the CPU
// pack's cpu.matmul_bias_rows, plugins/ops_math/passes.)
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

int fuse_matmul_add(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& mm = g.nodes[i];
    if (!plain_op(mm, "MatMul", 2) || mm.outputs.size() != 1) continue;
    const int y = mm.outputs[0];
    if (y < 0 || !single_use(g, y) || mm.inputs[0] < 0) continue;
    const graph::Value& a = g.values[size_t(mm.inputs[0])];
    const Tensor* b = float_constant(g, mm, 1);
    if (a.dtype != SINGA_ONNX_FLOAT || !a.rank_known || a.dims.size() != 2 || !b || b->ndim() != 2) continue;
    const int64_t M = a.dims[0], N = b->shape()[1];
    graph::Node* addp = sole_reader(g, y, "Add", 2);
    if (!addp || addp->outputs.size() != 1 || addp->outputs[0] < 0 || addp->inputs[0] == addp->inputs[1]) continue;
    graph::Node& add = *addp;
    const size_t j = index_of(g, add);
    const size_t other = add.inputs[0] == y ? 1 : 0;
    const Tensor* c = float_constant(g, add, other);
    if (!c) continue;
    const Shape& cs = c->shape();
    const bool row = (cs.size() == 1 || (cs.size() == 2 && cs[0] == 1)) && cs.back() == N;
    const bool full = cs.size() == 2 && M >= 0 && cs[0] == M && cs[1] == N;
    if (!row && !full) continue;
    // Gemm came in opset 1 but takes a broadcast C unconditionally only from 7.
    if (mm.opset < 7) continue;
    mm.proto.set_op_type("Gemm");
    mm.proto.add_input(g.values[size_t(add.inputs[other])].name);
    mm.inputs.push_back(add.inputs[other]);
    mm.explicit_inputs = mm.inputs.size();
    absorb_reader(g, i, j, "Gemm from MatMul+Add", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
