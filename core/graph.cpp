#include "graph.hpp"
#include "onnx/intake.hpp"

#include <singa/op_versions.hpp>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <boost/filesystem.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
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
  if (type.has_sequence_type()) {
    v.kind = TypeKind::kSequence;
    const auto& e = type.sequence_type().elem_type();
    if (e.has_tensor_type()) v.dtype = e.tensor_type().elem_type();
    return;
  }
  if (type.has_optional_type()) {
    v.kind = TypeKind::kOptional;
    const auto& e = type.optional_type().elem_type();
    if (e.has_tensor_type()) v.dtype = e.tensor_type().elem_type();
    if (e.has_sequence_type()) {
      v.optional_of_sequence = true;
      if (e.sequence_type().elem_type().has_tensor_type()) v.dtype = e.sequence_type().elem_type().tensor_type().elem_type();
    }
    return;
  }
  if (type.has_map_type() || type.has_sparse_tensor_type()) {
    v.kind = TypeKind::kOther;
    return;
  }
  if (!type.has_tensor_type()) return;
  v.kind = TypeKind::kTensor;
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


// ONNX 1.12's shape inference for convolutions and pooling trusts its
// inputs: it takes the kernel's spatial sizes from W's shape and then indexes
// per-axis vectors sized by X's rank (a W of another rank reads past their
// end), it divides by `strides` (a zero stride is SIGFPE), and Gemm's reads
// dim 1 of A and B whatever their rank, and Einsum's frees a pointer it does
// not own on an upper-case subscript, and LayerNormalization's indexes X's
// dims with an unchecked `axis`. All of these crash
// the process (found by fuzz/fuzz_model). Inference therefore goes through
// this registry, which hands out copies of those schemas whose inference
// checks these first; a bad model becomes an ordinary inference error.
class GuardedSchemas : public ::onnx::ISchemaRegistry {
 public:
  const ::onnx::OpSchema* GetSchema(const std::string& key, const int max_version, const std::string& domain) const override {
    const ::onnx::OpSchema* s = ::onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_version, domain);
    // A schema older than the op's version in force at this opset (a model
    // newer than the library) would infer the old op's shapes: none instead.
    if (s && s->SinceVersion() < onnx::op_version_at(normalize_domain(domain), key, max_version)) return nullptr;
    if (!s || !s->has_type_and_shape_inference_function() || (!domain.empty() && domain != "ai.onnx")) return s;
    const int w = same_rank_input(key);
    const bool window = has_window(key);
    const bool matrices = key == "Gemm", einsum = key == "Einsum", axis = key == "LayerNormalization";
    const bool propagates = s->has_data_propagation_function();
    if (w < 0 && !window && !matrices && !einsum && !axis && !propagates) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto& guarded = guarded_[s];
    if (!guarded) {
      guarded = std::make_unique<::onnx::OpSchema>(*s);
      auto inner = s->GetTypeAndShapeInferenceFunction();
      guarded->TypeAndShapeInferenceFunction([inner, w, window, matrices, einsum, axis](::onnx::InferenceContext& ctx) {
        if (w >= 0) check_ranks(ctx, w);
        if (window) check_window(ctx);
        if (matrices) check_matrices(ctx);
        if (einsum) check_einsum(ctx);
        if (axis) check_axis(ctx);
        inner(ctx);
      });
      // ONNX 1.12's data propagation (Shape, Size, Slice, ...) reads its
      // inputs' types without checking that inference found one; an input
      // from an op it has no schema for (a newer version, a custom domain)
      // has none, and the read was a null dereference.
      if (propagates) {
        auto inner_prop = s->GetDataPropagationFunction();
        guarded->PartialDataPropagationFunction([inner_prop](::onnx::DataPropagationContext& ctx) {
          for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
            const ::onnx::TypeProto* t = ctx.getInputType(i);
            if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return;
          }
          inner_prop(ctx);
        });
      }
    }
    return guarded.get();
  }

 private:
  // The input that must have X's rank.
  static int same_rank_input(const std::string& op) {
    if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") return 1;
    if (op == "MaxUnpool") return 1;  // I, the indices, has X's shape
    if (op == "QLinearConv") return 3;
    return -1;
  }
  // Ops whose inference walks a sliding window (kernel_shape, strides, dilations).
  static bool has_window(const std::string& op) {
    static const std::set<std::string> ops{"Conv", "ConvInteger", "ConvTranspose", "QLinearConv", "AveragePool",
                                           "MaxPool", "LpPool", "MaxUnpool"};
    return ops.count(op) > 0;
  }
  static void check_ranks(::onnx::InferenceContext& ctx, int w) {
    if (ctx.getNumInputs() <= size_t(w)) return;
    const ::onnx::TypeProto* x = ctx.getInputType(0);
    const ::onnx::TypeProto* k = ctx.getInputType(size_t(w));
    if (!x || !k || !x->has_tensor_type() || !k->has_tensor_type() || !x->tensor_type().has_shape() ||
        !k->tensor_type().has_shape())
      return;
    int xr = x->tensor_type().shape().dim_size(), kr = k->tensor_type().shape().dim_size();
    if (xr != kr)
      throw ::onnx::InferenceError("[ShapeInferenceError] X has rank " + std::to_string(xr) + " but input " +
                                   std::to_string(w) + " has rank " + std::to_string(kr) + "; they must be equal");
  }
  // `axis` must name a dim of input 0.
  static void check_axis(::onnx::InferenceContext& ctx) {
    const ::onnx::AttributeProto* a = ctx.getAttribute("axis");
    const ::onnx::TypeProto* x = ctx.getNumInputs() > 0 ? ctx.getInputType(0) : nullptr;
    if (!x || !x->has_tensor_type() || !x->tensor_type().has_shape()) return;
    const int64_t r = x->tensor_type().shape().dim_size(), axis = a ? a->i() : -1;  // -1: the default
    if (axis < -r || axis >= r)
      throw ::onnx::InferenceError("[ShapeInferenceError] axis " + std::to_string(axis) + " is out of range for rank " +
                                   std::to_string(r));
  }
  // ONNX 1.12 infers Einsum's rank from lower-case subscripts only.
  static void check_einsum(::onnx::InferenceContext& ctx) {
    const ::onnx::AttributeProto* a = ctx.getAttribute("equation");
    if (!a) return;
    for (char ch : a->s())
      if (ch >= 'A' && ch <= 'Z')
        throw ::onnx::InferenceError("[ShapeInferenceError] equation '" + a->s() +
                                     "' has upper-case subscripts, which ONNX's Einsum inference cannot read");
  }
  // Gemm's A and B are matrices.
  static void check_matrices(::onnx::InferenceContext& ctx) {
    for (size_t i = 0; i < 2 && i < ctx.getNumInputs(); ++i) {
      const ::onnx::TypeProto* t = ctx.getInputType(i);
      if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) continue;
      const int r = t->tensor_type().shape().dim_size();
      if (r != 2)
        throw ::onnx::InferenceError("[ShapeInferenceError] input " + std::to_string(i) + " has rank " + std::to_string(r) +
                                     "; Gemm multiplies matrices (rank 2)");
    }
  }
  static void check_window(::onnx::InferenceContext& ctx) {
    for (const char* name : {"kernel_shape", "strides", "dilations"}) {
      const ::onnx::AttributeProto* a = ctx.getAttribute(name);
      if (!a) continue;
      for (int64_t v : a->ints())
        if (v < 1)
          throw ::onnx::InferenceError("[ShapeInferenceError] attribute '" + std::string(name) + "' holds " +
                                       std::to_string(v) + "; every entry must be at least 1");
    }
  }
  mutable std::mutex mu_;
  mutable std::map<const ::onnx::OpSchema*, std::unique_ptr<::onnx::OpSchema>> guarded_;
};

