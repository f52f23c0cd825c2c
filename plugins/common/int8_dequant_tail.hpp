// int8_dequant_tail.hpp - the float tail that onnxruntime's
// quantize_dynamic writes after an integer product:
//
//   MatMulInteger/ConvInteger -> Cast(to float) -> Mul(., s) [-> Add(., bias)] [-> Relu]
//
// s is a float scalar (the activation's run-time scale times the weights'
// scale), bias a constant of one value per output channel. The int8
// kernels (QDQMatMul, QdqConv) apply the same steps to their int32 sums as
// they store them, in the same order and precision (float(acc) * s, then +
// bias, then Relu), so the fused result is the unfused one bit for bit.
// Shared by the ops_math and ops_nn dynamic-quant passes; header-only.
#ifndef SINGA_PLUGINS_COMMON_INT8_DEQUANT_TAIL_HPP
#define SINGA_PLUGINS_COMMON_INT8_DEQUANT_TAIL_HPP

#include <singa/graph_pass.hpp>

#include <string>
#include <vector>

namespace singa {
namespace int8 {

struct DequantTail {
  std::vector<sdk::GraphNode> nodes;  // Cast, Mul, then Add and Relu when matched
  std::string scale;                  // the float scalar s
  std::string bias;                   // a float constant, "" when none
  bool relu = false;
  std::string output;                 // the last matched node's output
};

// A value of element type `dtype` and known rank <= `rank` whose dims are
// all 1 (one element, known at prepare time to be so).
inline bool scalar_value(const sdk::Graph& g, const std::string& v, int32_t dtype, int64_t rank = 8) {
  singa_value_info info;
  if (v.empty() || !g.value_info(v, info) || info.onnx_dtype != dtype || info.ndim < 0 || info.ndim > rank)
    return false;
  for (int32_t i = 0; i < info.ndim; ++i)
    if (info.dims[i] != 1) return false;
  return true;
}

namespace detail {

inline bool onnx_op(const sdk::GraphNode& n, const char* op) {
  if (!n.valid()) return false;
  const std::string d = n.domain();
  return (d.empty() || d == "ai.onnx") && n.op_type() == op;
}

// The one node reading `value` when the graph does not also output it.
inline sdk::GraphNode only_reader(const sdk::Graph& g, const std::string& value) {
  if (value.empty() || g.is_output(value)) return sdk::GraphNode(nullptr, g.raw());
  auto readers = g.consumers(value);
  return readers.size() == 1 ? readers[0] : sdk::GraphNode(nullptr, g.raw());
}

// A float constant of `channels` values that broadcasts along axis `axis`
// of a rank-`rank` value: right-aligned, that axis holds them, the rest 1.
inline bool channel_bias(const sdk::Tensor& b, int64_t rank, int64_t axis, int64_t channels) {
  if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.numel() != channels || b.ndim() > rank) return false;
  const int64_t at = b.ndim() - (rank - axis);
  if (at < 0) return false;
  for (int64_t i = 0; i < b.ndim(); ++i)
    if (b.dim(int(i)) != (i == at ? channels : 1)) return false;
  return true;
}

// Binary node `n` reads `value` once and something else: that other input.
inline std::string other_input(const sdk::GraphNode& n, const std::string& value) {
  if (n.num_inputs() != 2 || n.num_outputs() != 1 || n.output_name(0).empty()) return {};
  if (n.input_name(0) == n.input_name(1)) return {};
  return n.input_name(0) == value ? n.input_name(1) : n.input_name(0);
}

}  // namespace detail

// Matches the tail after `acc` (int32, rank `rank`, `channels` output
// channels along axis `axis`); a Relu only when `with_relu`. Each matched
// node is the sole reader of the one before.
inline bool match_dequant_tail(const sdk::Graph& g, const std::string& acc, int64_t rank, int64_t axis,
                               int64_t channels, bool with_relu, DequantTail& t) {
  using detail::only_reader;
  t = DequantTail{};
  sdk::GraphNode cast = only_reader(g, acc);
  if (!detail::onnx_op(cast, "Cast") || cast.num_outputs() != 1 || cast.attr_int("to", 0) != SINGA_ONNX_FLOAT)
    return false;
  sdk::GraphNode mul = only_reader(g, cast.output_name(0));
  if (!detail::onnx_op(mul, "Mul")) return false;
  t.scale = detail::other_input(mul, cast.output_name(0));
  if (!scalar_value(g, t.scale, SINGA_ONNX_FLOAT, rank)) return false;
  t.nodes = {cast, mul};
  t.output = mul.output_name(0);
  sdk::GraphNode add = only_reader(g, t.output);
  if (detail::onnx_op(add, "Add")) {
    const std::string b = detail::other_input(add, t.output);
    if (!b.empty() && detail::channel_bias(g.constant(b), rank, axis, channels)) {
      t.bias = b;
      t.nodes.push_back(add);
      t.output = add.output_name(0);
    }
  }
  sdk::GraphNode relu = only_reader(g, t.output);
  if (with_relu && detail::onnx_op(relu, "Relu") && relu.num_outputs() == 1 && !relu.output_name(0).empty()) {
    t.relu = true;
    t.nodes.push_back(relu);
    t.output = relu.output_name(0);
  }
  return true;
}

}  // namespace int8
}  // namespace singa
#endif
