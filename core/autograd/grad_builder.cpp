// The host side of gradient hooks: finding an op's backward on its forward
// kernel, and running a builder's emitted nodes eagerly as it emits them.
#include "grad_builder.hpp"

#include "../host.hpp"

#include <singa/error.hpp>
#include <singa/onnx.hpp>

#include <cstring>

namespace singa {
namespace host_grad {
namespace {

const char* name_at(const std::vector<std::string>& names, size_t i) {
  return i < names.size() ? names[i].c_str() : "";
}

std::string norm_domain(const char* d) {
  std::string s = d ? d : "";
  return s == "ai.onnx" ? std::string() : s;
}

void add_attr(::onnx::NodeProto& node, const singa_attr& a) {
  using A = ::onnx::AttributeProto;
  if (!SINGA_HAS_FIELD(&a, singa_attr, count)) throw Error(SINGA_INVALID_ARGUMENT, "an attribute's struct_size is too small");
  if (!a.name || !*a.name) throw Error(SINGA_INVALID_ARGUMENT, "an attribute has no name");
  A* out = nullptr;
  for (auto& existing : *node.mutable_attribute())
    if (existing.name() == a.name) out = &existing;
  if (!out) out = node.add_attribute();
  out->Clear();
  out->set_name(a.name);
  switch (a.type) {
    case SINGA_ATTR_INT: out->set_type(A::INT); out->set_i(a.i); break;
    case SINGA_ATTR_FLOAT: out->set_type(A::FLOAT); out->set_f(a.f); break;
    case SINGA_ATTR_STRING: out->set_type(A::STRING); out->set_s(std::string(a.s ? a.s : "", a.s ? a.s_len : 0)); break;
    case SINGA_ATTR_INTS:
      out->set_type(A::INTS);
      for (size_t k = 0; k < a.count; ++k) out->add_ints(a.ints[k]);
      break;
    case SINGA_ATTR_FLOATS:
      out->set_type(A::FLOATS);
      for (size_t k = 0; k < a.count; ++k) out->add_floats(a.floats[k]);
      break;
    case SINGA_ATTR_TENSOR:
      if (!SINGA_HAS_FIELD(&a, singa_attr, tensor) || !a.tensor)
        throw Error(SINGA_INVALID_ARGUMENT, std::string("tensor attribute '") + a.name + "' has no tensor");
      out->set_type(A::TENSOR);
      *out->mutable_t() = onnx::to_proto(Tensor::copy_of(*a.tensor));
      break;
    default:
      throw Error(SINGA_INVALID_ARGUMENT, std::string("attribute '") + a.name + "' has unknown type " + std::to_string(a.type));
  }
}

const Tensor& value_of(singa_grad_builder* b, const char* name, const std::string& what) {
  auto it = b->values.find(name ? name : "");
  if (it == b->values.end())
    throw Error(SINGA_INVALID_ARGUMENT, what + ": '" + (name ? name : "") + "' is not a value of this backward");
  return it->second;
}

// A Constant node of one tensor attribute becomes its value directly: no
// kernel instance per distinct constant.
bool direct_constant(const singa_node_spec& s, Tensor& out) {
  if (std::strcmp(s.op_type, "Constant") != 0 || !norm_domain(s.domain).empty() || s.attrs_from || s.num_attrs != 1 ||
      s.num_inputs != 0 || s.num_outputs != 1)
    return false;
  const singa_attr& a = s.attrs[0];
  if (a.type != SINGA_ATTR_TENSOR || !a.tensor || !a.name || std::strcmp(a.name, "value") != 0) return false;
  out = Tensor::copy_of(*a.tensor);
  return true;
}

void emit_node(singa_grad_builder* b, const singa_node_spec& s) {
  if (s.struct_size < offsetof(singa_node_spec, num_attrs) + sizeof(size_t))
    throw Error(SINGA_INVALID_ARGUMENT, "struct_size " + std::to_string(s.struct_size) + " is too small");
  if (!s.op_type || !*s.op_type) throw Error(SINGA_INVALID_ARGUMENT, "the node has no op_type");
  const std::string what = std::string("node ") + s.op_type;
  if ((s.num_inputs && !s.inputs) || (s.num_outputs && !s.outputs) || (s.num_attrs && !s.attrs))
    throw Error(SINGA_INVALID_ARGUMENT, what + ": a count is set but its array is null");
  std::vector<Tensor> out;
  Tensor constant;
  if (direct_constant(s, constant)) {
    out.push_back(constant);
  } else {
    ::onnx::NodeProto node;
    node.set_op_type(s.op_type);
    const std::string domain = norm_domain(s.domain);
    if (!domain.empty()) node.set_domain(domain);
    if (s.attrs_from && s.attrs_from->proto) *node.mutable_attribute() = s.attrs_from->proto->attribute();
    for (size_t k = 0; k < s.num_attrs; ++k) add_attr(node, s.attrs[k]);
    std::vector<Tensor> in(s.num_inputs);
    for (size_t i = 0; i < s.num_inputs; ++i)
      if (s.inputs[i] && *s.inputs[i]) in[i] = value_of(b, s.inputs[i], what + " input " + std::to_string(i));
    for (size_t k = 0; k < s.num_outputs; ++k)
      node.add_output(s.outputs[k] && *s.outputs[k] ? "y" + std::to_string(k) : "");
    int64_t opset = s.opset;
    if (opset <= 0)
      opset = domain.empty() ? autograd::kEagerOpset : domain == autograd::kGradDomain ? autograd::kGradOpset : 1;
    out = autograd::call_op(node, opset, in);
  }
  for (size_t k = 0; k < s.num_outputs && k < out.size(); ++k) {
    if (!s.outputs[k] || !*s.outputs[k]) continue;
    if (!out[k].defined()) throw Error(SINGA_INTERNAL, what + " produced no output " + std::to_string(k));
    if (!b->values.emplace(s.outputs[k], out[k]).second)
      throw Error(SINGA_INVALID_ARGUMENT, what + ": output name '" + s.outputs[k] + "' is already a value of this backward");
  }
}

}  // namespace

const char* input_name(singa_grad_builder* b, size_t i) { return b ? name_at(b->inputs, i) : ""; }
const char* output_name(singa_grad_builder* b, size_t i) { return b ? name_at(b->outputs, i) : ""; }
const char* output_grad_name(singa_grad_builder* b, size_t i) { return b ? name_at(b->output_grads, i) : ""; }
int32_t input_needed(singa_grad_builder* b, size_t i) { return b && i < b->need.size() && b->need[i] ? 1 : 0; }

int32_t value_info(singa_grad_builder* b, const char* value, singa_value_info* out) {
  if (!b || !value || !out) return 0;
  auto it = b->values.find(value);
  if (it == b->values.end()) return 0;
  singa_value_info v{};
  v.struct_size = sizeof(v);
  v.onnx_dtype = it->second.dtype();
  v.ndim = int32_t(it->second.ndim());
  for (int d = 0; d < it->second.ndim() && d < SINGA_MAX_DIMS; ++d) v.dims[d] = it->second.shape()[size_t(d)];
  size_t n = out->struct_size && out->struct_size < sizeof(v) ? out->struct_size : sizeof(v);
  std::memcpy(out, &v, n);
  out->struct_size = n;
  return 1;
}

singa_status* emit(singa_grad_builder* b, const singa_node_spec* spec) {
  if (!b || !spec) return make_status(SINGA_INVALID_ARGUMENT, "grad_emit: null argument");
  try {
    emit_node(b, *spec);
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), std::string("grad_emit: ") + e.what());
  } catch (const std::exception& e) {
    return make_status(SINGA_INTERNAL, std::string("grad_emit: ") + e.what());
  }
}