const ::onnx::ISchemaRegistry* inference_schemas() {
  static const GuardedSchemas registry;
  return &registry;
}

bool has_external_data(const ::onnx::GraphProto& g) {
  for (const auto& t : g.initializer())
    if (t.data_location() == ::onnx::TensorProto::EXTERNAL) return true;
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g() && has_external_data(a.g())) return true;
      for (const auto& sg : a.graphs())
        if (has_external_data(sg)) return true;
    }
  return false;
}

// onnx::checker::check_model(ModelProto) knows no model folder and looks for
// external data files in the working folder; it is given paths anchored at
// the model's folder instead. (Reading them is tensor_io's job, which keeps
// them inside that folder.)
void anchor_external_data(::onnx::GraphProto& g, const std::string& base_dir) {
  for (auto& t : *g.mutable_initializer())
    if (t.data_location() == ::onnx::TensorProto::EXTERNAL)
      for (auto& kv : *t.mutable_external_data())
        if (kv.key() == "location" && !boost::filesystem::path(kv.value()).is_absolute())
          kv.set_value((boost::filesystem::path(base_dir) / kv.value()).string());
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) anchor_external_data(*a.mutable_g(), base_dir);
      for (auto& sg : *a.mutable_graphs()) anchor_external_data(sg, base_dir);
    }
}

