// A MatMul followed by a Div or Mul by a constant float scalar that alone
// reads its product (the attention scores' Q K^T / sqrt(d)) becomes a
// FusedMatMul with that scale as `alpha`, which the kernel passes to the GEMM:
// one pass over the scores fewer. Float only, and not on a product that took
// a bias row or an epilogue: (A B + c) / s is not alpha A B + c.
#include "matmul_passes.hpp"

#include <cmath>

namespace singa {
namespace ops {
namespace math {

int fuse_matmul_scales(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode mm : g.nodes()) {
    if (!mm.alive() || !matmul_like(mm) || mm.num_inputs() != 2 || mm.has_attr("alpha") || mm.has_attr("activation"))
      continue;
    const std::string y = mm.output_name(0);
    singa_value_info prod, out;
    if (!float_info(g, y, prod, true)) continue;
    sdk::GraphNode scale = sole_reader(g, y);
    const bool div = standard_op(scale, "Div");
    if ((!div && !standard_op(scale, "Mul")) || scale.num_inputs() != 2 || scale.num_outputs() != 1) continue;
    // The product is the dividend of a Div, either operand of a Mul.
    const size_t slot = scale.input_name(0) == y ? 1 : 0;
    if (scale.input_name(1 - slot) != y || scale.input_name(slot) == y || (div && slot != 1)) continue;
    const sdk::Tensor c = g.constant(scale.input_name(slot));
    if (!c.present() || c.dtype() != SINGA_ONNX_FLOAT || c.numel() != 1) continue;
    const float v = c.data<float>()[0];
    const float alpha = div ? 1.f / v : v;
    if (!std::isfinite(alpha) || v == 0.f) continue;
    // The scalar must not broadcast the product to a higher rank.
    if (!float_info(g, scale.output_name(0), out, true) || out.ndim != prod.ndim) continue;
    sdk::NewNode f = as_fused_matmul(mm);
    f.attrs.push_back(sdk::Attr("alpha", alpha));
    f.outputs = {scale.output_name(0)};
    g.replace({mm, scale}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
