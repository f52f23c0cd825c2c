// The score step of a QDQ transformer's attention,
//
//   QuantizeLinear(Softmax(DequantizeLinear(s) [Div|Mul c] [+ mask], axis=-1))
//
// with scalar constant scales, zero points and c and a float mask that
// broadcasts into the scores, becomes one QdqSoftmax (qdq_softmax.cpp) that
// reads the 8-bit scores and writes the 8-bit probabilities row by row
// instead of four float score tensors. Every float between the nodes must
// have no other reader.
#include "fuse_qdq_softmax.hpp"
#include "qdq_match.hpp"

#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

// A float value whose known shape broadcasts into `into` without enlarging it.
bool mask_like(const Graph& g, const std::string& m, const std::vector<int64_t>& into) {
  if (!float_value(g, m)) return false;
  singa_value_info info;
  if (!g.value_info(m, info) || info.ndim < 0 || size_t(info.ndim) > into.size()) return false;
  const std::vector<int64_t> ms = shape_of(g, m);
  if (ms.size() != size_t(info.ndim)) return false;
  for (size_t k = 1; k <= ms.size(); ++k) {
    const int64_t md = ms[ms.size() - k], xd = into[into.size() - k];
    if (md != 1 && md != xd) return false;  // unknown extents must be the same symbol's (-1 on both)
  }
  return true;
}

bool fuse_one(Graph& g, GraphNode sm) {
  if (!standard_op(sm, "Softmax") || sm.num_outputs() != 1 || sm.output_name(0).empty()) return false;
  const std::vector<int64_t> xs = shape_of(g, sm.input_name(0));
  if (xs.empty()) return false;
  const int64_t rank = int64_t(xs.size());
  int64_t ax = sm.attr_int("axis", sm.opset() >= 13 ? -1 : 1);
  if (ax < 0) ax += rank;
  if (ax != rank - 1) return false;
  GraphNode q = sole_reader(g, sm.output_name(0));
  if (!output_q(g, q)) return false;

  std::vector<GraphNode> gone{sm, q};
  std::string cur = sm.input_name(0), mask;
  GraphNode n = g.producer(cur);
  if (!n.valid() || !(sole_reader(g, cur) == sm)) return false;
  if (standard_op(n, "Add") && n.num_inputs() == 2 && n.num_outputs() == 1) {
    bool ok = false;
    for (size_t k : {0, 1}) {
      GraphNode p = g.producer(n.input_name(k));
      if (!p.valid() || !(sole_reader(g, n.input_name(k)) == n) || !mask_like(g, n.input_name(1 - k), xs)) continue;
      if (!(standard_op(p, "Div") || standard_op(p, "Mul") || activation_dq(g, p))) continue;
      if (shape_of(g, n.input_name(k)) != xs) continue;
      mask = n.input_name(1 - k);
      gone.push_back(n);
      cur = n.input_name(k);
      n = p;
      ok = true;
      break;
    }
    if (!ok) return false;
  }
  std::string scale_op;
  float c = 1.0f;
  if ((standard_op(n, "Div") || standard_op(n, "Mul")) && n.num_inputs() == 2 && n.num_outputs() == 1) {
    const sdk::Tensor ct = g.constant(n.input_name(1));
    if (!ct.present() || ct.dtype() != SINGA_ONNX_FLOAT || ct.numel() != 1) return false;
    c = ct.data<float>()[0];
    scale_op = standard_op(n, "Div") ? "Div" : "Mul";
    cur = n.input_name(0);
    gone.push_back(n);
    n = g.producer(cur);
    if (!n.valid() || !(sole_reader(g, cur) == gone.back())) return false;
  }
  if (!activation_dq(g, n) || shape_of(g, n.output_name(0)) != xs) return false;
  gone.push_back(n);

  NewNode f(kCpuDomain, "QdqSoftmax");
  f.name = sm.name();
  f.opset = 1;
  f.inputs = dq_inputs(n);
  f.inputs.push_back(q.input_name(1));
  f.inputs.push_back(q.num_inputs() > 2 ? q.input_name(2) : std::string());
  if (!mask.empty()) f.inputs.push_back(mask);
  while (f.inputs.back().empty()) f.inputs.pop_back();
  f.outputs = {q.output_name(0)};
  if (!scale_op.empty()) {
    f.attrs.push_back(sdk::Attr("scale_op", scale_op));
    f.attrs.push_back(sdk::Attr("c", c));
  }
  if (!g.has_kernel(kCpuDomain, "QdqSoftmax", 1)) return false;
  g.replace(gone, {f});
  return true;
}

}  // namespace

int fuse_qdq_softmaxes(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes())
    if (n.alive() && fuse_one(g, n)) ++fused;
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