// The names an enclosing graph makes visible to a subgraph (its own and, in
// turn, those of its enclosing graphs).
struct Scope {
  const Graph* graph;
  const std::set<std::string>* names;
  const Scope* parent;
  bool sees(const std::string& name) const { return names->count(name) || (parent && parent->sees(name)); }
  // Copies what is known of the value's type for the subgraph's kernels.
  void describe(const std::string& name, Value& into) const {
    auto it = graph->index.find(name);
    if (it == graph->index.end()) {
      if (parent) parent->describe(name, into);
      return;
    }
    const Value& v = graph->values[size_t(it->second)];
    into.kind = v.kind;
    into.optional_of_sequence = v.optional_of_sequence;
    into.dtype = v.dtype;
    into.rank_known = v.rank_known;
    into.dims = v.dims;
    into.dim_params = v.dim_params;
  }
};

std::string strip_source(const std::string& message, const std::string& source) {
  return message.compare(0, source.size() + 2, source + ": ") == 0 ? message.substr(source.size() + 2) : message;
}

// Kahn's algorithm over nodes 0..n-1 (`deps[i]`: the nodes node i reads
// from), always taking the ready node that comes first in the file, so that a
// file already in order keeps it. Nodes on a cycle are left out of the order;
// `first_stuck` gets the first of them (-1 when there is none).
std::vector<int> stable_topological_order(const std::vector<std::set<int>>& deps, int* first_stuck) {
  const size_t n = deps.size();
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int d : deps[i]) {
      users[size_t(d)].push_back(int(i));
      ++indeg[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(int(i));
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[size_t(i)])
      if (--indeg[size_t(u)] == 0) ready.push(u);
  }
  *first_stuck = -1;
  for (size_t i = 0; i < n && order.size() != n; ++i)
    if (indeg[i] > 0) {
      *first_stuck = int(i);
      break;
    }
  return order;
}

