// Conv followed by an activation (Relu, LeakyRelu, Clip, Sigmoid, Tanh,
// HardSigmoid, HardSwish, Swish, SiLU as Mul(x, Sigmoid(x)), or HardSwish as
// Mul(x, HardSigmoid(x)) with alpha 1/6, torch's export below opset 14): the
// activation is applied by the Conv kernel while the output is still in
// cache. The nodes become one ai.singa.cpu FusedConv carrying the Conv's
// attributes plus
//   activation        "Relu" | "LeakyRelu" | "Clip" | "Sigmoid" | "Tanh" |
//                     "HardSigmoid" | "HardSwish" | "Swish"
//   activation_alpha  LeakyRelu's, HardSigmoid's and Swish's alpha
//   activation_beta   HardSigmoid's beta
//   activation_min, activation_max   Clip's bounds
// Every Conv path takes every kind: oneDNN as a post-op (HardSigmoid, which
// oneDNN 2.6 lacks, sends the Conv to the in-house paths), the AVX-512
// kernels through VecActivation (with_kind: Relu, Clip, LeakyRelu and SiLU get
// their own instantiation, the rest kAny), the rest through
// FusedActivation::apply_rows (unary_f32.hpp's vector code).
// (plugins/common/activation_match.hpp matches the activation,
// fused_activation.hpp reads the attributes). A ConvAdd takes the
// activation after its sum the same way (fuse_conv_add.cpp).
//
// An inference BatchNormalization followed by an activation (DenseNet's and
// pre-activation ResNets' BatchNorm -> Relu ahead of each Conv, where no Conv
// precedes the BatchNorm to fold it into) becomes one ai.singa.cpu
// FusedBatchNorm with the same attributes: one pass over the tensor instead
// of two (plugins/ops_nn/batch_norm.cpp).
#include "fuse_passes.hpp"
#include "conv_match.hpp"

#include <activation_match.hpp>

namespace singa {
namespace nn {
namespace passes {

namespace {

// A BatchNormalization with running statistics (one output, spatial).
bool inference_batch_norm(const GraphNode& n) {
  return standard_op(n, "BatchNormalization") && n.num_outputs() == 1 && n.attr_int("training_mode", 0) == 0 &&
         n.attr_int("spatial", 1) == 1;
}

}  // namespace

int fuse_conv_activations(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes()) {
    if (!n.alive()) continue;
    const bool conv_add = cpu_op(n, "ConvAdd"), batch_norm = inference_batch_norm(n);
    if (!(conv_add || batch_norm || conv_like(n)) || n.num_outputs() != 1 || has_activation(n)) continue;
    const std::string y = n.output_name(0);
    if (y.empty() || !float_value(g, y)) continue;
    std::vector<GraphNode> act;
    std::vector<sdk::Attr> attrs;
    if (!ops::match_activation(g, y, act, attrs)) continue;
    NewNode f(kCpuDomain, conv_add ? "ConvAdd" : batch_norm ? "FusedBatchNorm" : "FusedConv");
    f.name = n.name();
    f.opset = 1;
    f.inputs = n.input_names();
    f.outputs = {act.back().output_name(0)};
    f.attrs_from = n.raw();
    f.attrs = std::move(attrs);
    act.insert(act.begin(), n);
    g.replace(act, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
