// A classifier head: a Conv whose GlobalAveragePool runs inside it
// (fuse_conv_mean.cpp), a Flatten of the means, and a Gemm with constant
// weights (MobileNetV2: 320 -> 1280 on 7x7, then 1280 -> 1000). The three
// become one ai.singa.cpu ConvMeanGemm node:
//
//   ConvMeanGemm(X, W, B?, Wfc, Cfc?) -> Y
//     Y = Gemm(Flatten(GlobalAveragePool(act(Conv(X, W, B)))), Wfc, Cfc, transB)
//
// Why: the Gemm reads its weights once per run, and in a net they come from
// memory (the other layers' weights pushed them out of L3): MobileNetV2's 5
// MiB took 0.25 ms at 1 thread, against 0.05 hot. The fused kernel
// (conv.cpp, classifier_head_f32.hpp) brings them in while the Conv, bound
// by its multiply-adds, runs. Gemm of alpha 1, beta 1 and no transA, its
// bias a constant row, no fused activation.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {

// The Gemm computes [N, M] x Wfc + Cfc with nothing the fused kernel leaves out.
bool classifier_gemm(const Graph& g, const GraphNode& gemm, const std::string& a, int64_t M) {
  if (!standard_op(gemm, "Gemm") || gemm.num_inputs() < 2 || gemm.num_inputs() > 3 || gemm.input_name(0) != a ||
      gemm.num_outputs() != 1 || gemm.output_name(0).empty())
    return false;
  if (gemm.attr_int("transA", 0) != 0 || gemm.attr_float("alpha", 1.f) != 1.f) return false;
  sdk::Tensor w = float_constant(g, gemm, 1);
  const bool trans_b = gemm.attr_int("transB", 0) != 0;
  if (!w.present() || w.ndim() != 2 || w.dim(trans_b ? 1 : 0) != M) return false;
  const int64_t outputs = w.dim(trans_b ? 0 : 1);
  if (gemm.num_inputs() < 3 || gemm.input_name(2).empty()) return true;
  if (gemm.attr_float("beta", 1.f) != 1.f) return false;
  sdk::Tensor c = float_constant(g, gemm, 2);
  if (!c.present()) return false;
  return (c.ndim() == 1 && c.dim(0) == outputs) || (c.ndim() == 2 && c.dim(0) == 1 && c.dim(1) == outputs);
}

int fuse_conv_mean_gemms(Graph& g) {
  int fused = 0;
  for (GraphNode conv : g.nodes()) {
    if (!conv.alive() || !cpu_op(conv, "FusedConv") || conv.attr_int("global_average_pool", 0) != 1 ||
        conv_weight_shape(g, conv).empty() || conv.num_outputs() != 1 || conv.output_name(0).empty())
      continue;
    const auto means = shape_of(g, conv.output_name(0));
    if (means.size() != 4 || means[1] <= 0) continue;
    GraphNode flatten = sole_reader(g, conv.output_name(0));
    if (!flatten.valid() || !standard_op(flatten, "Flatten") || flatten.num_inputs() != 1 ||
        flatten.attr_int("axis", 1) != 1 || flatten.num_outputs() != 1 || flatten.output_name(0).empty())
      continue;
    GraphNode gemm = sole_reader(g, flatten.output_name(0));
    if (!gemm.valid() || !classifier_gemm(g, gemm, flatten.output_name(0), means[1])) continue;
    NewNode f(kCpuDomain, "ConvMeanGemm");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = conv.input_names();
    f.inputs.resize(3);
    for (size_t k = 1; k < gemm.num_inputs(); ++k)
      if (!gemm.input_name(k).empty()) f.inputs.push_back(gemm.input_name(k));
    f.outputs = {gemm.output_name(0)};
    f.attrs_from = conv.raw();
    f.attrs.push_back(sdk::Attr("transB", gemm.attr_int("transB", 0)));
    g.replace({conv, flatten, gemm}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
