// Gemm followed by an activation (Relu, LeakyRelu, Clip, Sigmoid, Tanh,
// HardSigmoid, HardSwish, Swish or SiLU) that alone reads its output (an
// MLP's hidden layer, MatMul+Add turned Gemm by the core): one ai.singa.cpu
// FusedGemm with the Gemm's attributes and the activation's
// (activation_match.hpp), which the Gemm kernel applies while the product
// is still in cache. FusedGemm has Gemm-11's semantics (C optional,
// broadcast to [M, N]), so only Gemms from opset 11 on are fused.
#include "fuse_gemm_activation.hpp"

#include <activation_match.hpp>
#include <cpu_domain.hpp>

namespace singa {
namespace ops {
namespace math {

int fuse_gemm_activations(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode gemm : g.nodes()) {
    if (!gemm.alive()) continue;
    const std::string d = gemm.domain();
    if (!(d.empty() || d == "ai.onnx") || gemm.op_type() != "Gemm" || gemm.opset() < 11 ||
        gemm.num_outputs() != 1)
      continue;
    const std::string y = gemm.output_name(0);
    singa_value_info info;
    if (y.empty() || g.is_output(y) || !g.value_info(y, info) || info.onnx_dtype != SINGA_ONNX_FLOAT) continue;
    std::vector<sdk::GraphNode> act;
    std::vector<sdk::Attr> attrs;
    if (!match_activation(g, y, act, attrs)) continue;
    sdk::NewNode f(kCpuDomain, "FusedGemm");
    f.name = gemm.name();
    f.opset = 1;
    f.inputs = gemm.input_names();
    f.outputs = {act.back().output_name(0)};
    f.attrs_from = gemm.raw();
    f.attrs = std::move(attrs);
    act.insert(act.begin(), gemm);
    g.replace(act, {f});
    ++fused;
  }
  return fused;
}

void register_gemm_passes(sdk::Registrar& reg) {
  sdk::register_graph_pass(reg, kGemmActivationsPass, "cpu", 900, fuse_gemm_activations);
}

}  // namespace math
}  // namespace ops
}  // namespace singa
