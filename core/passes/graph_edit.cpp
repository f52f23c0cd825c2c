#include "graph_edit.hpp"

#include <set>

namespace singa {
namespace passes {

void relink(graph::Graph& g) {
  for (auto& v : g.values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].inputs)
      if (v >= 0) {
        auto& c = g.values[size_t(v)].consumers;
        if (c.empty() || c.back() != int(i)) c.push_back(int(i));
      }
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[size_t(v)].producer = int(i);
  }
}

void compact(graph::Graph& g, const std::vector<bool>& dead) {
  std::vector<graph::Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (i >= dead.size() || !dead[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  std::vector<bool> used(g.values.size(), false);
  auto mark = [&](int v) {
    if (v >= 0) used[size_t(v)] = true;
  };
  for (const auto& n : g.nodes) {
    for (int v : n.inputs) mark(v);
    for (int v : n.outputs) mark(v);
  }
  for (int v : g.inputs) mark(v);
  for (int v : g.outputs) mark(v);
  for (int v : g.outer) mark(v);
  std::vector<int> remap(g.values.size(), -1);
  std::vector<graph::Value> values;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!used[v]) continue;
    remap[v] = int(values.size());
    values.push_back(std::move(g.values[v]));
  }
  g.values = std::move(values);
  auto fix = [&](std::vector<int>& ids) {
    for (int& v : ids)
      if (v >= 0) v = remap[size_t(v)];
  };
  for (auto& n : g.nodes) {
    fix(n.inputs);
    fix(n.outputs);
  }
  fix(g.inputs);
  fix(g.outputs);
  fix(g.outer);
  g.index.clear();
  for (size_t v = 0; v < g.values.size(); ++v) g.index[g.values[v].name] = int(v);
  relink(g);
}

int add_initializer(graph::Graph& g, const std::string& hint, Tensor t) {
  std::string name = hint;
  for (int k = 1; g.index.count(name); ++k) name = hint + "_" + std::to_string(k);
  graph::Value v;
  v.name = name;
  v.kind = graph::TypeKind::kTensor;
  v.dtype = t.dtype();
  v.rank_known = true;
  v.dims = t.shape();
  v.dim_params.assign(t.shape().size(), "");
  v.is_initializer = true;
  v.constant = std::move(t);
  g.values.push_back(std::move(v));
  int id = int(g.values.size()) - 1;
  g.index[name] = id;
  return id;
}

bool plain_onnx_node(const graph::Node& n) {
  const std::string& d = n.proto.domain();
  return (d.empty() || d == "ai.onnx") && n.subgraphs.empty() && n.explicit_inputs == n.inputs.size();
}

bool single_use(const graph::Graph& g, int value) {
  const auto& v = g.values[size_t(value)];
  return !v.is_output && v.consumers.size() == 1;
}

bool plain_op(const graph::Node& n, const char* op, size_t arity) {
  return plain_onnx_node(n) && n.proto.op_type() == op && (!arity || n.inputs.size() == arity);
}

graph::Node* sole_reader(graph::Graph& g, int value, const char* op, size_t arity) {
  if (value < 0 || !single_use(g, value)) return nullptr;
  graph::Node& n = g.nodes[size_t(g.values[size_t(value)].consumers[0])];
  return plain_op(n, op, arity) ? &n : nullptr;
}

size_t index_of(const graph::Graph& g, const graph::Node& n) { return size_t(&n - g.nodes.data()); }

const Tensor* float_constant(const graph::Graph& g, const graph::Node& n, size_t slot) {
  if (slot >= n.inputs.size() || n.inputs[slot] < 0) return nullptr;
  const auto& v = g.values[size_t(n.inputs[slot])];
  if (!v.is_initializer || v.is_input || !v.constant.defined() || v.constant.dtype() != SINGA_ONNX_FLOAT ||
      !v.constant.on_host())
    return nullptr;
  return &v.constant;
}

const ::onnx::AttributeProto* find_attr(const graph::Node& n, const std::string& name) {
  for (const auto& a : n.proto.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t int_attr(const graph::Node& n, const std::string& name, int64_t dflt) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : dflt;
}

void add_int_attr(::onnx::NodeProto& p, const std::string& name, int64_t v) {
  auto* a = p.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void add_float_attr(::onnx::NodeProto& p, const std::string& name, float v) {
  auto* a = p.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void adopt_output(graph::Graph& g, size_t i, int value) {
  graph::Node& n = g.nodes[i];
  n.outputs[0] = value;
  n.proto.set_output(0, g.values[size_t(value)].name);
  g.values[size_t(value)].producer = int(i);
}

std::string node_name(const graph::Graph& g, const graph::Node& n) {
  return n.proto.name().empty() ? g.values[size_t(n.outputs[0])].name : n.proto.name();
}

void absorb_reader(graph::Graph& g, size_t i, size_t reader, const std::string& fused, std::vector<bool>& dead) {
  graph::Node& n = g.nodes[i];
  n.label = "node '" + node_name(g, n) + "' (" + fused + ")";
  adopt_output(g, i, g.nodes[reader].outputs[0]);
  dead[reader] = true;
}

}  // namespace passes
}  // namespace singa
