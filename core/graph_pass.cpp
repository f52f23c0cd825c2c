// Plugins' graph passes: the graph as a pass sees it, the one edit it may
// make (replace a group of nodes with new ones), and running the passes.
#include "graph_pass.hpp"

#include "passes/graph_edit.hpp"
#include "passes/passes.hpp"

#include <singa/error.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <algorithm>
#include <cstring>
#include <set>

namespace singa {

namespace {

singa_value_info info_of(const graph::Value& v) {
  singa_value_info info{};
  info.struct_size = sizeof(info);
  info.onnx_dtype = v.dtype;
  info.ndim = v.rank_known ? int32_t(std::min<size_t>(v.dims.size(), SINGA_MAX_DIMS)) : -1;
  for (int i = 0; i < info.ndim; ++i) info.dims[i] = v.dims[size_t(i)];
  return info;
}

const graph::Value* find_value(const singa_graph* sg, const char* name) {
  if (!sg || !name) return nullptr;
  auto it = sg->g->index.find(name);
  return it == sg->g->index.end() ? nullptr : &sg->g->values[size_t(it->second)];
}

// Re-describes every handle after an edit (node storage and value links moved).
void refresh(singa_graph& sg) {
  for (size_t i = 0; i < sg.handles.size(); ++i) {
    sg.handles[i]->index = i;
    describe_node(*sg.handles[i], *sg.g, sg.g->nodes[i]);
  }
}

// The node of `sg` behind a handle, or -1 when the handle is not one of its nodes.
int index_of_handle(const singa_graph* sg, const singa_node* n) {
  if (!n || n->graph != sg || n->index >= sg->handles.size() || sg->handles[n->index].get() != n) return -1;
  return int(n->index);
}

::onnx::AttributeProto to_attribute(const singa_attr& a) {
  if (a.struct_size < offsetof(singa_attr, tensor) + sizeof(a.tensor))
    throw Error(SINGA_INVALID_ARGUMENT, "singa_attr: struct_size " + std::to_string(a.struct_size) + " too small");
  if (!a.name || !*a.name) throw Error(SINGA_INVALID_ARGUMENT, "an attribute without a name");
  ::onnx::AttributeProto p;
  p.set_name(a.name);
  switch (a.type) {
    case SINGA_ATTR_INT:
      p.set_type(::onnx::AttributeProto::INT);
      p.set_i(a.i);
      break;
    case SINGA_ATTR_FLOAT:
      p.set_type(::onnx::AttributeProto::FLOAT);
      p.set_f(a.f);
      break;
    case SINGA_ATTR_STRING:
      p.set_type(::onnx::AttributeProto::STRING);
      p.set_s(a.s ? std::string(a.s, a.s_len) : std::string());
      break;
    case SINGA_ATTR_INTS:
      p.set_type(::onnx::AttributeProto::INTS);
      if (a.count && !a.ints) throw Error(SINGA_INVALID_ARGUMENT, std::string("attribute '") + a.name + "': null ints");
      for (size_t k = 0; k < a.count; ++k) p.add_ints(a.ints[k]);
      break;
    case SINGA_ATTR_FLOATS:
      p.set_type(::onnx::AttributeProto::FLOATS);
      if (a.count && !a.floats) throw Error(SINGA_INVALID_ARGUMENT, std::string("attribute '") + a.name + "': null floats");
      for (size_t k = 0; k < a.count; ++k) p.add_floats(a.floats[k]);
      break;
    case SINGA_ATTR_TENSOR: {
      if (!a.tensor || a.tensor->device.device_type != kDLCPU)
        throw Error(SINGA_INVALID_ARGUMENT, std::string("attribute '") + a.name + "': a tensor attribute must be on the host");
      p.set_type(::onnx::AttributeProto::TENSOR);
      *p.mutable_t() = onnx::to_proto(Tensor::copy_of(*a.tensor), "");
      break;
    }
    default:
      throw Error(SINGA_INVALID_ARGUMENT, std::string("attribute '") + a.name + "': unknown type " + std::to_string(a.type));
  }
  return p;
}

void set_attribute(::onnx::NodeProto& p, ::onnx::AttributeProto a) {
  for (auto& old : *p.mutable_attribute())
    if (old.name() == a.name()) {
      old = std::move(a);
      return;
    }
  *p.add_attribute() = std::move(a);
}

}  // namespace

bool kernel_registered(const std::string& domain, const std::string& op_type, int64_t opset, const std::string& device) {
  const std::string dom = normalize_domain(domain);
  if (core_op_types().count({dom, op_type})) return true;
  for (const KernelEntry* k : Runtime::instance().kernels(dom, op_type))
    if (k->def.since_version <= opset && opset <= k->last_opset && (device.empty() || k->device == device)) return true;
  return false;
}

void describe_node(singa_node& info, const graph::Graph& g, const graph::Node& node) {
  info.proto = &node.proto;
  info.opset = node.opset;
  info.inputs.clear();
  info.input_present.clear();
  info.constants.clear();
  info.outputs.clear();
  info.output_present.clear();
  info.constant_views.clear();
  const singa_value_info none{sizeof(singa_value_info), 0, -1, {}};
  for (int v : node.inputs) {
    info.input_present.push_back(v >= 0);
    info.inputs.push_back(v >= 0 ? info_of(g.values[size_t(v)]) : none);
    info.constants.push_back(v >= 0 && g.values[size_t(v)].is_initializer ? &g.values[size_t(v)].constant : nullptr);
  }
  for (int v : node.outputs) {
    info.output_present.push_back(v >= 0);
    info.outputs.push_back(v >= 0 ? info_of(g.values[size_t(v)]) : none);
  }
}

namespace host_graph {

size_t num_nodes(const singa_graph* g) { return g ? g->handles.size() : 0; }
const singa_node* node(const singa_graph* g, size_t i) { return g && i < g->handles.size() ? g->handles[i].get() : nullptr; }
const char* device(const singa_graph* g) { return g ? g->device.c_str() : ""; }

const char* option(const singa_graph* g, const char* key) {
  if (!g || !g->options || !key) return nullptr;
  auto it = g->options->find(key);
  return it == g->options->end() ? nullptr : it->second.c_str();
}

const singa_node* producer(const singa_graph* g, const char* value) {
  const graph::Value* v = find_value(g, value);
  return v && v->producer >= 0 ? g->handles[size_t(v->producer)].get() : nullptr;
}

namespace {
std::vector<int> unique_consumers(const graph::Value& v) {
  std::vector<int> c = v.consumers;
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}
}  // namespace

size_t num_consumers(const singa_graph* g, const char* value) {
  const graph::Value* v = find_value(g, value);
  return v ? unique_consumers(*v).size() : 0;
}

const singa_node* consumer(const singa_graph* g, const char* value, size_t i) {
  const graph::Value* v = find_value(g, value);
  if (!v) return nullptr;
  const std::vector<int> c = unique_consumers(*v);
  return i < c.size() ? g->handles[size_t(c[i])].get() : nullptr;
}

int32_t is_output(const singa_graph* g, const char* value) {
  const graph::Value* v = find_value(g, value);
  return v && v->is_output ? 1 : 0;
}

int32_t value_info(const singa_graph* g, const char* value, singa_value_info* out) {
  const graph::Value* v = find_value(g, value);
  if (!v || v->kind != graph::TypeKind::kTensor) return 0;
  if (out) {
    const size_t keep = out->struct_size ? std::min(out->struct_size, sizeof(singa_value_info)) : sizeof(singa_value_info);
    singa_value_info info = info_of(*v);
    std::memcpy(out, &info, keep);
    out->struct_size = keep;
  }
  return 1;
}

const DLTensor* constant(const singa_graph* g, const char* value) {
  const graph::Value* v = find_value(g, value);
  if (!v || !v->is_initializer || !v->constant.defined()) return nullptr;
  auto* sg = const_cast<singa_graph*>(g);
  sg->views.push_back(v->constant.dl());
  return &sg->views.back();
}

singa_status* add_constant(singa_graph* g, const char* hint, const DLTensor* value, char* name, size_t cap) {
  try {
    if (!g || !value) return make_status(SINGA_INVALID_ARGUMENT, "graph_add_constant: null argument");
    if (value->device.device_type != kDLCPU)
      return make_status(SINGA_INVALID_ARGUMENT, "graph_add_constant: the constant must be on the host");
    const std::string base = hint && *hint ? hint : "constant";
    const int id = passes::add_initializer(*g->g, base, Tensor::copy_of(*value));
    const std::string& chosen = g->g->values[size_t(id)].name;
    if (!name || cap <= chosen.size()) {
      return make_status(SINGA_INVALID_ARGUMENT, "graph_add_constant: the name '" + chosen + "' needs " +
                                                     std::to_string(chosen.size() + 1) + " bytes of room");
    }
    std::memcpy(name, chosen.c_str(), chosen.size() + 1);
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), std::string("graph_add_constant: ") + e.what());
  } catch (const std::exception& e) {
    return make_status(SINGA_INTERNAL, std::string("graph_add_constant: ") + e.what());
  }
}

