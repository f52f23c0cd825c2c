// What the MatMul passes share, and their registration.
#include "matmul_passes.hpp"

#include <cpu_domain.hpp>

namespace singa {
namespace ops {
namespace math {

bool standard_op(const sdk::GraphNode& n, const char* op) {
  if (!n.valid()) return false;
  const std::string d = n.domain();
  return (d.empty() || d == "ai.onnx") && n.op_type() == op;
}

bool matmul_like(const sdk::GraphNode& n) {
  if (!n.valid() || n.num_outputs() != 1 || n.output_name(0).empty() || n.num_inputs() < 2) return false;
  if (standard_op(n, "MatMul")) return n.num_inputs() == 2;
  return n.domain() == kCpuDomain && n.op_type() == "FusedMatMul";
}

sdk::NewNode as_fused_matmul(const sdk::GraphNode& mm) {
  sdk::NewNode f(kCpuDomain, "FusedMatMul");
  f.name = mm.name();
  f.opset = 1;
  f.inputs = mm.input_names();
  f.outputs = mm.output_names();
  if (mm.op_type() == "FusedMatMul") f.attrs_from = mm.raw();
  return f;
}

sdk::GraphNode sole_reader(const sdk::Graph& g, const std::string& value) {
  if (value.empty() || g.is_output(value)) return sdk::GraphNode(nullptr, g.raw());
  auto readers = g.consumers(value);
  if (readers.size() != 1) return sdk::GraphNode(nullptr, g.raw());
  return readers[0];
}

bool float_info(const sdk::Graph& g, const std::string& value, singa_value_info& info, bool rank_only) {
  if (value.empty() || !g.value_info(value, info) || info.onnx_dtype != SINGA_ONNX_FLOAT || info.ndim < 0) return false;
  for (int32_t k = 0; k < info.ndim && !rank_only; ++k)
    if (info.dims[k] < 0) return false;
  return true;
}

void register_matmul_passes(sdk::Registrar& reg) {
  // Before ops_nn's Conv passes (1000 and down); ops_nn's cpu.attention
  // (1270) reads the scales and transposed Bs and comes before the epilogues.
  sdk::register_graph_pass(reg, kFloat16AsFloat32Pass, "cpu", 2000, widen_float16);
  sdk::register_graph_pass(reg, kMatMulBiasRowsPass, "cpu", 1300, fuse_matmul_bias_rows);
  sdk::register_graph_pass(reg, kMatMulScalesPass, "cpu", 1290, fuse_matmul_scales);
  sdk::register_graph_pass(reg, kTransposedBPass, "cpu", 1280, fuse_transposed_b);
  sdk::register_graph_pass(reg, kMatMulEpiloguesPass, "cpu", 1260, fuse_matmul_epilogues);
}

}  // namespace math
}  // namespace ops
}  // namespace singa
