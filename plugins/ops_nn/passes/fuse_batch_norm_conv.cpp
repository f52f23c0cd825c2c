// An inference BatchNormalization (or FusedBatchNorm, with its activation)
// whose result only a 1x1 Conv of stride 1, no padding and one group reads
// as X: one ai.singa.cpu BatchNormConv (batch_norm_conv_f32.cpp) that
// normalizes blocks of columns in cache and multiplies them at once. Runs
// after the layout passes and takes only NCHW values (plain on both sides),
// Convs with constant weights and bias and no fused pool, mean or summand.
#include "fuse_batch_norm_conv.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {
namespace {

bool inference_batch_norm(const GraphNode& n) {
  return (standard_op(n, "BatchNormalization") || (cpu_op(n, "FusedBatchNorm") && !n.has_attr("pool_kernel_shape"))) &&
         n.num_inputs() == 5 && n.num_outputs() == 1 && n.attr_int("training_mode", 0) == 0 && n.attr_int("spatial", 1) == 1;
}

// The activation attributes of `n` under the names FusedActivation reads
// with `prefix`.
void activation_attrs(const GraphNode& n, const std::string& prefix, std::vector<sdk::Attr>& out) {
  const std::string a = n.attr_string("activation", "");
  if (a.empty()) return;
  out.push_back(sdk::Attr(prefix + "activation", a));
  for (const char* f : {"activation_alpha", "activation_beta", "activation_min", "activation_max"})
    if (n.has_attr(f)) out.push_back(sdk::Attr(prefix + f, n.attr_float(f, 0.f)));
}

}  // namespace

int fuse_batch_norm_convs(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes()) {
    if (!n.alive() || !inference_batch_norm(n)) continue;
    const std::string x = n.input_name(0), y = n.output_name(0);
    const auto xs = shape_of(g, x);
    if (!float_value(g, x) || xs.size() != 4 || xs[1] <= 0 || !g.layout(x).empty() || !g.layout(y).empty()) continue;
    bool constants = true;
    for (size_t i = 1; i < 5; ++i) constants = constants && g.constant(n.input_name(i)).present();
    if (!constants) continue;
    GraphNode conv = sole_reader(g, y);
    if (!conv.valid() || !pointwise_conv(g, conv) || cpu_op(conv, "ConvAdd") || conv.input_name(0) != y ||
        conv.has_attr("pool_kernel_shape") || conv.has_attr("global_average_pool") ||
        !g.layout(conv.output_name(0)).empty() || conv_weight_shape(g, conv)[1] != xs[1])
      continue;
    NewNode f(kCpuDomain, "BatchNormConv");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = n.input_names();
    f.inputs.push_back(conv.input_name(1));
    if (conv.num_inputs() > 2 && !conv.input_name(2).empty()) f.inputs.push_back(conv.input_name(2));
    f.outputs = {conv.output_name(0)};
    f.attrs.push_back(sdk::Attr("epsilon", n.attr_float("epsilon", 1e-5f)));
    activation_attrs(n, "norm_", f.attrs);
    activation_attrs(conv, "", f.attrs);
    g.replace({n, conv}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
