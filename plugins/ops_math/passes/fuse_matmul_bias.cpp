// A batched MatMul A [..., M, K] x B [K, N] (a transformer's projections:
// [batch, seq, d]) followed by an Add of a constant bias row ([N] or
// [1, ..., 1, N]) that alone reads the product becomes FusedMatMul(A, B,
// bias): the CPU kernel folds the batch into one GEMM and adds the row as it
// stores the result. (A 2-D A becomes a Gemm in the core, for every device.)
#include "matmul_passes.hpp"

namespace singa {
namespace ops {
namespace math {
namespace {

// C is [N], or [1, ..., 1, N] of rank at most `rank`.
bool bias_row(const sdk::Tensor& c, int64_t N, int64_t rank) {
  const sdk::Shape s = c.shape();
  if (s.empty() || int64_t(s.size()) > rank || s.back() != N) return false;
  for (size_t d = 0; d + 1 < s.size(); ++d)
    if (s[d] != 1) return false;
  return true;
}

}  // namespace

int fuse_matmul_bias_rows(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode mm : g.nodes()) {
    if (!mm.alive() || !standard_op(mm, "MatMul") || mm.num_inputs() != 2 || mm.num_outputs() != 1 || mm.opset() < 7)
      continue;
    singa_value_info a;
    if (!float_info(g, mm.input_name(0), a, true) || a.ndim <= 2) continue;
    const sdk::Tensor b = g.constant(mm.input_name(1));
    if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 2) continue;
    const std::string y = mm.output_name(0);
    sdk::GraphNode add = sole_reader(g, y);
    if (!standard_op(add, "Add") || add.num_inputs() != 2 || add.num_outputs() != 1 || add.output_name(0).empty() ||
        add.input_name(0) == add.input_name(1))
      continue;
    const std::string c_name = add.input_name(add.input_name(0) == y ? 1 : 0);
    const sdk::Tensor c = g.constant(c_name);
    if (!c.present() || c.dtype() != SINGA_ONNX_FLOAT || !bias_row(c, b.dim(1), a.ndim)) continue;
    sdk::NewNode f = as_fused_matmul(mm);
    f.inputs.push_back(c_name);
    f.outputs = {add.output_name(0)};
    g.replace({mm, add}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