// Converts one GraphProto (the model's or a subgraph) into `g`. `converted`:
// initializers already turned into tensors (whose data the proto no longer
// holds), by name.
void build_body(const ::onnx::GraphProto& gp, Graph& g, const Scope* scope,
                std::map<std::string, Tensor>* converted = nullptr) {
  const std::string& source = g.source;
  const std::string& base_dir = g.base_dir;
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
      auto done = converted ? converted->find(init.name()) : std::map<std::string, Tensor>::iterator();
      if (converted && done != converted->end()) {
        val.constant = std::move(done->second);
        converted->erase(done);
      } else {
        val.constant = onnx::from_proto(init, base_dir);
      }
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
    if (in.type().has_tensor_type())
      for (const auto& d : in.type().tensor_type().shape().dim())
        if (d.has_dim_value() && d.dim_value() < 0)
          throw Error(SINGA_INVALID_ARGUMENT, source + ": graph input '" + in.name() + "' declares dimension " +
                                                  std::to_string(d.dim_value()) + " (sizes are >= 0; a dim_param names an unknown one)");
    val.is_input = true;
    read_type(in.type(), val);
    if (val.kind == TypeKind::kOther)
      throw Error(SINGA_UNIMPLEMENTED, source + ": graph input '" + in.name() + "' is a map or sparse tensor, which is not supported");
    g.inputs.push_back(v);
  }
  for (const auto& vi : gp.value_info()) {
    auto it = g.index.find(vi.name());
    int v = it == g.index.end() ? add_value(vi.name()) : it->second;
    if (!g.values[v].is_initializer && !g.values[v].is_input) read_type(vi.type(), g.values[v]);
  }

  // Every name this scope defines, for the subgraphs under it.
  std::set<std::string> visible;
  for (const auto& v : g.values)
    if (v.is_input || v.is_initializer) visible.insert(v.name);
  for (const auto& np : gp.node())
    for (const auto& out : np.output())
      if (!out.empty()) visible.insert(out);
  // A name read here: defined in this scope, or found in an enclosing one.
  auto resolve = [&](const std::string& name, const std::string& reader) -> int {
    auto it = g.index.find(name);
    if (it != g.index.end() && (g.values[size_t(it->second)].is_input || g.values[size_t(it->second)].is_initializer ||
                                g.values[size_t(it->second)].producer >= 0 || g.values[size_t(it->second)].is_outer))
      return it->second;
    if (!visible.count(name) && scope && scope->sees(name)) {
      int v = add_value(name);
      g.values[size_t(v)].is_outer = true;
      scope->describe(name, g.values[size_t(v)]);
      g.outer.push_back(v);
      return v;
    }
    throw Error(SINGA_INVALID_ARGUMENT, source + ": " + reader + " reads '" + name +
                                            "', which is no graph input, initializer or node output" +
                                            (scope ? " here or in an enclosing graph" : ""));
  };

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
      if (val.producer == i)  // this node lists the name twice (it is not in `nodes` yet)
        throw Error(SINGA_INVALID_ARGUMENT, source + ": " + n.label + " lists output '" + out + "' twice");
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
      nodes[i].inputs.push_back(resolve(in, nodes[i].label));
    }
    nodes[i].explicit_inputs = nodes[i].inputs.size();
    // Subgraphs see every name of this scope; what they read from it
    // becomes an implicit input, so ordering and lifetimes account for it.
    for (const auto& attr : nodes[i].proto.attribute()) {
      if (attr.type() == ::onnx::AttributeProto::GRAPHS)
        throw Error(SINGA_UNIMPLEMENTED, source + ": " + nodes[i].label + " attribute '" + attr.name() + "' holds a list of graphs, which no op here takes");
      if (attr.type() != ::onnx::AttributeProto::GRAPH) continue;
      auto sub = std::make_shared<Graph>();
      sub->source = source;
      sub->base_dir = g.base_dir;
      sub->opsets = g.opsets;
      Scope inner{&g, &visible, scope};
      try {
        build_body(attr.g(), *sub, &inner);
      } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()).find(nodes[i].label) != std::string::npos
                                  ? std::string(e.what())
                                  : source + ": " + nodes[i].label + " subgraph '" + attr.name() + "': " + strip_source(e.what(), source));
      }
      for (int ov : sub->outer) {
        int here = resolve(sub->values[size_t(ov)].name, nodes[i].label);
        if (std::find(nodes[i].inputs.begin() + long(nodes[i].explicit_inputs), nodes[i].inputs.end(), here) == nodes[i].inputs.end())
          nodes[i].inputs.push_back(here);
      }
      // The executor hands implicit inputs over in the node's order.
      std::vector<int> order;
      for (size_t k = nodes[i].explicit_inputs; k < nodes[i].inputs.size(); ++k) {
        auto it = sub->index.find(g.values[size_t(nodes[i].inputs[k])].name);
        order.push_back(it != sub->index.end() && sub->values[size_t(it->second)].is_outer ? it->second : -1);
      }
      sub->outer = order;
      nodes[i].subgraphs[attr.name()] = sub;
    }
  }

  // Topological order, the file's where it is one (`last_layers` and
  // Rep::nodes() count the model's own order); a cycle is an error.
  std::vector<std::set<int>> deps(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].inputs)
      if (v >= 0 && g.values[size_t(v)].producer >= 0) deps[i].insert(g.values[size_t(v)].producer);
  int stuck = -1;
  const std::vector<int> order = stable_topological_order(deps, &stuck);
  if (stuck >= 0) throw Error(SINGA_INVALID_ARGUMENT, source + ": the graph has a cycle through " + nodes[size_t(stuck)].label);
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
    if (it == g.index.end() && scope) {
      resolve(out.name(), "graph output");
      it = g.index.find(out.name());
    }
    if (it == g.index.end()) throw Error(SINGA_INVALID_ARGUMENT, source + ": graph output '" + out.name() + "' is never produced");
    Value& val = g.values[size_t(it->second)];
    if (val.dtype == 0 || !val.rank_known) read_type(out.type(), val);
    val.is_output = true;
    g.outputs.push_back(it->second);
  }
}

// Every name a subgraph (and the subgraphs under it) reads: what its node
// takes from the enclosing scopes.
void names_read(const ::onnx::GraphProto& g, std::set<std::string>& out, int depth = 0) {
  if (depth > 64) return;  // the graph build refuses such nesting with its own message
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) out.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) names_read(a.g(), out, depth + 1);
      for (const auto& sg : a.graphs()) names_read(sg, out, depth + 1);
    }
  }
}

