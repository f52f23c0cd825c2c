// matmul_bf16.hpp - ai.singa.cpu Bf16MatMul: a product by a constant 2-D B
// computed in bfloat16 on AMX / AVX512-BF16 through oneDNN's matmul, float32
// accumulation.
//
//   Bf16MatMul(A, B, bias?, Z?) -> Y = activation(alpha A op(B) + bias) + Z
//     A [..., M, K], float or bfloat16; Y [..., M, N] of A's type
//     B constant [K, N] ([N, K] with transB = 1), float or bfloat16
//     bias constant of N values; Z of Y's shape and type
//     alpha (float, 1), transB (int, 0), activation ("Gelu" or one of
//     fused_activation.hpp's kinds with its attributes)
// alpha is folded into B before B is rounded to bfloat16. Gemm's attributes
// (transA 0, beta 1 when C is present) are accepted, so a Gemm or FusedGemm
// becomes one with its attributes as they are. The pass
// `cpu.bf16_matmuls` (passes/bf16_matmuls.cpp) makes these nodes: from float
// MatMul, FusedMatMul, Gemm and FusedGemm when `cpu.precision=bf16`, and from
// bfloat16 ones always.
#ifndef SINGA_OPS_MATH_MATMUL_BF16_HPP
#define SINGA_OPS_MATH_MATMUL_BF16_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace math {

// Registers the Bf16MatMul kernel and the pass that makes its nodes.
void register_bf16_matmul(sdk::Registrar& reg);

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
