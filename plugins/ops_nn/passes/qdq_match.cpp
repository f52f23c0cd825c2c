#include "qdq_match.hpp"

#include <cmath>

namespace singa {
namespace nn {
namespace passes {

bool eight_bit(int32_t t) { return t == SINGA_ONNX_UINT8 || t == SINGA_ONNX_INT8; }

bool dq_params(const Graph& g, const GraphNode& dq, int64_t per, int64_t axis, int64_t rank, sdk::Tensor& scale,
               sdk::Tensor& zp) {
  if (!dq.valid() || !standard_op(dq, "DequantizeLinear") || dq.num_inputs() < 2 || dq.num_outputs() != 1 ||
      dq.attr_int("block_size", 0) != 0)
    return false;
  const int64_t out = dq.attr_int("output_dtype", 0);
  if (out != 0 && out != SINGA_ONNX_FLOAT) return false;
  scale = g.constant(dq.input_name(1));
  if (!scale.present() || scale.dtype() != SINGA_ONNX_FLOAT || scale.ndim() > 1) return false;
  if (scale.numel() != 1) {
    int64_t a = dq.attr_int("axis", 1);
    if (a < 0) a += rank;
    if (per <= 1 || scale.numel() != per || scale.ndim() != 1 || a != axis) return false;
  }
  const bool has_zp = dq.num_inputs() > 2 && !dq.input_name(2).empty();
  zp = has_zp ? g.constant(dq.input_name(2)) : sdk::Tensor();
  return !has_zp || (zp.present() && zp.numel() == scale.numel());
}

bool activation_dq(const Graph& g, const GraphNode& dq) {
  sdk::Tensor scale, zp;
  singa_value_info x;
  if (!dq_params(g, dq, 1, 0, 0, scale, zp) || !g.value_info(dq.input_name(0), x) || !eight_bit(x.onnx_dtype))
    return false;
  const float s = scale.data<float>()[0];
  return s > 0.f && std::isfinite(s) && (!zp.present() || zp.dtype() == x.onnx_dtype);
}

bool output_q(const Graph& g, const GraphNode& q) {
  if (!q.valid() || !standard_op(q, "QuantizeLinear") || q.num_inputs() < 2 || q.num_outputs() != 1 ||
      q.output_name(0).empty() || q.attr_int("block_size", 0) != 0)
    return false;
  const sdk::Tensor scale = g.constant(q.input_name(1));
  if (!scale.present() || scale.dtype() != SINGA_ONNX_FLOAT || scale.numel() != 1 || scale.ndim() > 1) return false;
  const float s = scale.data<float>()[0];
  if (!(s > 0.f) || !std::isfinite(s)) return false;
  const int64_t out = q.attr_int("output_dtype", 0);
  if (q.num_inputs() < 3 || q.input_name(2).empty()) return out == 0 || out == SINGA_ONNX_UINT8;
  const sdk::Tensor zp = g.constant(q.input_name(2));
  return zp.present() && zp.numel() == 1 && zp.ndim() <= 1 && eight_bit(zp.dtype()) && (out == 0 || out == zp.dtype());
}

std::vector<std::string> dq_inputs(const GraphNode& dq) {
  return {dq.input_name(0), dq.input_name(1), dq.num_inputs() > 2 ? dq.input_name(2) : std::string()};
}

GraphNode sole_relu(const Graph& g, const std::string& value) {
  GraphNode relu = sole_reader(g, value);
  if (relu.valid() && standard_op(relu, "Relu") && relu.num_outputs() == 1 && !relu.output_name(0).empty()) return relu;
  return GraphNode(nullptr, g.raw());
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
