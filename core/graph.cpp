#include "graph.hpp"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <queue>
#include <set>

namespace singa {
namespace graph {

namespace {

std::string node_label(const ::onnx::NodeProto& n, size_t i) {
  std::string name = n.name().empty() ? "#" + std::to_string(i) : n.name();
  std::string op = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "::" + n.op_type();
  return "node '" + name + "' (" + op + ")";
}

void read_type(const ::onnx::TypeProto& type, Value& v) {
  if (!type.has_tensor_type()) return;
  const auto& tt = type.tensor_type();
  v.dtype = tt.elem_type();
  if (!tt.has_shape()) return;
  v.rank_known = true;
  v.dims.clear();
  v.dim_params.clear();
  for (const auto& d : tt.shape().dim()) {
    v.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    v.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
}

// Fixes symbolic input dims the caller bound by name, before shape inference.
void bind_dims(::onnx::ModelProto& model, const std::map<std::string, int64_t>& dims) {
  if (dims.empty()) return;
  for (auto& in : *model.mutable_graph()->mutable_input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    for (auto& d : *in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_param()) continue;
      auto it = dims.find(d.dim_param());
      if (it == dims.end()) continue;
      if (it->second < 0) throw Error(SINGA_INVALID_ARGUMENT, "dimension '" + it->first + "' bound to a negative value");
      d.set_dim_value(it->second);
    }
  }
}

}  // namespace

Graph build(::onnx::ModelProto model, const std::string& source, const std::string& base_dir,
            const onnx::PrepareOptions& options) {
  Graph g;
  g.source = source;
  g.base_dir = base_dir;
  for (const auto& op : model.opset_import()) g.opsets[normalize_domain(op.domain())] = op.version();
  if (model.ir_version() < 3 && g.opsets.empty()) g.opsets[""] = 1;

  if (options.check_model) {
    try {
      ::onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      throw Error(SINGA_INVALID_ARGUMENT, source + ": invalid model: " + e.what());
    }
  }
  bind_dims(model, options.dims);
  // Strict first, so a shape contradiction is reported; some valid models
  // trip ONNX's inference, so fall back to lenient and keep the message.
  try {
    ::onnx::ModelProto strict = model;
    ::onnx::shape_inference::InferShapes(strict, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(false, 1, true));
    model = std::move(strict);
  } catch (const std::exception& e) {
    g.warnings.push_back(std::string("shape inference: ") + e.what());
    try {
      ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), ::onnx::ShapeInferenceOptions(false, 0, false));
    } catch (const std::exception& e2) {
      g.warnings.push_back(std::string("shape inference (lenient): ") + e2.what());
    }
  }

