// qmatmul.hpp - the ai.singa.cpu QDQMatMul op that the cpu.qdq_matmul pass
// (passes/fuse_qdq_matmul.cpp) makes of a MatMul between two
// DequantizeLinear'd int8 operands:
//
//   QDQMatMul(A, a_scale, a_zero_point?, B, b_scale, b_zero_point?, bias?,
//             y_scale?, y_zero_point?, y_bias?)  [dequantize_output = 0]
//     Y = ((A - a_zero_point) a_scale) @ ((B - b_zero_point) b_scale) + bias
//     then, with y_scale, QuantizeLinear(Y, y_scale, y_zero_point)
//     then, with dequantize_output = 1, DequantizeLinear of that with the
//     same scale and zero point, plus y_bias [N] (float output)
//
// A is u8 or s8 [..., M, K] with a scalar scale and zero point; B is u8 or
// s8 [K, N] (a constant, packed at create) with a scale and zero point each
// a scalar or one per column; bias is float [N]. Y is float [..., M, N],
// computed as float(exact int32 sum) * a_scale * b_scale[n] + bias[n]; or,
// when y_scale and y_zero_point (scalars) are given, that value quantized to
// y_zero_point's type as QuantizeLinear does.
#ifndef SINGA_OPS_MATH_QMATMUL_HPP
#define SINGA_OPS_MATH_QMATMUL_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace math {

constexpr const char* kQdqMatMulOp = "QDQMatMul";

void register_qdq_matmul(sdk::Registrar& reg);

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
