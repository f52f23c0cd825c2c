// A Transpose that swaps only the last two axes and feeds a MatMul's B alone
// (attention's K^T) goes into the MatMul as a `transB` attribute that
// singa's CPU MatMul reads: the GEMM reads B transposed in place, and the
// transposed copy is never made. CPU only, float only.
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

int fuse_transpose_matmuls(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& t = g.nodes[i];
    if (dead[i] || !plain_op(t, "Transpose", 1) || t.outputs.size() != 1 || t.inputs[0] < 0 || t.outputs[0] < 0)
      continue;
    const auto* perm = find_attr(t, "perm");
    const int r = perm ? perm->ints_size() : 0;
    if (r < 2) continue;
    bool swap_last = perm->ints(r - 1) == r - 2 && perm->ints(r - 2) == r - 1;
    for (int d = 0; swap_last && d < r - 2; ++d) swap_last = perm->ints(d) == d;
    if (!swap_last || g.values[size_t(t.outputs[0])].dtype != SINGA_ONNX_FLOAT) continue;
    graph::Node* mm = sole_reader(g, t.outputs[0], "MatMul", 2);
    if (!mm || mm->inputs[1] != t.outputs[0] || mm->inputs[0] == t.outputs[0] || find_attr(*mm, "transB")) continue;
    add_int_attr(mm->proto, "transB", 1);
    mm->inputs[1] = t.inputs[0];
    mm->proto.set_input(1, g.values[size_t(t.inputs[0])].name);
    dead[i] = true;
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
