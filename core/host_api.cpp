// The host table: what every plugin calls back into. Nothing here may throw
// across the C boundary: each entry point catches and converts.
#include "host.hpp"
#include "graph_pass.hpp"
#include "autograd/grad_builder.hpp"
#include <singa/op_versions.hpp>

#include <singa/onnx.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace singa {

singa_status* make_status(singa_code code, const std::string& message) {
  return new (std::nothrow) singa_status{code == SINGA_OK ? SINGA_INTERNAL : code, message};
}

std::string take_status_message(singa_status* st) {
  if (!st) return "";
  std::string m = st->message;
  delete st;
  return m;
}

void throw_status(singa_status* st, const std::string& context) {
  if (!st) return;
  singa_code code = st->code;
  std::string msg = take_status_message(st);
  throw Error(code, context.empty() ? msg : context + ": " + msg);
}

namespace {

// ------------------------------------------------------------------ status
singa_status* status_new(singa_code code, const char* message) { return make_status(code, message ? message : ""); }
singa_code status_code(const singa_status* st) { return st ? st->code : SINGA_OK; }
const char* status_message(const singa_status* st) { return st ? st->message.c_str() : ""; }
void status_free(singa_status* st) { delete st; }

void log_message(singa_log_level level, const char* message) {
  static const char* names[] = {"debug", "info", "warning", "error"};
  const char* env = std::getenv("SINGA_LOG_LEVEL");
  int min_level = env ? std::atoi(env) : SINGA_LOG_WARNING;
  if (int(level) >= min_level) std::cerr << "singa: " << names[level & 3] << ": " << (message ? message : "") << "\n";
}

// ------------------------------------------------------------ registration
template <typename T>
T copy_versioned(const T* src) {
  // Reads only what the plugin's struct holds; the rest keeps its zero default.
  T dst{};
  size_t n = src->struct_size < sizeof(T) ? src->struct_size : sizeof(T);
  std::memcpy(&dst, src, n);
  dst.struct_size = sizeof(T);
  return dst;
}

singa_status* register_device(singa_plugin_handle* plugin, const singa_device_def* def) {
  if (!plugin || !def) return make_status(SINGA_INVALID_ARGUMENT, "register_device: null argument");
  if (def->struct_size < offsetof(singa_device_def, stream_create))
    return make_status(SINGA_INVALID_ARGUMENT, "register_device: struct_size too small");
  singa_device_def d = copy_versioned(def);
  if (!d.name || !*d.name || !d.alloc || !d.free || !d.copy || !d.memset)
    return make_status(SINGA_INVALID_ARGUMENT, "register_device: name, alloc, free, copy and memset are required");
  plugin->devices.push_back(d);
  return nullptr;
}

singa_status* register_kernel(singa_plugin_handle* plugin, const singa_kernel_def* def) {
  if (!plugin || !def) return make_status(SINGA_INVALID_ARGUMENT, "register_kernel: null argument");
  if (def->struct_size < offsetof(singa_kernel_def, infer))
    return make_status(SINGA_INVALID_ARGUMENT, "register_kernel: struct_size " + std::to_string(def->struct_size) + " too small");
  auto e = std::make_unique<KernelEntry>();
  e->def = copy_versioned(def);
  if (!e->def.op_type || !e->def.device || !e->def.create || !e->def.compute)
    return make_status(SINGA_INVALID_ARGUMENT, "register_kernel: op_type, device, create and compute are required");
  if (e->def.since_version < 1 || e->def.end_version < e->def.since_version)
    return make_status(SINGA_INVALID_ARGUMENT, std::string("register_kernel ") + e->def.op_type + ": bad opset range " +
                                                   std::to_string(e->def.since_version) + ".." + std::to_string(e->def.end_version));
  e->domain = normalize_domain(e->def.domain ? e->def.domain : "");
  e->op_type = e->def.op_type;
  e->device = e->def.device;
  e->last_opset = onnx::last_served_opset(e->domain, e->op_type, e->def.since_version, e->def.end_version);
  for (size_t i = 0; i < e->def.num_constraints; ++i) {
    const singa_type_constraint& c = e->def.constraints[i];
    e->constraint_names.push_back(c.name ? c.name : "T");
    e->constraints.push_back(c);
  }
  for (size_t i = 0; i < e->constraints.size(); ++i) e->constraints[i].name = e->constraint_names[i].c_str();
  e->def.constraints = e->constraints.data();
  e->def.domain = e->domain.c_str();
  e->def.op_type = e->op_type.c_str();
  e->def.device = e->device.c_str();
  e->plugin_path = plugin->path;
  plugin->kernels.push_back(std::move(e));
  return nullptr;
}

// -------------------------------------------------------------------- node
const ::onnx::AttributeProto* find_attr(const singa_node* n, const char* name) {
  if (!n || !n->proto || !name) return nullptr;
  for (const auto& a : n->proto->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const char* attr_type_word(int t) {
  using A = ::onnx::AttributeProto;
  switch (t) {
    case A::FLOAT: return "a float";
    case A::INT: return "an int";
    case A::STRING: return "a string";
    case A::TENSOR: return "a tensor";
    case A::GRAPH: return "a graph";
    case A::FLOATS: return "floats";
    case A::INTS: return "ints";
    case A::STRINGS: return "strings";
    case A::TENSORS: return "tensors";
    case A::GRAPHS: return "graphs";
    default: return "an attribute of another type";
  }
}

// The attribute `name` when it holds type `want`; records the read, or the
// mismatch when the model gives it another type.
const ::onnx::AttributeProto* typed_attr(const singa_node* n, const char* name, ::onnx::AttributeProto::AttributeType want) {
  auto* a = find_attr(n, name);
  if (!a) return nullptr;
  if (a->type() != want) {
    n->attrs_mistyped.emplace(name, std::string("holds ") + attr_type_word(a->type()) + " where the kernel reads " + attr_type_word(want));
    return nullptr;
  }
  n->attrs_read.insert(name);
  return a;
}

}  // namespace

void check_attribute_reads(const singa_node& node, const std::string& context) {
  for (const auto& [name, what] : node.attrs_mistyped)
    if (!node.attrs_read.count(name)) throw Error(SINGA_INVALID_ARGUMENT, context + ": attribute '" + name + "' " + what);
}

namespace {

// A NULL node (a graph pass asking for the producer of a graph input, say)
// reads as an empty one: a plugin's slip must not crash the host.
const char* node_name(const singa_node* n) { return n && n->proto ? n->proto->name().c_str() : ""; }
const char* node_op_type(const singa_node* n) { return n && n->proto ? n->proto->op_type().c_str() : ""; }
const char* node_domain(const singa_node* n) { return n && n->proto ? n->proto->domain().c_str() : ""; }
int64_t node_opset(const singa_node* n) { return n ? n->opset : 0; }
size_t node_num_inputs(const singa_node* n) { return n ? n->inputs.size() : 0; }
size_t node_num_outputs(const singa_node* n) { return n ? n->outputs.size() : 0; }

const char* node_input_name(const singa_node* n, size_t i) {
  return n && n->proto && i < size_t(n->proto->input_size()) ? n->proto->input(int(i)).c_str() : "";
}
const char* node_output_name(const singa_node* n, size_t i) {
  return n && n->proto && i < size_t(n->proto->output_size()) ? n->proto->output(int(i)).c_str() : "";
}
// Layouts (ABI 1.4). A graph pass's handle reads the graph as it is now; the
// executor's handle carries the layouts it was created with.
const char* node_layout(const singa_node* n, size_t i, bool input) {
  if (!n || !n->proto) return "";
  if (n->graph && n->graph->g) {
    const auto& names = input ? n->proto->input() : n->proto->output();
    if (i >= size_t(names.size())) return "";
    const graph::Graph& g = *n->graph->g;
    auto it = g.index.find(names[int(i)]);
    return it == g.index.end() ? "" : g.values[size_t(it->second)].layout.c_str();
  }
  const std::vector<std::string>& v = input ? n->input_layouts : n->output_layouts;
  return i < v.size() ? v[i].c_str() : "";
}
const char* node_input_layout(const singa_node* n, size_t i) { return node_layout(n, i, true); }
const char* node_output_layout(const singa_node* n, size_t i) { return node_layout(n, i, false); }

// Only values the graph computes and keeps to itself may change layout: the
// caller hands in and gets back plain tensors, and constants are shared with
// the plain graph.
singa_status* graph_set_layout(singa_graph* sg, const char* value, const char* layout) {
  try {
    if (!sg || !sg->g) return make_status(SINGA_INVALID_ARGUMENT, "graph_set_layout: null graph");
    if (!value) return make_status(SINGA_INVALID_ARGUMENT, "graph_set_layout: null value name");
    graph::Graph& g = *sg->g;
    auto it = g.index.find(value);
    if (it == g.index.end())
      return make_status(SINGA_NOT_FOUND, std::string("graph_set_layout: '") + value + "' is not a value of the graph");
    graph::Value& v = g.values[size_t(it->second)];
    const char* what = v.is_input ? "a graph input" : v.is_output ? "a graph output" : v.is_initializer ? "a constant"
                       : v.is_outer ? "a value of an enclosing graph" : v.kind != graph::TypeKind::kTensor ? "not a tensor"
                       : v.producer < 0 ? "computed by no node" : nullptr;
    const std::string want = layout ? layout : "";
    if (what && !want.empty())
      return make_status(SINGA_INVALID_ARGUMENT, "graph_set_layout: '" + v.name + "' is " + what +
                                                     "; only values the graph computes for itself take layout '" + want + "'");
    v.layout = want;
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(SINGA_INTERNAL, std::string("graph_set_layout: ") + e.what());
  }
}

// A runtime-wide option (Runtime::set_option, docs/options.md), or null.
const char* runtime_option(const char* key) {
  if (!key) return nullptr;
  try {
    const std::string* v = Runtime::instance().option(key);
    return v ? v->c_str() : nullptr;
  } catch (...) {
    return nullptr;
  }
}

// A prepare's option, else the runtime's: kernels created outside a prepare
// (eager training ops) have no prepare map but still see the runtime options.
const char* node_option(const singa_node* n, const char* key) {
  if (!n || !key) return nullptr;
  if (n->options) {
    auto it = n->options->find(key);
    if (it != n->options->end()) return it->second.c_str();
  }
  return runtime_option(key);
}

const char* graph_option(const singa_graph* g, const char* key) {
  if (const char* v = host_graph::option(g, key)) return v;
  return g ? runtime_option(key) : nullptr;
}

int32_t copy_info(const singa_value_info& src, singa_value_info* out) {
  if (!out) return 1;
  size_t n = out->struct_size && out->struct_size < sizeof(src) ? out->struct_size : sizeof(src);
  size_t keep = out->struct_size;
  std::memcpy(out, &src, n);
  out->struct_size = keep ? keep : sizeof(src);
  return 1;
}

int32_t node_input_info(const singa_node* n, size_t i, singa_value_info* out) {
  if (!n || i >= n->inputs.size() || !n->input_present[i]) return 0;
  return copy_info(n->inputs[i], out);
}
int32_t node_output_info(const singa_node* n, size_t i, singa_value_info* out) {
  if (!n || i >= n->outputs.size() || (i < n->output_present.size() && !n->output_present[i])) return 0;
  return copy_info(n->outputs[i], out);
}
const DLTensor* node_input_constant(const singa_node* n, size_t i) {
  if (!n || i >= n->constants.size() || !n->constants[i]) return nullptr;
  if (n->constant_views.size() != n->constants.size()) n->constant_views.assign(n->constants.size(), DLTensor{});
  n->constant_views[i] = n->constants[i]->dl();
  return &n->constant_views[i];
}
int32_t node_attr_int(const singa_node* n, const char* name, int64_t* out) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::INT);
  if (!a) return 0;
  if (out) *out = a->i();
  return 1;
}
int32_t node_attr_float(const singa_node* n, const char* name, float* out) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::FLOAT);
  if (!a) return 0;
  if (out) *out = a->f();
  return 1;
}
int32_t node_attr_string(const singa_node* n, const char* name, const char** data, size_t* len) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::STRING);
  if (!a) return 0;
  if (data) *data = a->s().data();
  if (len) *len = a->s().size();
  return 1;
}
int32_t node_attr_ints(const singa_node* n, const char* name, const int64_t** data, size_t* len) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::INTS);
  if (!a) return 0;
  if (data) *data = a->ints().data();
  if (len) *len = size_t(a->ints_size());
  return 1;
}
int32_t node_attr_floats(const singa_node* n, const char* name, const float** data, size_t* len) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::FLOATS);
  if (!a) return 0;
  if (data) *data = a->floats().data();
  if (len) *len = size_t(a->floats_size());
  return 1;
}
int32_t node_attr_num_strings(const singa_node* n, const char* name, size_t* len) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::STRINGS);
  if (!a) return 0;
  if (len) *len = size_t(a->strings_size());
  return 1;
}
int32_t node_attr_string_at(const singa_node* n, const char* name, size_t i, const char** data, size_t* len) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::STRINGS);
  if (!a || i >= size_t(a->strings_size())) return 0;
  if (data) *data = a->strings(int(i)).data();
  if (len) *len = a->strings(int(i)).size();
  return 1;
}
int32_t node_attr_tensor(const singa_node* n, const char* name, const DLTensor** out) {
  auto* a = typed_attr(n, name, ::onnx::AttributeProto::TENSOR);
  if (!a) return 0;
  auto it = n->attr_tensors.find(name);
  if (it == n->attr_tensors.end()) {
    try {
      Tensor t = onnx::from_proto(a->t());
      it = n->attr_tensors.emplace(name, std::make_pair(t, DLTensor{})).first;
      it->second.second = it->second.first.dl();
    } catch (const std::exception& e) {
      log_message(SINGA_LOG_ERROR, (std::string("attribute '") + name + "': " + e.what()).c_str());
      return 0;
    }
  }
  if (out) *out = &it->second.second;
  return 1;
}