// Puts the nodes of `g` (and of its subgraphs) in an order where each comes
// after the producers of what it reads, keeping the file's order wherever it
// already is one. Exporters and converters (the common float16 converter
// appends its Casts at the end) write acyclic graphs out of order; ONNX's
// checker refuses them, ONNX Runtime sorts them. A cycle in the main graph is
// refused naming a node on it (in subgraphs the graph build reports it).
void sort_nodes(::onnx::GraphProto& g, const std::string& source, int depth = 0) {
  if (depth > 64) return;
  const int n = g.node_size();
  for (auto& node : *g.mutable_node())
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) sort_nodes(*a.mutable_g(), source, depth + 1);
      for (auto& sg : *a.mutable_graphs()) sort_nodes(sg, source, depth + 1);
    }
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& out : g.node(i).output())
      if (!out.empty()) producer.emplace(out, i);
  std::vector<std::set<int>> deps(static_cast<size_t>(n));
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    std::set<std::string> reads(g.node(i).input().begin(), g.node(i).input().end());
    for (const auto& a : g.node(i).attribute()) {
      if (a.has_g()) names_read(a.g(), reads);
      for (const auto& sg : a.graphs()) names_read(sg, reads);
    }
    for (const auto& name : reads) {
      auto it = name.empty() ? producer.end() : producer.find(name);
      if (it == producer.end() || it->second == i) continue;
      deps[size_t(i)].insert(it->second);
      sorted = sorted && it->second < i;
    }
  }
  if (sorted) return;
  int stuck = -1;
  const std::vector<int> order = stable_topological_order(deps, &stuck);
  if (stuck >= 0) {
    if (depth > 0) return;
    throw Error(SINGA_INVALID_ARGUMENT, source + ": the graph has a cycle through " + node_label(g.node(stuck), size_t(stuck)));
  }
  google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
  nodes.Swap(g.mutable_node());
  for (int i : order) g.add_node()->Swap(&nodes[i]);
}

}  // namespace

std::vector<int> topological_order(const std::vector<std::set<int>>& deps, int* first_stuck) {
  return stable_topological_order(deps, first_stuck);
}

std::string type_string(const Value& v) {
  std::string t = std::string("tensor(") + (v.dtype ? dtype_name(v.dtype) : "?") + ")";
  switch (v.kind) {
    case TypeKind::kSequence: return "seq(" + t + ")";
    case TypeKind::kOptional: return "optional(" + (v.optional_of_sequence ? "seq(" + t + ")" : t) + ")";
    case TypeKind::kOther: return "map or sparse tensor";
    default: return t;
  }
}

Graph build(::onnx::ModelProto model, const std::string& source, const std::string& base_dir,
            const onnx::PrepareOptions& options) {
  Graph g;
  g.source = source;
  g.base_dir = base_dir;
  for (const auto& op : model.opset_import()) g.opsets[normalize_domain(op.domain())] = op.version();
  if (model.ir_version() < 3 && g.opsets.empty()) g.opsets[""] = 1;

  // ONNX's checker where the linked library knows the model's IR and opsets;
  // singa's own checks beyond them (its schemas would refuse or misjudge
  // newer models).
  sort_nodes(*model.mutable_graph(), source);
  std::string beyond;
  if (!onnx::library_covers(model, &beyond)) {
    g.warnings.push_back("the onnx library's checker does not cover this model (" + beyond + "); singa's own checks apply");
    onnx::validate_model(model, source);
  } else if (options.check_model) {
    try {
      if (!base_dir.empty() && has_external_data(model.graph())) {
        ::onnx::ModelProto anchored = model;
        anchor_external_data(*anchored.mutable_graph(), base_dir);
        ::onnx::checker::check_model(anchored);
      } else {
        ::onnx::checker::check_model(model);
      }
    } catch (const std::exception& e) {
      throw Error(SINGA_INVALID_ARGUMENT, source + ": invalid model: " + e.what());
    }
  }
  bind_dims(model, options.dims);
  // Large initializers become tensors now and leave the proto, before the
  // copy shape inference works on: otherwise the weights sat in memory three
  // times (the caller's proto, this one and the copy) when the tensors were
  // made, and that set the peak memory of a whole run. Shape inference needs
  // the values of shape-like initializers only, which are small.
  std::map<std::string, Tensor> converted;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (init.raw_data().size() < (size_t(64) << 10) || init.name().empty() || converted.count(init.name())) continue;
    try {
      converted[init.name()] = onnx::from_proto(init, base_dir);
    } catch (const Error& e) {
      throw Error(e.code(), source + ": initializer '" + init.name() + "': " + e.what());
    }
    std::string().swap(*init.mutable_raw_data());
  }
  // Strict first, so a shape contradiction is reported; some valid models
  // trip ONNX's inference, so fall back to lenient and keep the message.
  try {
    ::onnx::ModelProto strict = model;
    ::onnx::shape_inference::InferShapes(strict, inference_schemas(),
                                         ::onnx::ShapeInferenceOptions(false, 1, true));
    model = std::move(strict);
  } catch (const std::exception& e) {
    g.warnings.push_back(std::string("shape inference: ") + e.what());
    try {
      ::onnx::shape_inference::InferShapes(model, inference_schemas(), ::onnx::ShapeInferenceOptions(false, 0, false));
    } catch (const std::exception& e2) {
      g.warnings.push_back(std::string("shape inference (lenient): ") + e2.what());
    }
  }

  build_body(model.graph(), g, nullptr, &converted);
  return g;
}

