// matmul_passes.hpp - the ops_math pack's MatMul graph passes (ABI 1.3
// graph-pass extension) for graphs prepared on the CPU. Each rewrites a
// MatMul and what follows it into one ai.singa.cpu FusedMatMul, the op whose
// extra attributes and inputs only this pack's MatMul kernel reads:
//
//   FusedMatMul(A, B, bias?, Z?)   Y = activation(alpha * A op(B) + bias) + Z
//     alpha       float, default 1     (cpu.matmul_scales)
//     transB      int, default 0: B is stored [..., N, K]  (cpu.transposed_b)
//     bias        a row of N values    (cpu.matmul_bias_rows)
//     activation  "Gelu" or absent; Z of Y's shape  (cpu.matmul_epilogues)
//
// The passes run in that order (bias rows, scales, transposed Bs, then, after
// ops_nn's cpu.attention, the epilogues), before the Conv passes; each is
// switched off by the option pass.NAME=0.
#ifndef SINGA_OPS_MATH_PASSES_MATMUL_PASSES_HPP
#define SINGA_OPS_MATH_PASSES_MATMUL_PASSES_HPP

#include <singa/graph_pass.hpp>

#include <string>

namespace singa {
namespace ops {
namespace math {

constexpr const char* kMatMulBiasRowsPass = "cpu.matmul_bias_rows";
constexpr const char* kMatMulScalesPass = "cpu.matmul_scales";
constexpr const char* kTransposedBPass = "cpu.transposed_b";
constexpr const char* kMatMulEpiloguesPass = "cpu.matmul_epilogues";
// Not a MatMul pass, but this pack's too (widen_float16.cpp): float16 graphs
// run in float32, weights widened at prepare. Runs before every fusion.
constexpr const char* kFloat16AsFloat32Pass = "cpu.float16_as_float32";
// MatMul/Gemm between DequantizeLinear'd int8 operands -> QDQMatMul
// (fuse_qdq_matmul.cpp). Runs among the quantized passes, before the float
// MatMul passes and while weights still show their DequantizeLinear.
constexpr const char* kQdqMatMulPass = "cpu.qdq_matmul";
constexpr int32_t kQdqMatMulPriority = SINGA_PASS_PRIORITY_QUANTIZED + 70;
// MatMulInteger -> Cast -> Mul(scale) [-> Add(bias)] (quantize_dynamic) ->
// QDQMatMul writing float (fuse_dynq_matmul.cpp).
constexpr const char* kDynqMatMulPass = "cpu.dynq_matmul";
constexpr int32_t kDynqMatMulPriority = SINGA_PASS_PRIORITY_QUANTIZED + 60;

// Each returns the number of rewrites.
int fuse_matmul_bias_rows(sdk::Graph& g);
int fuse_matmul_scales(sdk::Graph& g);
int fuse_transposed_b(sdk::Graph& g);
int fuse_matmul_epilogues(sdk::Graph& g);
int widen_float16(sdk::Graph& g);
int fuse_qdq_matmuls(sdk::Graph& g);
int fuse_dynq_matmuls(sdk::Graph& g);

// What the passes share (matmul_match.cpp).
// A node of the default ONNX domain of type `op`.
bool standard_op(const sdk::GraphNode& n, const char* op);
// A standard MatMul(A, B) or a FusedMatMul, with one output.
bool matmul_like(const sdk::GraphNode& n);
// The FusedMatMul that `mm` (a matmul_like node) becomes: its inputs and,
// for a FusedMatMul, its attributes; the caller adds the new ones.
sdk::NewNode as_fused_matmul(const sdk::GraphNode& mm);
// The value's only reader, when it is not a graph output (invalid otherwise).
sdk::GraphNode sole_reader(const sdk::Graph& g, const std::string& value);
// Type and shape of `value` when its element type is float and every dim is
// known at prepare time (`rank_only`: only the rank need be known).
bool float_info(const sdk::Graph& g, const std::string& value, singa_value_info& info, bool rank_only = false);

// Registers the passes for the "cpu" device (SINGA_PLUGIN's body).
void register_matmul_passes(sdk::Registrar& reg);

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
