#include "conv_patterns.hpp"

namespace singa {
namespace passes {

bool ints_all(const ::onnx::AttributeProto* a, int64_t want, size_t count) {
  if (!a) return true;
  if (a->type() != ::onnx::AttributeProto::INTS || size_t(a->ints_size()) != count) return false;
  for (int64_t v : a->ints())
    if (v != want) return false;
  return true;
}

const Tensor* conv_weights(const graph::Graph& g, const graph::Node& n) {
  const Tensor* w = float_constant(g, n, 1);
  return w && w->shape().size() == 4 ? w : nullptr;
}

bool float_value(const graph::Graph& g, int v) { return v >= 0 && g.values[size_t(v)].dtype == SINGA_ONNX_FLOAT; }

bool plain_conv(const graph::Graph& g, const graph::Node& n) {
  if (!plain_op(n, "Conv") || n.inputs.size() < 2 || n.outputs.size() != 1 || n.outputs[0] < 0 ||
      !float_value(g, n.inputs[0]) || !conv_weights(g, n))
    return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !float_constant(g, n, 2)) return false;
  const auto* auto_pad = find_attr(n, "auto_pad");
  if (auto_pad && auto_pad->s() != "NOTSET" && !auto_pad->s().empty()) return false;
  return ints_all(find_attr(n, "dilations"), 1, 2);
}

bool is_conv_add(const graph::Node& n) { return n.proto.domain() == kFusedDomain && n.proto.op_type() == "ConvAdd"; }

bool pointwise_conv(const graph::Graph& g, const graph::Node& n) {
  if (!plain_conv(g, n)) return false;
  const Tensor* w = conv_weights(g, n);
  const auto* group = find_attr(n, "group");
  return w->shape()[2] == 1 && w->shape()[3] == 1 && (!group || group->i() == 1) &&
         ints_all(find_attr(n, "strides"), 1, 2) && ints_all(find_attr(n, "pads"), 0, 4) &&
         ints_all(find_attr(n, "kernel_shape"), 1, 2);
}

bool has_channels(const graph::Graph& g, int v, int64_t c) {
  const auto& val = g.values[size_t(v)];
  return val.rank_known && val.dims.size() == 4 && val.dims[1] == c;
}

bool same_4d_shape(const graph::Graph& g, int a, int b) {
  const auto& va = g.values[size_t(a)];
  const auto& vb = g.values[size_t(b)];
  bool same = va.rank_known && vb.rank_known && va.dims.size() == 4 && vb.dims.size() == 4;
  for (size_t d = 0; same && d < 4; ++d)
    same = va.dims[d] == vb.dims[d] && (va.dims[d] >= 0 || (!va.dim_params[d].empty() && va.dim_params[d] == vb.dim_params[d]));
  return same;
}

void move_activation(const graph::Node& from, ::onnx::NodeProto& to, const std::string& prefix) {
  for (const auto& a : from.proto.attribute())
    if (a.name().rfind("activation", 0) == 0) add_renamed_attr(to, a, prefix + a.name());
}

}  // namespace passes
}  // namespace singa
