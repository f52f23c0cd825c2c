#include "conv_match.hpp"
#include "../winograd_f32.hpp"

#include <algorithm>

namespace singa {
namespace nn {
namespace passes {

bool standard_op(const GraphNode& n, const char* op) {
  const std::string d = n.domain();
  return (d.empty() || d == "ai.onnx") && n.op_type() == op;
}

bool cpu_op(const GraphNode& n, const char* op) { return n.domain() == kCpuDomain && n.op_type() == op; }

bool conv_like(const GraphNode& n) { return standard_op(n, "Conv") || cpu_op(n, "FusedConv"); }

bool float_value(const Graph& g, const std::string& v) {
  singa_value_info info;
  return !v.empty() && g.value_info(v, info) && info.onnx_dtype == SINGA_ONNX_FLOAT;
}

std::vector<int64_t> shape_of(const Graph& g, const std::string& v) {
  singa_value_info info;
  if (v.empty() || !g.value_info(v, info) || info.ndim < 0) return {};
  return std::vector<int64_t>(info.dims, info.dims + info.ndim);
}

bool known_4d(const Graph& g, const std::string& v) {
  const auto s = shape_of(g, v);
  if (s.size() != 4) return false;
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}

sdk::Tensor float_constant(const Graph& g, const GraphNode& n, size_t slot) {
  if (slot >= n.num_inputs()) return sdk::Tensor();
  const std::string name = n.input_name(slot);
  if (name.empty()) return sdk::Tensor();
  sdk::Tensor t = g.constant(name);
  return t.present() && t.dtype() == SINGA_ONNX_FLOAT ? t : sdk::Tensor();
}

std::vector<int64_t> conv_weight_shape(const Graph& g, const GraphNode& n) {
  sdk::Tensor w = float_constant(g, n, 1);
  if (!w.present() || w.ndim() != 4) return {};
  return w.shape();
}

bool ints_all(const GraphNode& n, const char* name, int64_t want, size_t count) {
  if (!n.has_attr(name)) return true;
  const auto v = n.attr_ints(name);
  if (v.size() != count) return false;
  for (int64_t x : v)
    if (x != want) return false;
  return true;
}

bool plain_conv(const Graph& g, const GraphNode& n) {
  if (!conv_like(n) || n.num_inputs() < 2 || n.num_outputs() != 1 || n.output_name(0).empty() ||
      !float_value(g, n.input_name(0)) || conv_weight_shape(g, n).empty())
    return false;
  if (n.num_inputs() > 2 && !n.input_name(2).empty() && !float_constant(g, n, 2).present()) return false;
  const std::string auto_pad = n.attr_string("auto_pad", "");
  if (!auto_pad.empty() && auto_pad != "NOTSET") return false;
  return ints_all(n, "dilations", 1, 2);
}

bool pointwise_conv(const Graph& g, const GraphNode& n) {
  if (!plain_conv(g, n)) return false;
  const auto w = conv_weight_shape(g, n);
  return w[2] == 1 && w[3] == 1 && n.attr_int("group", 1) == 1 && ints_all(n, "strides", 1, 2) &&
         ints_all(n, "pads", 0, 4) && ints_all(n, "kernel_shape", 1, 2);
}

bool winograd_thin_conv(const Graph& g, const GraphNode& n) {
  if (!winograd_on() || !plain_conv(g, n) || cpu_op(n, "ConvAdd") || n.has_attr("pool_kernel_shape") ||
      n.has_attr("global_average_pool") || n.attr_int("group", 1) != 1 || !ints_all(n, "strides", 1, 2))
    return false;
  const auto w = conv_weight_shape(g, n), x = shape_of(g, n.input_name(0));
  // Planes of 64x64 pixels and more: the measured ones (smaller planes keep
  // the blocked layout, which ResNet-style blocks were tuned on).
  if (w[2] != 3 || w[3] != 3 || w[0] > 32 || x.size() != 4 || x[2] * x[3] < 64 * 64) return false;
  // An unknown batch counts as one image: more images only make the
  // transformed weights cheaper per image.
  const int64_t N = std::max<int64_t>(1, x[0]);
  return winograd_pays(w[1], w[0], winograd_tile(x[2], x[3]), N, x[2], x[3]);
}

bool has_channels(const Graph& g, const std::string& v, int64_t c) {
  const auto s = shape_of(g, v);
  return s.size() == 4 && s[1] == c;
}

bool same_4d_shape(const Graph& g, const std::string& a, const std::string& b) {
  const auto sa = shape_of(g, a), sb = shape_of(g, b);
  if (sa.size() != 4 || sa != sb) return false;
  // An unknown batch on both sides is the model's symbolic batch (a residual
  // Add's operands come from one input); the kernel checks Z's shape per run.
  for (size_t d = 1; d < 4; ++d)
    if (sa[d] < 0) return false;
  return true;
}

GraphNode sole_reader(const Graph& g, const std::string& value) {
  auto readers = g.consumers(value);
  if (readers.size() != 1 || g.is_output(value)) return GraphNode(nullptr, g.raw());
  return readers[0];
}

bool has_activation(const GraphNode& n) { return n.has_attr("activation"); }

}  // namespace passes
}  // namespace nn
}  // namespace singa
