// graph_pass.hpp - header-only C++ helper for graph passes (ABI 1.3).
//
// A plugin that runs nodes may also optimize the graph it will run: after the
// core's device-neutral passes, its pass sees the graph and replaces node
// groups it claims with ops of its own domain, for which it registers
// kernels. A pass is a function over a singa::sdk::Graph:
//
//   int fuse_relu(singa::sdk::Graph& g) {            // returns the number of rewrites
//     int n = 0;
//     for (auto conv : g.nodes()) {
//       if (conv.op_type() != "Conv") continue;
//       auto readers = g.consumers(conv.output_name(0));
//       if (readers.size() != 1 || readers[0].op_type() != "Relu" || g.is_output(conv.output_name(0))) continue;
//       singa::sdk::NewNode fused{"my.vendor", "ConvRelu"};
//       fused.inputs = conv.input_names();
//       fused.outputs = {readers[0].output_name(0)};
//       fused.attrs_from = conv.raw();                 // Conv's attributes carry over
//       g.replace({conv, readers[0]}, {fused});
//       ++n;
//     }
//     return n;
//   }
//   SINGA_PLUGIN("my_vendor", "1.0", "...") {
//     reg.kernel<ConvRelu>("my.vendor", "ConvRelu", 1, SINGA_VERSION_OPEN, "my_device", {...});
//     singa::sdk::register_graph_pass(reg, "my_vendor.fusions", "my_device", 0, fuse_relu);
//   }
//
// A replaced node's handle is gone after replace(); the other handles stay
// valid. g.nodes() is a snapshot, so loops over it must skip nodes already
// replaced (alive()).
#ifndef SINGA_GRAPH_PASS_HPP
#define SINGA_GRAPH_PASS_HPP

#include <singa/kernel.hpp>

#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace singa {
namespace sdk {

// A node of a graph being optimized: everything Node reads, plus names.
class GraphNode : public Node {
 public:
  GraphNode(const singa_node* n, singa_graph* g) : Node(n), g_(g) {}
  bool valid() const { return raw() != nullptr; }
  std::string domain() const { return valid() ? host().node_domain(raw()) : ""; }
  std::string input_name(size_t i) const { return host().node_input_name(raw(), i); }
  std::string output_name(size_t i) const { return host().node_output_name(raw(), i); }
  std::vector<std::string> input_names() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < num_inputs(); ++i) out.push_back(input_name(i));
    return out;
  }
  std::vector<std::string> output_names() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < num_outputs(); ++i) out.push_back(output_name(i));
    return out;
  }
  // Whether the node is still in the graph (not replaced since the snapshot).
  bool alive() const {
    const size_t n = host().graph_num_nodes(g_);
    for (size_t i = 0; i < n; ++i)
      if (host().graph_node(g_, i) == raw()) return true;
    return false;
  }
  bool operator==(const GraphNode& o) const { return raw() == o.raw(); }

 private:
  singa_graph* g_;
};

// Attributes of new nodes are sdk::Attr (singa/gradient.hpp, through
// kernel.hpp): Attr("alpha", 0.5f), Attr("axes", std::vector<int64_t>{...}).

// A node to insert: values by name ("" = absent), attributes copied from
// `attrs_from` first, then `attrs`.
struct NewNode {
  NewNode(std::string domain_, std::string op_type_) : domain(std::move(domain_)), op_type(std::move(op_type_)) {}
  std::string domain, op_type;
  std::string name;       // "" = derived from the first replaced node
  int64_t opset = 0;      // 0 = the graph's opset for the domain (1 where none)
  std::vector<std::string> inputs, outputs;
  const singa_node* attrs_from = nullptr;
  std::vector<Attr> attrs;
};