  const auto& gp = model.graph();
  auto add_value = [&](const std::string& name) -> int {
    auto it = g.index.find(name);
    if (it != g.index.end()) return it->second;
    Value v;
    v.name = name;
    g.values.push_back(v);
    g.index[name] = int(g.values.size() - 1);
    return int(g.values.size() - 1);
  };

  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) throw Error(SINGA_INVALID_ARGUMENT, source + ": an initializer has no name");
    if (g.index.count(init.name())) throw Error(SINGA_INVALID_ARGUMENT, source + ": initializer '" + init.name() + "' is defined twice");
    int v = add_value(init.name());
    Value& val = g.values[v];
    val.is_initializer = true;
    try {
      val.constant = onnx::from_proto(init, base_dir);
    } catch (const Error& e) {
      throw Error(e.code(), source + ": initializer '" + init.name() + "': " + e.what());
    }
    val.dtype = val.constant.dtype();
    val.dims = val.constant.shape();
    val.rank_known = true;
    val.dim_params.assign(val.dims.size(), "");
  }
  if (gp.sparse_initializer_size() > 0)
    throw Error(SINGA_UNIMPLEMENTED, source + ": sparse initializers are not supported");
  for (const auto& in : gp.input()) {
    int v = add_value(in.name());
    Value& val = g.values[v];
    if (val.is_initializer) continue;  // IR < 4 lists initializers as inputs too
    if (val.is_input) throw Error(SINGA_INVALID_ARGUMENT, source + ": graph input '" + in.name() + "' is listed twice");
    val.is_input = true;
    read_type(in.type(), val);
    if (!in.type().has_tensor_type())
      throw Error(SINGA_UNIMPLEMENTED, source + ": graph input '" + in.name() + "' is not a tensor (sequences/maps are not supported)");
    g.inputs.push_back(v);
  }
  for (const auto& vi : gp.value_info()) {
    auto it = g.index.find(vi.name());
    int v = it == g.index.end() ? add_value(vi.name()) : it->second;
    if (!g.values[v].is_initializer && !g.values[v].is_input) read_type(vi.type(), g.values[v]);
  }

  // Nodes, with their producers; outputs must be unique.
  std::vector<Node> nodes;
  nodes.reserve(size_t(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.proto = np;
    n.label = node_label(np, size_t(i));
    std::string dom = normalize_domain(np.domain());
    auto op = g.opsets.find(dom);
    if (op == g.opsets.end())
      throw Error(SINGA_INVALID_ARGUMENT, source + ": " + n.label + " uses domain '" + np.domain() + "' which the model does not import");
    n.opset = op->second;
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int v = add_value(out);
      Value& val = g.values[v];
      if (val.producer >= 0 || val.is_initializer || val.is_input)
        throw Error(SINGA_INVALID_ARGUMENT, source + ": " + n.label + " output '" + out + "' is already produced by " +
                                                (val.producer >= 0 ? nodes[size_t(val.producer)].label : std::string("the graph's inputs/initializers")));
      val.producer = i;
      n.outputs.push_back(v);
    }
    nodes.push_back(std::move(n));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& in : nodes[i].proto.input()) {
      if (in.empty()) {
        nodes[i].inputs.push_back(-1);
        continue;
      }
      auto it = g.index.find(in);
      if (it == g.index.end() || (!g.values[it->second].is_input && !g.values[it->second].is_initializer && g.values[it->second].producer < 0))
        throw Error(SINGA_INVALID_ARGUMENT, source + ": " + nodes[i].label + " reads '" + in +
                                                "', which is no graph input, initializer or node output");
      nodes[i].inputs.push_back(it->second);
    }
  }

  // Topological order (Kahn); what is left over sits on a cycle.
  std::vector<int> indeg(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<int> deps;
    for (int v : nodes[i].inputs)
      if (v >= 0 && g.values[size_t(v)].producer >= 0) deps.insert(g.values[size_t(v)].producer);
    for (int d : deps) {
      users[size_t(d)].push_back(int(i));
      ++indeg[i];
    }
  }
  std::vector<int> order;
  std::queue<int> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (indeg[i] == 0) ready.push(int(i));
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop();
    order.push_back(i);
    for (int u : users[size_t(i)])
      if (--indeg[size_t(u)] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (indeg[i] > 0) throw Error(SINGA_INVALID_ARGUMENT, source + ": the graph has a cycle through " + nodes[i].label);
  }
  std::vector<int> new_index(nodes.size());
  for (size_t k = 0; k < order.size(); ++k) new_index[size_t(order[k])] = int(k);
  for (int o : order) g.nodes.push_back(std::move(nodes[size_t(o)]));
  for (auto& v : g.values)
    if (v.producer >= 0) v.producer = new_index[size_t(v.producer)];
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) g.values[size_t(v)].consumers.push_back(int(i));

  for (const auto& out : gp.output()) {
    auto it = g.index.find(out.name());
    if (it == g.index.end()) throw Error(SINGA_INVALID_ARGUMENT, source + ": graph output '" + out.name() + "' is never produced");
    Value& val = g.values[size_t(it->second)];
    if (val.dtype == 0 || !val.rank_known) read_type(out.type(), val);
    val.is_output = true;
    g.outputs.push_back(it->second);
  }
  return g;
}

}  // namespace graph
}  // namespace singa
