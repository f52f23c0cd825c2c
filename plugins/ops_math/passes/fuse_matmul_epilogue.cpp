// What a transformer does right after a projection goes into the
// projection's FusedMatMul:
//
//   MatMul(A, B[, bias]) -> Gelu           activation = "Gelu"
//   MatMul(A, B[, bias]) -> act            activation = act (activation_match.hpp:
//                                          Relu, Clip, Sigmoid, SiLU written as
//                                          y * Sigmoid(y), HardSwish, ...)
//   MatMul(A, B[, bias]) [-> Gelu] -> Add(., Z), Z of the product's shape
//                                          Z as the fourth input
//
// so that Y = gelu(A B + bias) + Z comes out of one node. B must be a 2-D
// float constant (the projections' weights), the case the CPU kernel runs
// through oneDNN's matmul primitive, which adds Z as a post-op while the tile
// is in registers; the GELU each part applies to its rows right after its
// product (matmul_dnnl.cpp says why). The sgemm path applies both in one pass
// after the product. A BERT encoder's feed-forward GELU (128 x 1024) and its
// two residual Adds per layer (128 x 256) were separate passes over memory.
//
// The SiLU of a conformer's or an EfficientFormer's feed-forward (Sigmoid and
// Mul over 400 x 576 floats, two passes) is applied the same way as the GELU.
//
// Runs after the bias rows (the third input by then) and the core's GELU
// fusion. Only Gelu with approximate "none"; the residual needs static
// shapes equal to the product's (no broadcast), and the node takes the
// Add's place, after Z's producer. No Gelu after a residual: the activation
// comes first in the node.
#include "matmul_passes.hpp"

#include <activation_match.hpp>

namespace singa {
namespace ops {
namespace math {
namespace {

// The product `y` of a MatMul that may take an epilogue: float, a 2-D
// constant B, no scale and no transposed B (the primitive's case), read only
// by the next node. Returns its producer (invalid when not fusable).
sdk::GraphNode fusable(const sdk::Graph& g, const std::string& y, bool one_reader = true) {
  const sdk::GraphNode none(nullptr, g.raw());
  singa_value_info info;
  if (!float_info(g, y, info, true) || (one_reader && !sole_reader(g, y).valid())) return none;
  sdk::GraphNode mm = g.producer(y);
  if (!matmul_like(mm) || mm.num_inputs() > 3 || mm.has_attr("alpha") || mm.attr_int("transB", 0) != 0 ||
      !float_info(g, mm.input_name(0), info, true))
    return none;
  const sdk::Tensor b = g.constant(mm.input_name(1));
  if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 2) return none;
  return mm;
}

int fuse_gelus(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode gelu : g.nodes()) {
    if (!gelu.alive() || !standard_op(gelu, "Gelu") || gelu.num_inputs() != 1 || gelu.num_outputs() != 1 ||
        gelu.output_name(0).empty() || gelu.attr_string("approximate", "none") != "none")
      continue;
    sdk::GraphNode mm = fusable(g, gelu.input_name(0));
    if (!mm.valid() || mm.has_attr("activation")) continue;
    sdk::NewNode f = as_fused_matmul(mm);
    f.attrs.push_back(sdk::Attr("activation", "Gelu"));
    f.outputs = {gelu.output_name(0)};
    g.replace({mm, gelu}, {f});
    ++fused;
  }
  return fused;
}

// Activations other than Gelu (match_activation decides which nodes: the
// Sigmoid and Mul of a SiLU read y twice, hence no sole-reader rule here).
int fuse_activations(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode mm : g.nodes()) {
    if (!mm.alive() || !matmul_like(mm) || mm.has_attr("activation") || mm.num_outputs() != 1) continue;
    const std::string y = mm.output_name(0);
    if (!fusable(g, y, false).valid()) continue;
    std::vector<sdk::GraphNode> act;
    std::vector<sdk::Attr> attrs;
    if (!match_activation(g, y, act, attrs)) continue;
    sdk::NewNode f = as_fused_matmul(mm);
    for (sdk::Attr& a : attrs) f.attrs.push_back(std::move(a));
    f.outputs = {act.back().output_name(0)};
    std::vector<sdk::GraphNode> old = {mm};
    old.insert(old.end(), act.begin(), act.end());
    g.replace(old, {f});
    ++fused;
  }
  return fused;
}

bool same_static_shape(const singa_value_info& a, const singa_value_info& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t k = 0; k < a.ndim; ++k)
    if (a.dims[k] != b.dims[k]) return false;
  return true;
}

int fuse_residuals(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode add : g.nodes()) {
    if (!add.alive() || !standard_op(add, "Add") || add.num_inputs() != 2 || add.num_outputs() != 1) continue;
    const std::string y0 = add.input_name(0), y1 = add.input_name(1);
    singa_value_info out, in0, in1;
    if (y0 == y1 || !float_info(g, add.output_name(0), out) || !float_info(g, y0, in0) || !float_info(g, y1, in1) ||
        !same_static_shape(in0, out) || !same_static_shape(in1, out))
      continue;
    int side = -1;
    sdk::GraphNode mm(nullptr, g.raw());
    for (int k = 0; k < 2 && side < 0; ++k) {
      mm = fusable(g, k == 0 ? y0 : y1);
      if (mm.valid()) side = k;
    }
    if (side < 0) continue;
    sdk::NewNode f = as_fused_matmul(mm);
    f.inputs.resize(3);  // an absent bias is ""
    f.inputs.push_back(side == 0 ? y1 : y0);
    f.outputs = {add.output_name(0)};
    g.replace({mm, add}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace

int fuse_matmul_epilogues(sdk::Graph& g) {
  int fused = fuse_gelus(g);
  if (g.option("cpu.matmul_activations", "1") != "0") fused += fuse_activations(g);
  return fused + fuse_residuals(g);
}

}  // namespace math
}  // namespace ops
}  // namespace singa