class Graph {
 public:
  explicit Graph(singa_graph* g) : g_(g) {}
  singa_graph* raw() const { return g_; }
  size_t size() const { return host().graph_num_nodes(g_); }
  GraphNode node(size_t i) const { return GraphNode(host().graph_node(g_, i), g_); }
  // The nodes now, in topological order (a snapshot: see alive()).
  std::vector<GraphNode> nodes() const {
    std::vector<GraphNode> out;
    for (size_t i = 0, n = size(); i < n; ++i) out.push_back(node(i));
    return out;
  }
  std::string device() const { return host().graph_device(g_); }
  // A named option of the prepare, `def` when unset.
  std::string option(const char* key, const std::string& def = "") const {
    const char* v = host().graph_option(g_, key);
    return v ? v : def;
  }
  // The producer of `value` (valid() is false for inputs and constants).
  GraphNode producer(const std::string& value) const { return GraphNode(host().graph_producer(g_, value.c_str()), g_); }
  std::vector<GraphNode> consumers(const std::string& value) const {
    std::vector<GraphNode> out;
    for (size_t i = 0, n = host().graph_num_consumers(g_, value.c_str()); i < n; ++i)
      out.emplace_back(host().graph_consumer(g_, value.c_str(), i), g_);
    return out;
  }
  bool is_output(const std::string& value) const { return host().graph_is_output(g_, value.c_str()) != 0; }
  // Type and shape as known at prepare time (ndim < 0: unknown rank).
  bool value_info(const std::string& value, singa_value_info& info) const {
    info = singa_value_info{};
    info.struct_size = sizeof(info);
    info.ndim = -1;
    return host().graph_value_info(g_, value.c_str(), &info) != 0;
  }
  // The value's data when it is a constant (an undefined Tensor otherwise).
  Tensor constant(const std::string& value) const { return Tensor(host().graph_constant(g_, value.c_str())); }
  // Adds a constant (copied); returns its name.
  std::string add_constant(const std::string& hint, const DLTensor& t) {
    std::vector<char> name(hint.size() + 32);
    throw_if(host().graph_add_constant(g_, hint.c_str(), &t, name.data(), name.size()));
    return name.data();
  }
  // The layout of `value` ("" plain; ABI 1.4).
  std::string layout(const std::string& value) const {
    GraphNode p = producer(value);
    if (!p.valid()) return "";
    for (size_t k = 0; k < p.num_outputs(); ++k)
      if (p.output_name(k) == value) return p.output_layout(k);
    return "";
  }
  // Sets the layout `value` is in from now on (see singa_layout_ext): the
  // pass makes sure its producer and readers are kernels that declare it,
  // inserting reorder nodes where they do not. Throws for graph inputs,
  // outputs and constants, and on a host older than ABI 1.4.
  void set_layout(const std::string& value, const std::string& layout) {
    if (!SINGA_HAS_FIELD(&host(), singa_host_api, graph_set_layout) || !host().graph_set_layout)
      throw Error(SINGA_UNIMPLEMENTED, "this runtime predates value layouts (ABI 1.4)");
    throw_if(host().graph_set_layout(g_, value.c_str(), layout.c_str()));
  }
  bool has_kernel(const std::string& domain, const std::string& op_type, int64_t opset, const std::string& device = "") const {
    return host().graph_has_kernel(g_, domain.c_str(), op_type.c_str(), opset, device.c_str()) != 0;
  }
  // Replaces `nodes` with `with` in one step (see singa_abi.h's graph_replace);
  // throws, leaving the graph unchanged, when the host refuses.
  void replace(const std::vector<GraphNode>& nodes, const std::vector<NewNode>& with) {
    std::vector<const singa_node*> ns;
    for (const auto& n : nodes) ns.push_back(n.raw());
    // Keep every string and attribute alive for the call.
    std::deque<std::vector<const char*>> names;
    std::deque<std::vector<singa_attr>> attrs;
    std::vector<singa_node_spec> specs;
    for (const NewNode& w : with) {
      auto& ins = names.emplace_back();
      for (const auto& s : w.inputs) ins.push_back(s.c_str());
      auto& outs = names.emplace_back();
      for (const auto& s : w.outputs) outs.push_back(s.c_str());
      auto& as = attrs.emplace_back();
      for (const auto& a : w.attrs) as.push_back(a.raw());
      singa_node_spec sp{};
      sp.struct_size = sizeof(sp);
      sp.name = w.name.empty() ? nullptr : w.name.c_str();
      sp.domain = w.domain.c_str();
      sp.op_type = w.op_type.c_str();
      sp.opset = w.opset;
      sp.inputs = ins.data();
      sp.num_inputs = ins.size();
      sp.outputs = outs.data();
      sp.num_outputs = outs.size();
      sp.attrs_from = w.attrs_from;
      sp.attrs = as.data();
      sp.num_attrs = as.size();
      specs.push_back(sp);
    }
    throw_if(host().graph_replace(g_, ns.data(), ns.size(), specs.data(), specs.size()));
  }

 private:
  singa_graph* g_;
};

namespace detail {
struct PassSlot {
  singa_graph_pass_ext ext{};
  std::string name, device;
  std::function<int(Graph&)> fn;
};
// The plugin's registered passes: they live as long as the plugin.
inline std::deque<PassSlot>& pass_slots() {
  static std::deque<PassSlot> slots;
  return slots;
}
inline singa_status* run_pass(void* self, singa_graph* g, int32_t* rewrites) {
  SINGA_TRY_BEGIN
  Graph graph(g);
  const int n = static_cast<PassSlot*>(self)->fn(graph);
  if (rewrites) *rewrites = n;
  SINGA_TRY_END
}
}  // namespace detail

// Registers a graph pass run when a graph is prepared for `device` ("" = any),
// higher `priority` first, from SINGA_PLUGIN's body (`reg`). A host older than ABI 1.3 has no room for extensions: the pass
// is then not registered and false is returned (the plugin's kernels still work).
inline bool register_graph_pass(Registrar& reg, const std::string& name, const std::string& device, int32_t priority,
                                std::function<int(Graph&)> fn) {
  singa_plugin* plugin = reg.plugin_info();
  if (!plugin || !SINGA_HAS_FIELD(plugin, singa_plugin, extensions)) return false;
  if (host().struct_size < offsetof(singa_host_api, graph_has_kernel) + sizeof(host().graph_has_kernel)) return false;
  auto& slot = detail::pass_slots().emplace_back();
  slot.name = name;
  slot.device = device;
  slot.fn = std::move(fn);
  slot.ext.base.struct_size = sizeof(slot.ext);
  slot.ext.base.type = SINGA_EXTENSION_GRAPH_PASS;
  slot.ext.base.next = plugin->extensions;
  slot.ext.name = slot.name.c_str();
  slot.ext.device = slot.device.c_str();
  slot.ext.priority = priority;
  slot.ext.self = &slot;
  slot.ext.run = &detail::run_pass;
  plugin->extensions = &slot.ext.base;
  return true;
}

}  // namespace sdk
}  // namespace singa
#endif  // SINGA_GRAPH_PASS_HPP
