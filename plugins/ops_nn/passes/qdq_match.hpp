// qdq_match.hpp - tests on QDQ graphs shared by the ops_nn int8 passes
// (fuse_qdq_conv.cpp, fuse_qdq_elementwise.cpp, fuse_dynq_conv.cpp): which
// DequantizeLinear and QuantizeLinear nodes carry constant 8-bit parameters
// that the int8 kernels can take.
#ifndef SINGA_OPS_NN_PASSES_QDQ_MATCH_HPP
#define SINGA_OPS_NN_PASSES_QDQ_MATCH_HPP

#include "conv_match.hpp"

#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace passes {

// u8 or s8.
bool eight_bit(int32_t onnx_dtype);

// The scale and zero point of DequantizeLinear `dq` when both are constants
// of 1 value (or `per`, along axis `axis` of a rank-`rank` input, when per >
// 1), with float output and no block size. zp is absent when not given.
bool dq_params(const Graph& g, const GraphNode& dq, int64_t per, int64_t axis, int64_t rank, sdk::Tensor& scale,
               sdk::Tensor& zp);

// The activation side: DequantizeLinear of an 8-bit value with a constant
// positive scalar scale and zero point.
bool activation_dq(const Graph& g, const GraphNode& dq);

// A QuantizeLinear to u8 or s8 with a constant positive scalar scale and zero point.
bool output_q(const Graph& g, const GraphNode& q);

// The data, scale and zero point inputs of DequantizeLinear `dq` (zero point "" when absent).
std::vector<std::string> dq_inputs(const GraphNode& dq);

// A Relu that alone reads `value` (else an invalid node).
GraphNode sole_relu(const Graph& g, const std::string& value);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
