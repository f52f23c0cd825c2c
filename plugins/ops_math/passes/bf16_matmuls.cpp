// The pass cpu.bf16_matmuls: products by a constant 2-D B become
// ai.singa.cpu Bf16MatMul (matmul_bf16.hpp). Float ones (MatMul, the
// FusedMatMul of the MatMul passes with its scale, transposed B, bias row,
// Gelu and residual, Gemm and FusedGemm with a bias row or none) only when
// `cpu.precision=bf16` and the CPU has bfloat16 dot products; bfloat16 ones
// whenever the CPU has them. It runs after every MatMul and Gemm fusion, which
// it keeps. Products of two computed values (attention's scores, which the
// Attention op holds anyway) stay in float32.
#include "matmul_passes.hpp"

#include <bf16_compute.hpp>
#include <cpu_domain.hpp>
#include <value_dtype.hpp>

#include <set>
#include <string>

namespace singa {
namespace ops {
namespace math {

int register_bf16_matmul_pass(sdk::Registrar& reg);

namespace {

// Ops whose output has the element type of their first input.
bool keeps_type(const sdk::GraphNode& p) {
  static const std::set<std::string> standard = {
      "Add", "Sub", "Mul", "Div", "Relu", "Gelu", "Erf", "Tanh", "Sigmoid", "Softmax", "LayerNormalization",
      "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "MatMul", "Gemm", "Concat", "Slice",
      "Split", "Gather"};
  static const std::set<std::string> cpu = {"FusedMatMul", "FusedGemm", "Attention", kBf16ConvOp, kBf16MatMulOp};
  const std::string d = p.domain();
  return ((d.empty() || d == "ai.onnx") && standard.count(p.op_type())) || (d == kCpuDomain && cpu.count(p.op_type()));
}

// The value's element type. Shape inference does not know the values that
// passes made (the float32 twins of a widened float16 graph, a bfloat16
// Conv's output): those take a Cast's `to` or a type-keeping producer's input
// type, a few producers up at most; 0 when still unknown.
int32_t type_of(const sdk::Graph& g, const std::string& v, int depth = 0) {
  const int32_t t = value_dtype(g, v);
  if (t != 0 || depth > 8) return t;
  const sdk::GraphNode p = g.producer(v);
  if (!p.valid() || p.num_inputs() == 0) return 0;
  const std::string d = p.domain();
  if ((d.empty() || d == "ai.onnx") && p.op_type() == "Cast") return int32_t(p.attr_int("to", 0));
  return keeps_type(p) ? type_of(g, p.input_name(0), depth + 1) : 0;
}

bool cpu_domain_op(const sdk::GraphNode& n, const char* op) { return n.domain() == kCpuDomain && n.op_type() == op; }

bool float_or_bf16_constant(const sdk::Graph& g, const std::string& v) {
  const sdk::Tensor c = g.constant(v);
  return c.present() && (c.dtype() == SINGA_ONNX_FLOAT || c.dtype() == SINGA_ONNX_BFLOAT16);
}

bool takes(const sdk::Graph& g, const sdk::GraphNode& n, bool float_on, bool bf16_cpu) {
  const bool matmul = standard_op(n, "MatMul"), fused = cpu_domain_op(n, "FusedMatMul");
  const bool gemm = standard_op(n, "Gemm") && n.opset() >= 11, fused_gemm = cpu_domain_op(n, "FusedGemm");
  if (!(matmul || fused || gemm || fused_gemm) || n.num_outputs() != 1 || n.num_inputs() < 2) return false;
  const std::string a = n.input_name(0), b = n.input_name(1), y = n.output_name(0);
  const int32_t t = type_of(g, a);
  if (!((t == SINGA_ONNX_FLOAT && float_on) || (t == SINGA_ONNX_BFLOAT16 && bf16_cpu))) return false;
  // A's rank may be unknown (checked at run time, rank 2 and more); Y's type
  // is A's, unless shape inference says otherwise.
  singa_value_info ai, yi;
  const bool a_known = g.value_info(a, ai) && ai.ndim >= 0;
  if ((a_known && ai.ndim < 2) || (g.value_info(y, yi) && yi.onnx_dtype != t && yi.onnx_dtype != 0)) return false;
  const sdk::Tensor bc = g.constant(b);
  if (!float_or_bf16_constant(g, b) || bc.ndim() != 2) return false;
  const int64_t N = n.attr_int("transB", 0) != 0 ? bc.shape()[0] : bc.shape()[1];
  if (fused && !n.attr_string("activation", "").empty() && n.attr_string("activation", "") != "Gelu") return false;
  if (gemm || fused_gemm) {
    if (!a_known || ai.ndim != 2 || n.attr_int("transA", 0) != 0 || n.num_inputs() > 3) return false;
    if (n.num_inputs() == 3 && !n.input_name(2).empty()) {
      const sdk::Tensor c = g.constant(n.input_name(2));
      if (!float_or_bf16_constant(g, n.input_name(2)) || c.numel() != N || c.shape().back() != N ||
          n.attr_float("beta", 1.f) != 1.f)
        return false;
    }
  } else if (n.num_inputs() > 2 && !n.input_name(2).empty()) {
    const sdk::Tensor c = g.constant(n.input_name(2));
    if (!float_or_bf16_constant(g, n.input_name(2)) || c.numel() != N) return false;
  }
  if (n.num_inputs() > 3 && value_dtype(g, n.input_name(3)) != t) return false;
  return true;
}

int use_bf16_matmuls(sdk::Graph& g) {
  const bool float_on = bf16_compute_on(g);
  const bool bf16_cpu = float_on || cpu_has_bf16();
  if (!bf16_cpu) return 0;
  return retype_nodes(g, kBf16MatMulOp, [&](const sdk::GraphNode& n) { return takes(g, n, float_on, bf16_cpu); });
}

}  // namespace

// After every MatMul and Gemm fusion of both packs (the last, cpu.gemm_activations, at 900).
int register_bf16_matmul_pass(sdk::Registrar& reg) {
  return sdk::register_graph_pass(reg, "cpu.bf16_matmuls", "cpu", 880, use_bf16_matmuls) ? 1 : 0;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
