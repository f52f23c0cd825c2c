// The 8-bit steps between QdqConvs (fuse_qdq_conv.cpp): with scalar
// constant scales and zero points, a and b of one known shape,
//
//   QuantizeLinear(Relu?(DequantizeLinear(x)))                          -> QdqRequantize
//   QuantizeLinear(Relu?(DequantizeLinear(a) + DequantizeLinear(b)))    -> QdqAdd
//
// (qdq_conv_elementwise.cpp), which compute the same float steps block by
// block, bit for bit, without float tensors between. An Add of
// DequantizeLinear(a) and a float b of a's shape [+ Relu] left over (a
// residual sum read in float) becomes DqAdd the same way.
#include "fuse_passes.hpp"
#include "qdq_match.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

bool known_same_shape(const Graph& g, const std::string& a, const std::string& b) {
  const std::vector<int64_t> sa = shape_of(g, a), sb = shape_of(g, b);
  return !sa.empty() && sa == sb && std::none_of(sa.begin(), sa.end(), [](int64_t d) { return d < 0; });
}

// Q(Act(DQ(x))) or Q(Act(DQ(a) + DQ(b))) ending at QuantizeLinear `q`.
bool fuse_elementwise(Graph& g, GraphNode q) {
  if (!output_q(g, q)) return false;
  GraphNode src = g.producer(q.input_name(0));
  if (!src.valid() || !(sole_reader(g, q.input_name(0)) == q)) return false;
  GraphNode relu(nullptr, g.raw());
  if (standard_op(src, "Relu") && src.num_outputs() == 1) {
    relu = src;
    src = g.producer(relu.input_name(0));
    if (!src.valid() || !(sole_reader(g, relu.input_name(0)) == relu)) return false;
  }
  const std::vector<std::string> yq{q.input_name(1), q.num_inputs() > 2 ? q.input_name(2) : std::string()};
  std::vector<GraphNode> gone;
  NewNode f(kCpuDomain, "");
  if (activation_dq(g, src)) {
    f.op_type = "QdqRequantize";
    f.inputs = dq_inputs(src);
    gone.push_back(src);
  } else if (standard_op(src, "Add") && src.num_inputs() == 2 && src.num_outputs() == 1) {
    GraphNode da = g.producer(src.input_name(0)), db = g.producer(src.input_name(1));
    if (!activation_dq(g, da) || !activation_dq(g, db)) return false;
    if (!known_same_shape(g, src.input_name(0), src.input_name(1))) return false;
    f.op_type = "QdqAdd";
    f.inputs = dq_inputs(da);
    for (const std::string& v : dq_inputs(db)) f.inputs.push_back(v);
    for (GraphNode d : {da, db})
      if (sole_reader(g, d.output_name(0)) == src) gone.push_back(d);
    gone.push_back(src);
  } else {
    return false;
  }
  f.inputs.insert(f.inputs.end(), yq.begin(), yq.end());
  while (f.inputs.back().empty()) f.inputs.pop_back();
  f.name = q.name();
  f.opset = 1;
  f.outputs = {q.output_name(0)};
  if (relu.valid()) {
    f.attrs.push_back(sdk::Attr("activation", "Relu"));
    gone.push_back(relu);
  }
  gone.push_back(q);
  if (!g.has_kernel(kCpuDomain, f.op_type, 1)) return false;
  g.replace(gone, {f});
  return true;
}

// Act(DequantizeLinear(a) + b) with b float of the same known shape: DqAdd.
bool fuse_dq_add(Graph& g, GraphNode add) {
  if (!standard_op(add, "Add") || add.num_inputs() != 2 || add.num_outputs() != 1 || add.output_name(0).empty() ||
      add.input_name(0) == add.input_name(1))
    return false;
  for (size_t k : {0, 1}) {
    GraphNode dq = g.producer(add.input_name(k));
    const std::string b = add.input_name(1 - k);
    if (!activation_dq(g, dq) || !(sole_reader(g, dq.output_name(0)) == add) || !float_value(g, b)) continue;
    if (!known_same_shape(g, add.input_name(k), b)) continue;
    NewNode f(kCpuDomain, "DqAdd");
    f.name = add.name();
    f.opset = 1;
    f.inputs = dq_inputs(dq);
    f.inputs.push_back(b);
    f.outputs = {add.output_name(0)};
    std::vector<GraphNode> gone{dq, add};
    GraphNode relu = sole_relu(g, add.output_name(0));
    if (relu.valid()) {
      f.attrs.push_back(sdk::Attr("activation", "Relu"));
      f.outputs = {relu.output_name(0)};
      gone.push_back(relu);
    }
    if (!g.has_kernel(kCpuDomain, "DqAdd", 1)) return false;
    g.replace(gone, {f});
    return true;
  }
  return false;
}

}  // namespace

int fuse_qdq_elementwise(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes())
    if (n.alive() && standard_op(n, "QuantizeLinear") && fuse_elementwise(g, n)) ++fused;
  // The residual sums left in float.
  for (GraphNode n : g.nodes())
    if (n.alive() && fuse_dq_add(g, n)) ++fused;
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