namespace {

// Builds the new nodes of a replacement, checking everything before the
// graph changes: handles, names, what the replaced nodes leave behind,
// kernels, and that the result still has a topological order.
struct Replacement {
  graph::Graph& g;
  std::vector<bool> removed;
  size_t last = 0;
  std::vector<graph::Node> fresh;
  std::vector<std::string> new_values;  // names of values to create
  std::map<std::string, std::string> renamed;

  explicit Replacement(graph::Graph& graph) : g(graph), removed(graph.nodes.size(), false) {}

  std::string fresh_name(const std::string& want, const std::set<std::string>& taken) const {
    std::string n = want;
    for (int k = 1; g.index.count(n) || taken.count(n); ++k) n = want + "_" + std::to_string(k);
    return n;
  }
};

}  // namespace

singa_status* replace(singa_graph* sg, const singa_node* const* nodes, size_t num_nodes, const singa_node_spec* specs,
                      size_t num_specs) {
  try {
    if (!sg) return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: null graph");
    if ((num_nodes && !nodes) || (num_specs && !specs))
      return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: null node or spec array");
    if (num_nodes == 0) return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: no nodes to replace");
    graph::Graph& g = *sg->g;
    Replacement r(g);
    for (size_t k = 0; k < num_nodes; ++k) {
      const int i = index_of_handle(sg, nodes[k]);
      if (i < 0) return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: node " + std::to_string(k) + " is not a node of this graph (replaced already?)");
      if (r.removed[size_t(i)]) return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: " + g.nodes[size_t(i)].label + " is listed twice");
      if (!g.nodes[size_t(i)].subgraphs.empty())
        return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: " + g.nodes[size_t(i)].label + " has graph attributes; passes leave such nodes alone");
      r.removed[size_t(i)] = true;
      r.last = std::max(r.last, size_t(i));
    }
    const graph::Node& first = g.nodes[nodes[0]->index];
    // Values computed by the replaced nodes, and those the rest of the graph reads.
    std::set<std::string> group_out, needed;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!r.removed[i]) continue;
      for (int v : g.nodes[i].outputs) {
        if (v < 0) continue;
        const graph::Value& val = g.values[size_t(v)];
        group_out.insert(val.name);
        bool outside = val.is_output;
        for (int c : val.consumers) outside = outside || !r.removed[size_t(c)];
        if (outside) needed.insert(val.name);
      }
    }
    std::set<std::string> produced;  // by the specs, under their final names
    for (size_t s = 0; s < num_specs; ++s) {
      const singa_node_spec& sp = specs[s];
      if (sp.struct_size < offsetof(singa_node_spec, num_attrs) + sizeof(sp.num_attrs))
        return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: spec " + std::to_string(s) + ": struct_size too small");
      if (!sp.op_type || !*sp.op_type) return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: spec " + std::to_string(s) + " has no op_type");
      if ((sp.num_inputs && !sp.inputs) || (sp.num_outputs && !sp.outputs) || (sp.num_attrs && !sp.attrs))
        return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: spec " + std::to_string(s) + ": null array");
      graph::Node n;
      ::onnx::NodeProto& p = n.proto;
      const std::string domain = normalize_domain(sp.domain ? sp.domain : "");
      p.set_domain(domain);
      p.set_op_type(sp.op_type);
      p.set_name(sp.name && *sp.name ? std::string(sp.name)
                                     : first.proto.name() + (num_specs > 1 ? "/" + std::to_string(s) : std::string()));
      auto op = g.opsets.find(domain);
      n.opset = sp.opset > 0 ? sp.opset : (op != g.opsets.end() ? op->second : 1);
      const std::string what = "graph_replace: new node '" + p.name() + "' (" + (domain.empty() ? "" : domain + "::") + sp.op_type + ")";
      if (sp.attrs_from) {
        const int from = index_of_handle(sg, sp.attrs_from);
        if (from < 0) return make_status(SINGA_INVALID_ARGUMENT, what + ": attrs_from is not a node of this graph");
        for (const auto& a : g.nodes[size_t(from)].proto.attribute())
          if (a.type() != ::onnx::AttributeProto::GRAPH && a.type() != ::onnx::AttributeProto::GRAPHS) *p.add_attribute() = a;
      }
      for (size_t k = 0; k < sp.num_attrs; ++k) set_attribute(p, to_attribute(sp.attrs[k]));
      for (size_t k = 0; k < sp.num_inputs; ++k) {
        std::string in = sp.inputs[k] ? sp.inputs[k] : "";
        if (!in.empty()) {
          auto rn = r.renamed.find(in);
          if (rn != r.renamed.end()) in = rn->second;
          if (!produced.count(in)) {
            if (!g.index.count(in)) return make_status(SINGA_INVALID_ARGUMENT, what + ": input '" + in + "' is not a value of the graph");
            if (group_out.count(in))
              return make_status(SINGA_INVALID_ARGUMENT, what + ": input '" + in + "' is computed by a replaced node and by no earlier new node");
          }
        }
        p.add_input(in);
      }
      for (size_t k = 0; k < sp.num_outputs; ++k) {
        std::string out = sp.outputs[k] ? sp.outputs[k] : "";
        if (!out.empty()) {
          if (group_out.count(out) && !produced.count(out)) {
            // The replaced nodes' value, now computed here.
          } else {
            const std::string chosen = r.fresh_name(out, produced);
            r.renamed[out] = chosen;
            r.new_values.push_back(chosen);
            out = chosen;
          }
          produced.insert(out);
        }
        p.add_output(out);
      }
      if (!kernel_registered(domain, p.op_type(), n.opset, ""))
        return make_status(SINGA_NOT_FOUND, what + ": no loaded plugin has a kernel for it at opset " + std::to_string(n.opset));
      n.label = "node '" + p.name() + "' (" + p.op_type() + ")";
      r.fresh.push_back(std::move(n));
    }
    for (const std::string& v : needed)
      if (!produced.count(v))
        return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: value '" + v +
                                                       "' of a replaced node is read elsewhere, but no new node computes it");

    // The candidate order: kept nodes, the new ones where the last replaced node was.
    std::vector<graph::Node> order;
    std::vector<std::unique_ptr<singa_node>> handles;
    std::vector<bool> is_fresh;
    std::vector<size_t> order_retired;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (i == r.last)
        for (auto& n : r.fresh) {
          is_fresh.push_back(true);
          order.push_back(std::move(n));
          auto h = std::make_unique<singa_node>();
          h->graph = sg;
          h->options = sg->options;
          handles.push_back(std::move(h));
        }
      if (r.removed[i]) {
        order_retired.push_back(i);
        continue;
      }
      is_fresh.push_back(false);
      order.push_back(std::move(g.nodes[i]));
      handles.push_back(std::move(sg->handles[i]));
    }
    // Producers by name over the candidate, then a stable sort; a cycle undoes nothing yet.
    std::map<std::string, int> by_name;
    for (size_t i = 0; i < order.size(); ++i)
      for (const auto& o : order[i].proto.output())
        if (!o.empty()) by_name[o] = int(i);
    std::vector<std::set<int>> deps(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      for (const auto& in : order[i].proto.input()) {
        auto it = by_name.find(in);
        if (it != by_name.end() && it->second != int(i)) deps[i].insert(it->second);
      }
      for (size_t k = order[i].explicit_inputs; k < order[i].inputs.size(); ++k) {  // implicit (subgraph) inputs
        const int v = order[i].inputs[k];
        if (v < 0) continue;
        auto it = by_name.find(g.values[size_t(v)].name);
        if (it != by_name.end()) deps[i].insert(it->second);
      }
    }
    int stuck = -1;
    std::vector<int> sorted = graph::topological_order(deps, &stuck);
    if (stuck >= 0) {
      // Put the graph back as it was before refusing.
      std::vector<graph::Node> back;
      std::vector<std::unique_ptr<singa_node>> back_handles;
      size_t k = 0;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (i == r.last) k += r.fresh.size();
        if (r.removed[i]) continue;
        g.nodes[i] = std::move(order[k]);
        sg->handles[i] = std::move(handles[k]);
        ++k;
      }
      return make_status(SINGA_INVALID_ARGUMENT, "graph_replace: the new nodes would make a cycle through " + order[size_t(stuck)].label);
    }
    for (const std::string& name : r.new_values) {
      graph::Value v;
      v.name = name;
      v.kind = graph::TypeKind::kTensor;
      g.values.push_back(std::move(v));
      g.index[name] = int(g.values.size()) - 1;
    }
    for (size_t i = 0; i < order.size(); ++i) {
      if (!is_fresh[i]) continue;
      graph::Node& n = order[i];
      for (const auto& in : n.proto.input()) n.inputs.push_back(in.empty() ? -1 : g.index.at(in));
      n.explicit_inputs = n.inputs.size();
      for (const auto& o : n.proto.output()) n.outputs.push_back(o.empty() ? -1 : g.index.at(o));
      if (!g.opsets.count(n.proto.domain())) g.opsets[n.proto.domain()] = n.opset;
    }
    static const ::onnx::NodeProto empty;
    for (size_t i : order_retired) {
      singa_node& h = *sg->handles[i];
      h = singa_node{};
      h.proto = &empty;
      sg->retired.push_back(std::move(sg->handles[i]));
    }
    g.nodes.clear();
    sg->handles.clear();
    for (int i : sorted) {
      g.nodes.push_back(std::move(order[size_t(i)]));
      sg->handles.push_back(std::move(handles[size_t(i)]));
    }
    passes::relink(g);
    refresh(*sg);
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return make_status(SINGA_INTERNAL, std::string("graph_replace: ") + e.what());
  }
}

