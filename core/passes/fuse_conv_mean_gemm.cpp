// A classifier head: a Conv whose GlobalAveragePool runs inside it
// (fuse_conv_mean.cpp), a Flatten of the means, and a Gemm with constant
// weights (MobileNetV2: 320 -> 1280 on 7x7, then 1280 -> 1000). The three
// become one ai.singa ConvMeanGemm node:
//
//   ConvMeanGemm(X, W, B?, Wfc, Cfc?) -> Y
//     Y = Gemm(Flatten(GlobalAveragePool(act(Conv(X, W, B)))), Wfc, Cfc, transB)
//
// Why: the Gemm reads its weights once per run, and in a net they come from
// memory (the other layers' weights pushed them out of L3): MobileNetV2's 5
// MiB took 0.25 ms at 1 thread, against 0.05 hot. The fused kernel
// (plugins/ops_nn/conv.cpp, classifier_head_f32.hpp) brings them in while
// the Conv, bound by its multiply-adds, runs: at batch 1 a panel of them per
// panel of means, multiplied as soon as those are there; for larger batches
// all of them, for one sgemm after the Conv. Runs after fuse_conv_means;
// CPU only; Gemm of alpha 1, beta 1 and no transA, its bias a constant row.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

namespace {

// The Gemm computes [N, M] x Wfc + Cfc with nothing the fused kernel leaves
// out: constant float weights over M inputs, a constant bias row (or none),
// alpha and beta 1, A not transposed, no fused activation.
bool classifier_gemm(const graph::Graph& g, const graph::Node& gemm, int a, int64_t M) {
  if (gemm.inputs.size() < 2 || gemm.inputs.size() > 3 || gemm.inputs[0] != a || gemm.outputs.size() != 1 ||
      gemm.outputs[0] < 0)
    return false;
  if (int_attr(gemm, "transA", 0) != 0 || float_attr(gemm, "alpha", 1.f) != 1.f || find_attr(gemm, "activation"))
    return false;
  const Tensor* w = float_constant(g, gemm, 1);
  const bool trans_b = int_attr(gemm, "transB", 0) != 0;
  if (!w || w->shape().size() != 2 || w->shape()[trans_b ? 1 : 0] != M) return false;
  const int64_t outputs = w->shape()[trans_b ? 0 : 1];
  if (gemm.inputs.size() < 3 || gemm.inputs[2] < 0) return true;
  if (float_attr(gemm, "beta", 1.f) != 1.f) return false;
  const Tensor* c = float_constant(g, gemm, 2);
  if (!c) return false;
  const auto& cs = c->shape();
  return (cs.size() == 1 && cs[0] == outputs) || (cs.size() == 2 && cs[0] == 1 && cs[1] == outputs);
}

}  // namespace

int fuse_conv_mean_gemms(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& conv = g.nodes[i];
    if (dead[i] || !plain_op(conv, "Conv") || int_attr(conv, "global_average_pool", 0) != 1 || !conv_weights(g, conv) ||
        conv.outputs.size() != 1 || conv.outputs[0] < 0)
      continue;
    const auto& means = g.values[size_t(conv.outputs[0])];
    if (!means.rank_known || means.dims.size() != 4 || means.dims[1] <= 0) continue;
    const int64_t M = means.dims[1];
    graph::Node* flatten = sole_reader(g, conv.outputs[0], "Flatten", 1);
    if (!flatten || int_attr(*flatten, "axis", 1) != 1 || flatten->outputs.size() != 1 || flatten->outputs[0] < 0)
      continue;
    graph::Node* gemm = sole_reader(g, flatten->outputs[0], "Gemm");
    if (!gemm || !classifier_gemm(g, *gemm, flatten->outputs[0], M)) continue;
    const size_t fi = index_of(g, *flatten), gi = index_of(g, *gemm);
    ::onnx::NodeProto& p = conv.proto;
    while (p.input_size() < 3) p.add_input(std::string());
    conv.inputs.resize(3, -1);
    for (size_t k = 1; k < gemm->inputs.size(); ++k) {
      if (gemm->inputs[k] < 0) continue;
      p.add_input(g.values[size_t(gemm->inputs[k])].name);
      conv.inputs.push_back(gemm->inputs[k]);
    }
    conv.explicit_inputs = conv.inputs.size();
    add_int_attr(p, "transB", int_attr(*gemm, "transB", 0));
    p.set_op_type("ConvMeanGemm");
    p.set_domain(kFusedDomain);
    conv.opset = 1;
    dead[fi] = true;
    absorb_reader(g, i, gi, "Conv+GlobalAveragePool+Flatten+Gemm", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