bool fully_known(const Value& v) {
  if (!v.rank_known) return false;
  for (int64_t d : v.dims)
    if (d < 0) return false;
  return true;
}

namespace {

void write_type(const Value& v, ::onnx::ValueInfoProto& vi) {
  vi.set_name(v.name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(v.dtype);
  if (!v.rank_known) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (v.dims[i] >= 0)
      d->set_dim_value(v.dims[i]);
    else if (i < v.dim_params.size() && !v.dim_params[i].empty())
      d->set_dim_param(v.dim_params[i]);
  }
}

}  // namespace

int refine_shapes(Graph& g) {
  bool unknown = false;
  for (const Value& v : g.values)
    unknown = unknown || (v.kind == TypeKind::kTensor && v.producer >= 0 && !fully_known(v));
  if (!unknown) return 0;
  constexpr size_t kWithData = size_t(64) << 10;  // shape-like constants are far smaller
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  for (const auto& [domain, version] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  auto* gp = m.mutable_graph();
  gp->set_name("refine");
  for (const Value& v : g.values) {
    if (v.kind != TypeKind::kTensor || v.dtype == 0) continue;
    if (v.is_initializer && v.constant.defined() && v.constant.nbytes() <= kWithData && v.constant.dtype() != 0) {
      *gp->add_initializer() = onnx::to_proto(v.constant, v.name);
    } else if (v.is_input || v.is_initializer || v.is_outer) {
      write_type(v, *gp->add_input());
    }
  }
  for (const Node& n : g.nodes) *gp->add_node() = n.proto;
  for (int v : g.outputs) gp->add_output()->set_name(g.values[size_t(v)].name);
  try {
    ::onnx::shape_inference::InferShapes(m, inference_schemas(), ::onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception&) {
    return 0;
  }
  int refined = 0;
  auto take = [&](const ::onnx::ValueInfoProto& vi) {
    auto it = g.index.find(vi.name());
    if (it == g.index.end() || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    Value& v = g.values[size_t(it->second)];
    if (v.kind != TypeKind::kTensor || v.producer < 0 || fully_known(v)) return;
    Value inferred;
    read_type(vi.type(), inferred);
    if (inferred.dtype != v.dtype && v.dtype != 0) return;
    if (v.rank_known) {
      if (inferred.dims.size() != v.dims.size()) return;
      for (size_t i = 0; i < v.dims.size(); ++i) {
        if (v.dims[i] < 0) continue;
        if (inferred.dims[i] >= 0 && inferred.dims[i] != v.dims[i]) return;  // a contradiction: keep what we had
        inferred.dims[i] = v.dims[i];
        inferred.dim_params[i] = v.dim_params.size() > i ? v.dim_params[i] : "";
      }
      if (std::count(inferred.dims.begin(), inferred.dims.end(), int64_t(-1)) >=
          std::count(v.dims.begin(), v.dims.end(), int64_t(-1)))
        return;
    }
    v.rank_known = true;
    v.dtype = inferred.dtype;
    v.dims = inferred.dims;
    v.dim_params = inferred.dim_params;
    ++refined;
  };
  for (const auto& vi : gp->value_info()) take(vi);
  for (const auto& vi : gp->output()) take(vi);
  return refined;
}

}  // namespace graph
}  // namespace singa
