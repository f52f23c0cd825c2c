// A Transpose that swaps only the last two axes and alone feeds a MatMul's B
// (attention's K^T) goes into a FusedMatMul as `transB` = 1: the GEMM reads
// B transposed in place, and the transposed copy is never made. Float only.
#include "matmul_passes.hpp"

namespace singa {
namespace ops {
namespace math {

int fuse_transposed_b(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode t : g.nodes()) {
    if (!t.alive() || !standard_op(t, "Transpose") || t.num_inputs() != 1 || t.num_outputs() != 1 ||
        t.input_name(0).empty())
      continue;
    const std::vector<int64_t> perm = t.attr_ints("perm");
    const size_t r = perm.size();
    if (r < 2) continue;
    bool swap_last = perm[r - 1] == int64_t(r) - 2 && perm[r - 2] == int64_t(r) - 1;
    for (size_t d = 0; swap_last && d + 2 < r; ++d) swap_last = perm[d] == int64_t(d);
    singa_value_info info;
    const std::string kt = t.output_name(0);
    if (!swap_last || !float_info(g, kt, info, true)) continue;
    sdk::GraphNode mm = sole_reader(g, kt);
    if (!matmul_like(mm) || mm.num_inputs() != 2 || mm.input_name(1) != kt || mm.input_name(0) == kt ||
        mm.attr_int("transB", 0) != 0)
      continue;
    sdk::NewNode f = as_fused_matmul(mm);
    f.inputs[1] = t.input_name(0);
    f.attrs.push_back(sdk::Attr("transB", int64_t(1)));
    g.replace({t, mm}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
