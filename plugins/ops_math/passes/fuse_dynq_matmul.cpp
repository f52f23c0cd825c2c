// The dynamic-quant MatMul that onnxruntime's quantize_dynamic writes
// becomes one ai.singa.cpu QDQMatMul (qmatmul.hpp) writing float:
//
//   MatMulInteger(A8, B8, za?, zb?) -> Cast(float) -> Mul(., s) [-> Add(., bias[N])]
//
// A8 (usually DynamicQuantizeLinear's output) is u8 or s8 with a scalar
// zero point; B8 a 2-D u8 or s8 constant with a constant zero point per
// tensor or per column; s a float scalar known only at run time (the
// activation's scale times the weights'). QDQMatMul takes s as its a_scale
// and 1 as its b_scale, so it stores float(acc) * s [+ bias] straight from
// its int32 tiles, bit for bit what the four nodes compute
// (int8_dequant_tail.hpp), without the int32 and float tensors between.
#include "matmul_passes.hpp"

#include "../qmatmul.hpp"

#include <cpu_domain.hpp>
#include <int8_dequant_tail.hpp>
#include <int8_weights.hpp>

#include <vector>

namespace singa {
namespace ops {
namespace math {
namespace {

bool eight_bit(int32_t t) { return t == SINGA_ONNX_UINT8 || t == SINGA_ONNX_INT8; }

int fuse(sdk::Graph& g, const sdk::GraphNode& mi, std::string& one) {
  if (!standard_op(mi, "MatMulInteger") || mi.num_inputs() < 2 || mi.num_outputs() != 1) return 0;
  const std::string a = mi.input_name(0), b = mi.input_name(1);
  const std::string za = mi.num_inputs() > 2 ? mi.input_name(2) : "", zb = mi.num_inputs() > 3 ? mi.input_name(3) : "";
  singa_value_info ai;
  if (!g.value_info(a, ai) || !eight_bit(ai.onnx_dtype) || ai.ndim < 1) return 0;
  const sdk::Tensor bt = g.constant(b);
  if (!bt.present() || !eight_bit(bt.dtype()) || bt.ndim() != 2 || bt.dim(0) == 0 || bt.dim(1) == 0) return 0;
  const int64_t K = bt.dim(0), N = bt.dim(1);
  if (ai.dims[ai.ndim - 1] >= 0 && ai.dims[ai.ndim - 1] != K) return 0;
  if (!za.empty() && !int8::scalar_value(g, za, ai.onnx_dtype)) return 0;
  if (!zb.empty()) {
    const sdk::Tensor z = g.constant(zb);
    if (!z.present() || z.dtype() != bt.dtype() || z.ndim() > 1 || (z.numel() != 1 && z.numel() != N)) return 0;
  }
  int8::DequantTail tail;
  if (!int8::match_dequant_tail(g, mi.output_name(0), ai.ndim, ai.ndim - 1, N, false, tail)) return 0;
  if (one.empty()) {
    float v = 1.f;
    std::vector<int64_t> scalar;
    one = g.add_constant("dynq_unit_scale", int8::host_tensor(&v, scalar, {kDLFloat, 32, 1}));
  }
  sdk::NewNode f(kCpuDomain, kQdqMatMulOp);
  f.name = mi.name();
  f.opset = 1;
  f.inputs = {a, tail.scale, za, b, one, zb, tail.bias};
  while (f.inputs.back().empty()) f.inputs.pop_back();
  f.outputs = {tail.output};
  std::vector<sdk::GraphNode> group{mi};
  group.insert(group.end(), tail.nodes.begin(), tail.nodes.end());
  g.replace(group, {f});
  return 1;
}

}  // namespace

int fuse_dynq_matmuls(sdk::Graph& g) {
  if (!g.has_kernel(kCpuDomain, kQdqMatMulOp, 1)) return 0;
  int fused = 0;
  std::string one;  // the shared b_scale 1
  for (sdk::GraphNode n : g.nodes())
    if (n.alive()) fused += fuse(g, n, one);
  return fused;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
