// Conv followed by inference BatchNormalization: the normalisation is an
// affine map per output channel, so it folds into the Conv's weights and bias
// (W'[m] = W[m] * s[m], b'[m] = (b[m] - mean[m]) * s[m] + beta[m], with
// s = scale / sqrt(var + epsilon)) and the BatchNormalization node goes away.
#include "graph_edit.hpp"
#include "passes.hpp"

#include <cmath>

namespace singa {
namespace passes {

int fuse_conv_batchnorm(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& conv = g.nodes[i];
    if (!plain_op(conv, "Conv") || conv.outputs.size() != 1 || conv.outputs[0] < 0) continue;
    const int y = conv.outputs[0];
    graph::Node* bnp = sole_reader(g, y, "BatchNormalization", 5);
    if (!bnp || bnp->inputs[0] != y || bnp->outputs.empty() || bnp->outputs[0] < 0) continue;
    graph::Node& bn = *bnp;
    const size_t j = index_of(g, bn);
    // Training-mode outputs (running statistics) mean the node is not a plain affine map.
    bool extra_outputs = false;
    for (size_t k = 1; k < bn.outputs.size(); ++k) extra_outputs = extra_outputs || bn.outputs[k] >= 0;
    const auto* training = find_attr(bn, "training_mode");
    if (extra_outputs || (training && training->i() != 0)) continue;
    const Tensor* w = float_constant(g, conv, 1);
    const Tensor* scale = float_constant(g, bn, 1);
    const Tensor* beta = float_constant(g, bn, 2);
    const Tensor* mean = float_constant(g, bn, 3);
    const Tensor* var = float_constant(g, bn, 4);
    const Tensor* bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0 ? float_constant(g, conv, 2) : nullptr;
    const bool has_bias_input = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    if (!w || !scale || !beta || !mean || !var || (has_bias_input && !bias) || w->ndim() < 3) continue;
    const int64_t M = w->shape()[0];
    if (scale->numel() != M || beta->numel() != M || mean->numel() != M || var->numel() != M || (bias && bias->numel() != M))
      continue;
    const auto* eps_attr = find_attr(bn, "epsilon");
    const double eps = eps_attr ? eps_attr->f() : 1e-5;
    const int64_t per = w->numel() / M;
    Tensor nw(w->shape(), SINGA_ONNX_FLOAT), nb({M}, SINGA_ONNX_FLOAT);
    for (int64_t m = 0; m < M; ++m) {
      const double s = double(scale->data<float>()[m]) / std::sqrt(double(var->data<float>()[m]) + eps);
      const float* src = w->data<float>() + m * per;
      float* dst = nw.data<float>() + m * per;
      for (int64_t k = 0; k < per; ++k) dst[k] = float(double(src[k]) * s);
      const double b0 = bias ? bias->data<float>()[m] : 0.0;
      nb.data<float>()[m] = float((b0 - double(mean->data<float>()[m])) * s + double(beta->data<float>()[m]));
    }
    const std::string base = conv.proto.name().empty() ? g.values[size_t(y)].name : conv.proto.name();
    const int wv = add_initializer(g, base + "_bn_weight", std::move(nw));
    const int bv = add_initializer(g, base + "_bn_bias", std::move(nb));
    conv.inputs[1] = wv;
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.inputs[2] = bv;
    conv.explicit_inputs = conv.inputs.size();
    while (conv.proto.input_size() < 3) conv.proto.add_input();
    conv.proto.set_input(1, g.values[size_t(wv)].name);
    conv.proto.set_input(2, g.values[size_t(bv)].name);
    dead[j] = true;
    ++fused;
    // Keep links current so a later Conv reading the same values sees them.
    adopt_output(g, i, bn.outputs[0]);
    g.values[size_t(y)].consumers.clear();
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
