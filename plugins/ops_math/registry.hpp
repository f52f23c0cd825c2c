// registry.hpp - each source file of the pack registers its own kernels.
#ifndef SINGA_OPS_MATH_REGISTRY_HPP
#define SINGA_OPS_MATH_REGISTRY_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace math {

void register_binary(sdk::Registrar& reg);     // Add Sub Mul Div Pow Mod BitShift BitwiseAnd/Or/Xor
void register_variadic(sdk::Registrar& reg);   // Sum Mean Max Min
void register_unary(sdk::Registrar& reg);      // Sqrt Exp ... IsNaN IsInf BitwiseNot
void register_matmul(sdk::Registrar& reg);     // MatMul Gemm
void register_quantized(sdk::Registrar& reg);  // MatMulInteger QLinearMatMul
void register_einsum(sdk::Registrar& reg);  // Einsum
void register_det(sdk::Registrar& reg);     // Det

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
