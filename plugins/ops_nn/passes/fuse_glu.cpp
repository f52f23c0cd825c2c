// A gated linear unit as torch exports nn.GLU / F.glu (a conformer's
// convolution module, gated CNNs, GLU feed-forwards):
//
//   Split(X, axis) -> a, b;  Sigmoid(b) -> s;  Mul(a, s) or Mul(s, a)
//
// becomes one ai.singa.cpu Glu (glu.cpp) that reads each half once, on any
// axis and either half as the gate. The Split must make two equal halves of
// a statically even, float axis; each half and the gate must have no other
// reader and be no graph output.
#include "fuse_passes.hpp"

#include <activation_match.hpp>
#include <cpu_domain.hpp>

namespace singa {
namespace nn {
namespace passes {
namespace {

// The sole reader of `v`, or an invalid node.
sdk::GraphNode only_reader(const sdk::Graph& g, const std::string& v) {
  const std::vector<sdk::GraphNode> r = g.consumers(v);
  if (v.empty() || g.is_output(v) || r.size() != 1) return sdk::GraphNode(nullptr, g.raw());
  return r[0];
}

// X's axis (normalized) when `split` cuts a static, even, float axis of X into two equal halves; -1 otherwise.
int64_t halving_axis(const sdk::Graph& g, const sdk::GraphNode& split) {
  const std::string d = split.domain();
  if (!(d.empty() || d == "ai.onnx") || split.op_type() != "Split" || split.num_outputs() != 2 ||
      split.num_inputs() < 1 || split.num_inputs() > 2)
    return -1;
  singa_value_info xi;
  if (!g.value_info(split.input_name(0), xi) || xi.onnx_dtype != SINGA_ONNX_FLOAT || xi.ndim <= 0) return -1;
  int64_t ax = split.attr_int("axis", 0);
  if (ax < 0) ax += xi.ndim;
  if (ax < 0 || ax >= xi.ndim || xi.dims[ax] <= 0 || xi.dims[ax] % 2 != 0) return -1;
  if (split.has_attr("num_outputs") && split.attr_int("num_outputs", 2) != 2) return -1;
  std::vector<int64_t> sizes = split.attr_ints("split");
  if (split.num_inputs() == 2 && !split.input_name(1).empty()) {
    const sdk::Tensor c = g.constant(split.input_name(1));
    if (!c.present()) return -1;
    sizes = c.to_int_vector();
  }
  if (!sizes.empty() && (sizes.size() != 2 || sizes[0] != xi.dims[ax] / 2 || sizes[1] != xi.dims[ax] / 2)) return -1;
  return ax;
}

}  // namespace

int fuse_glus(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode split : g.nodes()) {
    if (!split.alive()) continue;
    const int64_t axis = halving_axis(g, split);
    if (axis < 0) continue;
    for (int gate = 0; gate < 2; ++gate) {
      const std::string v = split.output_name(size_t(1 - gate)), gv = split.output_name(size_t(gate));
      sdk::GraphNode sig = only_reader(g, gv), mul = only_reader(g, v);
      if (!sig.valid() || !mul.valid() || !ops::standard_node(sig, "Sigmoid", 1) || !ops::standard_node(mul, "Mul", 2))
        continue;
      const std::string s = sig.output_name(0);
      if (!only_reader(g, s).valid() || only_reader(g, s).raw() != mul.raw()) continue;
      if (!((mul.input_name(0) == v && mul.input_name(1) == s) || (mul.input_name(0) == s && mul.input_name(1) == v)))
        continue;
      sdk::NewNode f(ops::kCpuDomain, "Glu");
      f.name = split.name();
      f.opset = 1;
      f.inputs = {split.input_name(0)};
      f.outputs = {mul.output_name(0)};
      f.attrs.push_back(sdk::Attr("axis", axis));
      f.attrs.push_back(sdk::Attr("gate", int64_t(gate)));
      g.replace({split, sig, mul}, {f});
      ++fused;
      break;
    }
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