int32_t has_kernel(const singa_graph* g, const char* domain, const char* op_type, int64_t opset, const char* device) {
  if (!op_type) return 0;
  try {
    return kernel_registered(domain ? domain : "", op_type, opset, device ? device : "") ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // namespace host_graph

void run_graph_passes(graph::Graph& g, const std::string& device, const std::map<std::string, std::string>* options,
                      std::map<std::string, int>* stats) {
  std::vector<GraphPassEntry> chosen;
  for (const GraphPassEntry& p : Runtime::instance().graph_passes()) {
    if (!p.device.empty() && p.device != device) continue;
    if (options) {
      auto it = options->find("pass." + p.name);
      if (it != options->end() && it->second == "0") continue;
    }
    chosen.push_back(p);
  }
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const GraphPassEntry& a, const GraphPassEntry& b) { return a.priority > b.priority; });
  bool edited = false;
  // DequantizeLinear of constants was kept for the quantized passes
  // (SINGA_PASS_PRIORITY_QUANTIZED and above); what they leave becomes float
  // constants before the passes that want float weights, and the core's
  // weight fusions, which skipped those weights, get them as they would have.
  bool dequantized = false;
  auto fold_dequantize = [&] {
    dequantized = true;
    passes::PassOptions po{device};
    if (passes::fold_constants(g, po, nullptr) == 0) return;
    graph::refine_shapes(g);
    passes::fuse_conv_batchnorm(g);
    passes::fuse_matmul_add(g);
  };
  for (const GraphPassEntry& p : chosen) {
    if (!dequantized && p.priority < SINGA_PASS_PRIORITY_QUANTIZED) fold_dequantize();
    singa_graph sg;
    sg.g = &g;
    sg.device = device;
    sg.options = options;
    passes::relink(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto h = std::make_unique<singa_node>();
      h->graph = &sg;
      h->options = options;
      sg.handles.push_back(std::move(h));
    }
    refresh(sg);
    int32_t rewrites = 0;
    if (singa_status* st = p.run(p.self, &sg, &rewrites))
      throw_status(st, g.source + ": graph pass '" + p.name + "' (" + p.plugin_path + ")");
    if (stats) (*stats)[p.name] += rewrites;
    edited = edited || rewrites > 0;
    // Values a pass named anew get their types and shapes before the next
    // pass reads them (a no-op when every value is known).
    if (rewrites > 0) graph::refine_shapes(g);
  }
  if (!dequantized) fold_dequantize();
  if (edited) passes::compact(g, std::vector<bool>(g.nodes.size(), false));
}

}  // namespace singa