singa_status* set_input_grad(singa_grad_builder* b, size_t i, const char* value) {
  if (!b || !value) return make_status(SINGA_INVALID_ARGUMENT, "grad_set_input_grad: null argument");
  if (i >= b->inputs.size())
    return make_status(SINGA_INVALID_ARGUMENT, "grad_set_input_grad: input " + std::to_string(i) +
                                                   " out of range (the node has " + std::to_string(b->inputs.size()) + ")");
  if (!b->values.count(value))
    return make_status(SINGA_INVALID_ARGUMENT, std::string("grad_set_input_grad: '") + value +
                                                   "' is not a value of this backward");
  b->input_grads[i] = value;
  return nullptr;
}

}  // namespace host_grad

namespace autograd {
namespace {

const singa_gradient_ext* builder_of(const singa_kernel_def& def) {
  for (const singa_extension* e = def.extensions; e; e = e->next) {
    if (e->type != SINGA_EXTENSION_GRADIENT) continue;
    auto* g = reinterpret_cast<const singa_gradient_ext*>(e);
    if (SINGA_EXTENSION_HAS_FIELD(g, singa_gradient_ext, build) && g->build) return g;
  }
  return nullptr;
}

const singa_gradient_def* backward_of(const singa_kernel_def& def) {
  const singa_gradient_def* g = def.gradient;
  return g && SINGA_HAS_FIELD(g, singa_gradient_def, backward) && g->backward ? g : nullptr;
}

}  // namespace

const singa_gradient_ext* find_builder(const std::string& domain, const std::string& op_type, int64_t opset,
                                       const KernelEntry* skip) {
  Runtime& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  for (const KernelEntry* k : rt.kernels(domain == "ai.onnx" ? std::string() : domain, op_type)) {
    if (k == skip || (opset > 0 && (opset < k->def.since_version || opset > k->last_opset))) continue;
    if (const singa_gradient_ext* g = builder_of(k->def)) return g;
  }
  return nullptr;
}

bool has_gradient_hook(const std::string& domain, const std::string& op_type, int64_t opset) {
  Runtime& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  for (const KernelEntry* k : rt.kernels(domain == "ai.onnx" ? std::string() : domain, op_type)) {
    if (opset > 0 && (opset < k->def.since_version || opset > k->last_opset)) continue;
    if (builder_of(k->def) || backward_of(k->def)) return true;
  }
  return false;
}

GradientHooks gradient_hooks(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs) {
  GradientHooks h;
  h.forward = kernel_for(node, opset, inputs);
  h.backward = backward_of(h.forward.kernel->def);
  h.builder = builder_of(h.forward.kernel->def);
  // A kernel without hooks (another pack's faster forward, say) borrows a
  // builder from a kernel of the same op: a builder depends on the op's
  // meaning, not on a kernel's state.
  if (!h.any()) h.builder = find_builder(node.domain(), node.op_type(), opset, h.forward.kernel);
  return h;
}

std::vector<Tensor> run_gradient(const GradientHooks& hooks, const ::onnx::NodeProto& node, int64_t opset,
                                 const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                 const std::vector<Tensor>& gy, const std::vector<bool>& need,
                                 const std::string& label) {
  std::vector<Tensor> gx(x.size());
  if (hooks.backward) {
    std::vector<Tensor> in(x);
    in.insert(in.end(), y.begin(), y.end());
    in.insert(in.end(), gy.begin(), gy.end());
    std::vector<Tensor> out = call_backward(hooks.forward, in, x.size());
    for (size_t i = 0; i < x.size() && i < out.size(); ++i)
      if (need[i]) gx[i] = out[i];
    return gx;
  }
  if (!hooks.builder) throw Error(SINGA_UNIMPLEMENTED, label + " has no gradient");
  // The forward node as the builder sees it: attributes, and every input's
  // shape and data (all known in an eager backward).
  singa_node fwd;
  fwd.proto = &node;
  fwd.opset = opset;
  auto info_of = [](const Tensor& t) {
    singa_value_info v{};
    v.struct_size = sizeof(v);
    v.ndim = -1;
    if (!t.defined()) return v;
    v.onnx_dtype = t.dtype();
    v.ndim = int32_t(t.ndim());
    for (int d = 0; d < t.ndim() && d < SINGA_MAX_DIMS; ++d) v.dims[d] = t.shape()[size_t(d)];
    return v;
  };
  for (const Tensor& t : x) {
    fwd.inputs.push_back(info_of(t));
    fwd.input_present.push_back(t.defined());
    fwd.constants.push_back(t.defined() && t.on_host() ? &t : nullptr);
  }
  for (const Tensor& t : y) {
    fwd.outputs.push_back(info_of(t));
    fwd.output_present.push_back(t.defined());
  }
  singa_grad_builder b;
  b.label = label;
  b.need = need;
  b.input_grads.resize(x.size());
  auto name = [&](const std::string& prefix, size_t i, const Tensor& t) {
    if (!t.defined()) return std::string();
    std::string n = prefix + std::to_string(i);
    b.values[n] = t;
    return n;
  };
  for (size_t i = 0; i < x.size(); ++i) b.inputs.push_back(name("x", i, x[i]));
  for (size_t k = 0; k < y.size(); ++k) b.outputs.push_back(name("y", k, y[k]));
  for (size_t k = 0; k < gy.size(); ++k) b.output_grads.push_back(name("dy", k, gy[k]));
  throw_status(hooks.builder->build(hooks.builder->user, &fwd, &b), label);
  for (size_t i = 0; i < x.size(); ++i)
    if (need[i] && !b.input_grads[i].empty()) gx[i] = b.values[b.input_grads[i]];
  return gx;
}

}  // namespace autograd
}  // namespace singa
