// plugin.cpp - the ops_math pack: elementwise arithmetic, unary math and
// matrix products on the CPU.
#include "matmul_bf16.hpp"
#include "qmatmul.hpp"
#include "registry.hpp"
#include "passes/fuse_gemm_activation.hpp"
#include "passes/matmul_passes.hpp"

SINGA_PLUGIN("ops_math", "0.1.0", "elementwise arithmetic, unary math, MatMul/Gemm (CPU, OpenBLAS)") {
  using namespace singa::ops::math;
  register_binary(reg);
  register_variadic(reg);
  register_unary(reg);
  register_matmul(reg);
  register_quantized(reg);
  register_qdq_matmul(reg);
  register_einsum(reg);
  register_det(reg);
  // Gemm + activation -> FusedGemm, for graphs prepared on the CPU.
  register_gemm_passes(reg);
  // MatMul + scale, transposed B, bias row, Gelu, residual -> FusedMatMul.
  register_matmul_passes(reg);
  // DequantizeLinear'd int8 MatMul/Gemm -> QDQMatMul, before the float MatMul passes.
  singa::sdk::register_graph_pass(reg, kQdqMatMulPass, "cpu", kQdqMatMulPriority, fuse_qdq_matmuls);
  singa::sdk::register_graph_pass(reg, kDynqMatMulPass, "cpu", kDynqMatMulPriority, fuse_dynq_matmuls);
  // Bf16MatMul and the pass cpu.bf16_matmuls (cpu.precision=bf16, bfloat16 graphs).
  register_bf16_matmul(reg);
}