// ----------------------------------------------------------------- context
size_t ctx_num_inputs(singa_kernel_context* c) { return c->call.input_views.size(); }
const DLTensor* ctx_input(singa_kernel_context* c, size_t i) {
  if (i >= c->call.inputs.size() || !c->call.inputs[i].defined()) return nullptr;
  return &c->call.input_views[i];
}
size_t ctx_num_outputs(singa_kernel_context* c) { return c->call.outputs.size(); }

singa_status* ctx_set_string(singa_kernel_context* c, size_t output, int64_t element, const char* data, size_t len) {
  try {
    KernelCall& k = c->call;
    if (output >= k.outputs.size() || !k.outputs[output].defined())
      return make_status(SINGA_INVALID_ARGUMENT, "ctx_set_string: output " + std::to_string(output) + " is not allocated");
    k.outputs[output].set_string(element, data, len);
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(SINGA_INVALID_ARGUMENT, e.what());
  }
}

singa_status* ctx_output(singa_kernel_context* c, size_t i, int32_t ndim, const int64_t* shape, DLDataType dtype,
                         DLTensor** out) {
  try {
    KernelCall& k = c->call;
    if (i >= k.outputs.size())
      return make_status(SINGA_INVALID_ARGUMENT, "output index " + std::to_string(i) + " out of range");
    if (ndim < 0 || ndim > SINGA_MAX_DIMS || (ndim > 0 && !shape))
      return make_status(SINGA_INVALID_ARGUMENT, "bad output rank " + std::to_string(ndim));
    Shape s(shape, shape + ndim);
    int32_t t = from_dl(dtype);
    if (t == 0) return make_status(SINGA_INVALID_ARGUMENT, "unsupported output dtype");
    int64_t n = 1;
    for (int64_t d : s) {
      if (d < 0) return make_status(SINGA_INVALID_ARGUMENT, "negative output dimension in " + shape_to_string(s));
      if (d != 0 && n > int64_t(k.max_tensor_bytes) / d)
        return make_status(SINGA_OUT_OF_MEMORY, "output " + shape_to_string(s) + " exceeds the memory limit");
      n *= d;
    }
    const size_t bytes = dtype_nbytes(t, n);
    if (bytes > k.max_tensor_bytes)
      return make_status(SINGA_OUT_OF_MEMORY, "output " + std::to_string(i) + " of shape " + shape_to_string(s) + " (" +
                                                  std::to_string(bytes) + " bytes) exceeds the memory limit of " +
                                                  std::to_string(k.max_tensor_bytes) + " bytes");
    Tensor& o = k.outputs[i];
    if (i == 0 && k.inplace_allowed && !k.inputs.empty() && k.inputs[0].defined() && k.inputs[0].dtype() == t &&
        k.inputs[0].numel() == n && k.inputs[0].device() == k.device && k.inputs[0].storage().use_count() == 2) {
      o = k.inputs[0].reshaped(s);
    } else if (k.arena && k.planned && i < k.planned->size() && (*k.planned)[i].first >= 0 &&
               bytes <= (*k.planned)[i].second && (*k.arena)->device == k.device) {
      auto part = std::make_shared<Storage>();
      part->device = k.device;
      part->device_id = (*k.arena)->device_id;
      part->data = static_cast<char*>((*k.arena)->data) + (*k.planned)[i].first;
      part->bytes = (*k.planned)[i].second;
      part->owner = *k.arena;
      o = Tensor(std::move(part), s, t);
    } else {
      o = Tensor(s, t, k.device, k.device_id);
    }
    k.output_views[i] = o.dl();
    if (out) *out = &k.output_views[i];
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return make_status(SINGA_OUT_OF_MEMORY, e.what());
  }
}

singa_status* ctx_workspace(singa_kernel_context* c, size_t bytes, void** out) {
  try {
    KernelCall& k = c->call;
    if (bytes > k.max_tensor_bytes) return make_status(SINGA_OUT_OF_MEMORY, "workspace exceeds the memory limit");
    k.workspaces.emplace_back(Shape{int64_t(bytes)}, SINGA_ONNX_UINT8, k.device, k.device_id);
    *out = k.workspaces.back().raw_data();
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(SINGA_OUT_OF_MEMORY, e.what());
  }
}

void* ctx_stream(singa_kernel_context* c) { return c->call.stream; }

void ctx_parallel_for(singa_kernel_context* c, int64_t n, int64_t grain, singa_parallel_fn fn, void* user) {
  if (n <= 0) return;
  if (c->call.pool && n > grain) {
    c->call.pool->parallel_for(n, grain, fn, user);
  } else {
    fn(user, 0, n);
  }
}
int32_t ctx_num_threads(singa_kernel_context* c) { return c->call.pool ? c->call.pool->num_threads() : 1; }
const char* ctx_node_name(singa_kernel_context* c) { return c->call.node_name ? c->call.node_name->c_str() : ""; }

singa_host_api make_table() {
  singa_host_api h{};
  h.struct_size = sizeof(h);
  h.abi_major = SINGA_ABI_MAJOR;
  h.abi_minor = SINGA_ABI_MINOR;
  h.status_new = status_new;
  h.status_code = status_code;
  h.status_message = status_message;
  h.status_free = status_free;
  h.log = log_message;
  h.register_device = register_device;
  h.register_kernel = register_kernel;
  h.node_name = node_name;
  h.node_op_type = node_op_type;
  h.node_domain = node_domain;
  h.node_opset = node_opset;
  h.node_num_inputs = node_num_inputs;
  h.node_num_outputs = node_num_outputs;
  h.node_input_info = node_input_info;
  h.node_output_info = node_output_info;
  h.node_input_constant = node_input_constant;
  h.node_attr_int = node_attr_int;
  h.node_attr_float = node_attr_float;
  h.node_attr_string = node_attr_string;
  h.node_attr_ints = node_attr_ints;
  h.node_attr_floats = node_attr_floats;
  h.node_attr_num_strings = node_attr_num_strings;
  h.node_attr_string_at = node_attr_string_at;
  h.node_attr_tensor = node_attr_tensor;
  h.ctx_num_inputs = ctx_num_inputs;
  h.ctx_input = ctx_input;
  h.ctx_num_outputs = ctx_num_outputs;
  h.ctx_output = ctx_output;
  h.ctx_set_string = ctx_set_string;
  h.node_input_name = node_input_name;
  h.node_output_name = node_output_name;
  h.node_option = node_option;
  h.graph_num_nodes = host_graph::num_nodes;
  h.graph_node = host_graph::node;
  h.graph_device = host_graph::device;
  h.graph_option = graph_option;
  h.graph_producer = host_graph::producer;
  h.graph_num_consumers = host_graph::num_consumers;
  h.graph_consumer = host_graph::consumer;
  h.graph_is_output = host_graph::is_output;
  h.graph_value_info = host_graph::value_info;
  h.graph_constant = host_graph::constant;
  h.graph_add_constant = host_graph::add_constant;
  h.graph_replace = host_graph::replace;
  h.graph_has_kernel = host_graph::has_kernel;
  h.grad_input_name = host_grad::input_name;
  h.grad_output_name = host_grad::output_name;
  h.grad_output_grad_name = host_grad::output_grad_name;
  h.grad_input_needed = host_grad::input_needed;
  h.grad_value_info = host_grad::value_info;
  h.grad_emit = host_grad::emit;
  h.grad_set_input_grad = host_grad::set_input_grad;
  h.ctx_workspace = ctx_workspace;
  h.ctx_stream = ctx_stream;
  h.ctx_parallel_for = ctx_parallel_for;
  h.ctx_num_threads = ctx_num_threads;
  h.ctx_node_name = ctx_node_name;
  h.node_input_layout = node_input_layout;
  h.node_output_layout = node_output_layout;
  h.graph_set_layout = graph_set_layout;
  h.runtime_option = runtime_option;
  return h;
}

}  // namespace

const singa_host_api* host_api() {
  static const singa_host_api table = make_table();
  return &table;
}

}  // namespace singa
