#include "tape.hpp"

#include "grad_builder.hpp"

#include <singa/error.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace singa {
namespace autograd {

// ---------------------------------------------------------------- Attrs
Attrs& Attrs::set(const std::string& name, int64_t v) {
  Item it{name, Kind::kInt};
  it.i = v;
  items_.push_back(std::move(it));
  return *this;
}
Attrs& Attrs::set(const std::string& name, float v) {
  Item it{name, Kind::kFloat};
  it.f = v;
  items_.push_back(std::move(it));
  return *this;
}
Attrs& Attrs::set(const std::string& name, const std::string& v) {
  Item it{name, Kind::kString};
  it.s = v;
  items_.push_back(std::move(it));
  return *this;
}
Attrs& Attrs::set(const std::string& name, std::vector<int64_t> v) {
  Item it{name, Kind::kInts};
  it.ints = std::move(v);
  items_.push_back(std::move(it));
  return *this;
}
Attrs& Attrs::set(const std::string& name, std::vector<float> v) {
  Item it{name, Kind::kFloats};
  it.floats = std::move(v);
  items_.push_back(std::move(it));
  return *this;
}

void add_attrs(::onnx::NodeProto& node, const Attrs& attrs) {
  using A = ::onnx::AttributeProto;
  for (const auto& it : attrs.items()) {
    A* a = nullptr;
    for (auto& existing : *node.mutable_attribute())
      if (existing.name() == it.name) a = &existing;
    if (!a) a = node.add_attribute();
    a->Clear();
    a->set_name(it.name);
    switch (it.kind) {
      case Attrs::Kind::kInt: a->set_type(A::INT); a->set_i(it.i); break;
      case Attrs::Kind::kFloat: a->set_type(A::FLOAT); a->set_f(it.f); break;
      case Attrs::Kind::kString: a->set_type(A::STRING); a->set_s(it.s); break;
      case Attrs::Kind::kInts:
        a->set_type(A::INTS);
        for (int64_t v : it.ints) a->add_ints(v);
        break;
      case Attrs::Kind::kFloats:
        a->set_type(A::FLOATS);
        for (float v : it.floats) a->add_floats(v);
        break;
    }
  }
}

::onnx::NodeProto bare_node(const ::onnx::NodeProto& source) {
  ::onnx::NodeProto n;
  n.set_op_type(source.op_type());
  if (!source.domain().empty() && source.domain() != "ai.onnx") n.set_domain(source.domain());
  *n.mutable_attribute() = source.attribute();
  for (int k = 0; k < source.output_size(); ++k) n.add_output(source.output(k).empty() ? "" : "y" + std::to_string(k));
  return n;
}

// ---------------------------------------------------------------- Variable
Variable::Variable(Tensor data, bool requires_grad, std::string name) : s_(std::make_shared<State>()) {
  s_->data = std::move(data);
  s_->requires_grad = requires_grad;
  s_->name = std::move(name);
}

static Variable::State& state_of(const std::shared_ptr<Variable::State>& s) {
  if (!s) throw Error(SINGA_INVALID_ARGUMENT, "use of an undefined Variable");
  return *s;
}

const Tensor& Variable::data() const { return state_of(s_).data; }
void Variable::set_data(Tensor t) { state_of(s_).data = std::move(t); }
const Tensor& Variable::grad() const { return state_of(s_).grad; }
void Variable::set_grad(Tensor g) { state_of(s_).grad = std::move(g); }
void Variable::zero_grad() { state_of(s_).grad = Tensor(); }
bool Variable::requires_grad() const { return s_ && s_->requires_grad; }
void Variable::set_requires_grad(bool r) { state_of(s_).requires_grad = r; }
const std::string& Variable::name() const { return state_of(s_).name; }
void Variable::set_name(std::string n) { state_of(s_).name = std::move(n); }
const std::shared_ptr<TapeNode>& Variable::creator() const { return state_of(s_).creator; }
int Variable::output_index() const { return state_of(s_).index; }
Variable Variable::detach() const { return Variable(data(), false, name()); }

// ---------------------------------------------------------------- recording
static thread_local bool g_no_grad = false;
NoGradGuard::NoGradGuard() : prev_(g_no_grad) { g_no_grad = true; }
NoGradGuard::~NoGradGuard() { g_no_grad = prev_; }
bool recording() { return !g_no_grad; }

static bool is_real(int32_t t) {
  return t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_FLOAT16 || t == SINGA_ONNX_BFLOAT16;
}

std::vector<Variable> apply_node(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Variable>& inputs) {
  std::vector<Tensor> in(inputs.size());
  bool needs = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    in[i] = inputs[i].data();
    needs = needs || inputs[i].requires_grad();
  }
  std::vector<Tensor> out = call_op(node, opset, in);
  std::vector<Variable> result(out.size());
  std::shared_ptr<TapeNode> tn;
  if (recording()) {
    tn = std::make_shared<TapeNode>();
    tn->proto = node;
    tn->opset = opset;
    tn->inputs = inputs;
    tn->needs_grad = needs;
    tn->output_data = out;
    tn->outputs.resize(out.size());
  }
  for (size_t k = 0; k < out.size(); ++k) {
    if (!out[k].defined()) continue;
    auto s = std::make_shared<Variable::State>();
    s->data = out[k];
    if (tn) {
      s->creator = tn;
      s->index = int(k);
      s->requires_grad = needs && is_real(out[k].dtype());
      tn->outputs[k] = s;
    }
    result[k] = Variable(s);
  }
  return result;
}

std::vector<Variable> apply(const std::string& op_type, const std::vector<Variable>& inputs, const Attrs& attrs,
                            size_t num_outputs, const std::string& domain, int64_t opset) {
  ::onnx::NodeProto node;
  node.set_op_type(op_type);
  bool default_domain = domain.empty() || domain == "ai.onnx";
  if (!default_domain) node.set_domain(domain);
  add_attrs(node, attrs);
  for (size_t k = 0; k < num_outputs; ++k) node.add_output("y" + std::to_string(k));
  if (opset == 0) opset = default_domain ? kEagerOpset : domain == kGradDomain ? kGradOpset : 1;
  return apply_node(node, opset, inputs);
}

Variable apply1(const std::string& op_type, const std::vector<Variable>& inputs, const Attrs& attrs) {
  return apply(op_type, inputs, attrs, 1)[0];
}

// ---------------------------------------------------------------- hooks
bool has_gradient(const std::string& op_type, const std::string& domain) {
  return has_gradient_hook(domain, op_type, 0);
}

// ---------------------------------------------------------------- helpers
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs, size_t outputs,
                        const std::string& domain) {
  ::onnx::NodeProto node;
  node.set_op_type(op);
  if (!domain.empty()) node.set_domain(domain);
  add_attrs(node, attrs);
  for (size_t k = 0; k < outputs; ++k) node.add_output("y" + std::to_string(k));
  return call_op(node, domain.empty() ? kEagerOpset : kGradOpset, in);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs, const std::string& domain) {
  return run(op, in, attrs, 1, domain)[0];
}

Tensor scalar(double v, int32_t dtype) {
  Tensor t(Shape{}, dtype);
  switch (dtype) {
    case SINGA_ONNX_FLOAT: *t.data<float>() = float(v); break;
    case SINGA_ONNX_DOUBLE: *t.data<double>() = v; break;
    case SINGA_ONNX_INT64: *t.data<int64_t>() = int64_t(v); break;
    case SINGA_ONNX_INT32: *t.data<int32_t>() = int32_t(v); break;
    default: throw Error(SINGA_INVALID_ARGUMENT, std::string("scalar(): unsupported element type ") + dtype_name(dtype));
  }
  return t;
}

Tensor int64s(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>(Shape{int64_t(v.size())}, SINGA_ONNX_INT64, v); }

// ---------------------------------------------------------------- backward
static Tensor ones_like(const Tensor& t) {
  Tensor o(t.shape(), t.dtype());
  if (t.dtype() == SINGA_ONNX_FLOAT) std::fill(o.data<float>(), o.data<float>() + o.numel(), 1.0f);
  else if (t.dtype() == SINGA_ONNX_DOUBLE) std::fill(o.data<double>(), o.data<double>() + o.numel(), 1.0);
  else throw Error(SINGA_INVALID_ARGUMENT, std::string("backward: loss of element type ") + dtype_name(t.dtype()));
  return o;
}

// "op 'Conv' (output 'conv1')": tape nodes carry no node names, but an
// imported model names the Variables a node produces.
static std::string node_label(const TapeNode& n) {
  std::string l = "op '" + n.proto.op_type() + "'";
  if (!n.proto.domain().empty()) l += " of domain '" + n.proto.domain() + "'";
  for (const auto& w : n.outputs)
    if (auto s = w.lock())
      if (!s->name.empty()) return l + " (output '" + s->name + "')";
  return l;
}

static Tensor accumulate(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  return run1("Add", {a, b});
}

std::vector<Variable> grad_leaves(const Variable& loss) {
  std::vector<Variable> leaves;
  std::unordered_set<const void*> seen_vars;
  std::unordered_set<const TapeNode*> seen_nodes;
  std::vector<Variable> stack{loss};
  while (!stack.empty()) {
    Variable v = stack.back();
    stack.pop_back();
    if (!v.defined() || !seen_vars.insert(v.id()).second) continue;
    const auto& node = v.creator();
    if (!node) {
      if (v.requires_grad()) leaves.push_back(v);
      continue;
    }
    if (!node->needs_grad || !seen_nodes.insert(node.get()).second) continue;
    for (auto it = node->inputs.rbegin(); it != node->inputs.rend(); ++it) stack.push_back(*it);
  }
  return leaves;
}

void backward(const Variable& loss, const Tensor& seed, const std::function<void(const Variable&)>& on_final) {
  if (!loss.defined()) throw Error(SINGA_INVALID_ARGUMENT, "backward: the loss is an undefined Variable");
  Tensor g0 = seed;
  if (!g0.defined()) {
    if (loss.data().numel() != 1)
      throw Error(SINGA_INVALID_ARGUMENT, "backward: the loss has shape " + shape_to_string(loss.shape()) +
                                              "; give the gradient of a non-scalar loss as `seed`");
    g0 = ones_like(loss.data());
  } else if (g0.shape() != loss.shape()) {
    throw Error(SINGA_INVALID_ARGUMENT, "backward: seed of shape " + shape_to_string(g0.shape()) +
                                            " for a loss of shape " + shape_to_string(loss.shape()));
  }
  if (!loss.requires_grad()) throw Error(SINGA_INVALID_ARGUMENT, "backward: the loss does not depend on any Variable that requires a gradient");
  if (!loss.creator()) {
    Variable l = loss;
    l.set_grad(accumulate(l.grad(), g0));
    return;
  }
  // Nodes in topological order (inputs first), over the part that needs gradients.
  std::vector<TapeNode*> order;
  std::unordered_set<TapeNode*> seen;
  std::vector<std::pair<TapeNode*, size_t>> stack{{loss.creator().get(), 0}};
  seen.insert(loss.creator().get());
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->inputs.size()) {
      const Variable& in = n->inputs[i++];
      if (!in.defined() || !in.requires_grad()) continue;
      TapeNode* c = in.creator().get();
      if (c && c->needs_grad && seen.insert(c).second) stack.push_back({c, 0});
      continue;
    }
    order.push_back(n);
    stack.pop_back();
  }
  std::unordered_map<Variable::State*, Tensor> grads;
  grads[loss.state().get()] = g0;
  // For on_final: how many nodes still to visit read each leaf.
  std::unordered_map<Variable::State*, int> leaf_readers;
  auto is_leaf_input = [](const Variable& in) {
    return in.defined() && in.requires_grad() && !(in.creator() && in.creator()->needs_grad);
  };
  if (on_final)
    for (TapeNode* n : order)
      for (const Variable& in : n->inputs)
        if (is_leaf_input(in)) ++leaf_readers[in.state().get()];
  auto visited = [&](TapeNode& n) {
    if (!on_final) return;
    for (const Variable& in : n.inputs)
      if (is_leaf_input(in) && --leaf_readers[in.state().get()] == 0) on_final(in);
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    TapeNode& n = **it;
    std::vector<Tensor> gy(n.outputs.size());
    bool any = false;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      auto s = n.outputs[k].lock();
      if (!s) continue;
      auto g = grads.find(s.get());
      if (g == grads.end()) continue;
      gy[k] = std::move(g->second);
      grads.erase(g);
      any = true;
    }
    if (!any) {
      visited(n);
      continue;
    }
    std::vector<Tensor> x(n.inputs.size());
    std::vector<bool> need(n.inputs.size(), false);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].defined()) continue;
      x[i] = n.inputs[i].data();
      need[i] = n.inputs[i].requires_grad();
    }
    // Output 0 always has a gradient (zeros when nothing reached it), so
    // builders of single-output ops need not check.
    if (!gy.empty() && !gy[0].defined() && n.output_data[0].defined() && is_real(n.output_data[0].dtype()))
      gy[0] = Tensor::zeros(n.output_data[0].shape(), n.output_data[0].dtype());
    const std::string label = "backward of " + node_label(n);
    GradientHooks hooks = gradient_hooks(n.proto, n.opset, x);
    if (!hooks.any())
      throw Error(SINGA_UNIMPLEMENTED, label + ": the op has no gradient (no loaded kernel of it offers a backward "
                                               "kernel or a gradient builder)");
    std::vector<Tensor> gx = run_gradient(hooks, n.proto, n.opset, x, n.output_data, gy, need, label);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!need[i] || !gx[i].defined()) continue;
      auto& st = *n.inputs[i].state();
      if (gx[i].shape() != st.data.shape())
        throw Error(SINGA_INTERNAL, label + ": gradient of input " + std::to_string(i) +
                                        " has shape " + shape_to_string(gx[i].shape()) + ", the input " +
                                        shape_to_string(st.data.shape()));
      if (st.creator && st.creator->needs_grad) {
        Tensor& slot = grads[&st];
        slot = accumulate(slot, gx[i]);
      } else {
        st.grad = accumulate(st.grad, gx[i]);
      }
    }
    visited(n);
  }
}

// ---------------------------------------------------------------- ops
Variable add(const Variable& a, const Variable& b) { return apply1("Add", {a, b}); }
Variable sub(const Variable& a, const Variable& b) { return apply1("Sub", {a, b}); }
Variable mul(const Variable& a, const Variable& b) { return apply1("Mul", {a, b}); }
Variable div(const Variable& a, const Variable& b) { return apply1("Div", {a, b}); }
Variable matmul(const Variable& a, const Variable& b) { return apply1("MatMul", {a, b}); }
Variable relu(const Variable& x) { return apply1("Relu", {x}); }
Variable sigmoid(const Variable& x) { return apply1("Sigmoid", {x}); }
Variable tanh(const Variable& x) { return apply1("Tanh", {x}); }
Variable softmax(const Variable& x, int64_t axis) { return apply1("Softmax", {x}, Attrs().set("axis", axis)); }
Variable log_softmax(const Variable& x, int64_t axis) { return apply1("LogSoftmax", {x}, Attrs().set("axis", axis)); }
Variable reshape(const Variable& x, const std::vector<int64_t>& shape) {
  return apply1("Reshape", {x, Variable(int64s(shape))});
}
Variable flatten(const Variable& x, int64_t axis) { return apply1("Flatten", {x}, Attrs().set("axis", axis)); }
Variable transpose(const Variable& x, const std::vector<int64_t>& perm) {
  return apply1("Transpose", {x}, Attrs().set("perm", perm));
}
// Empty `axes` reduce everything: no axes input / attribute at all.
Variable reduce_sum(const Variable& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<Variable> in{x};
  if (!axes.empty()) in.emplace_back(int64s(axes));
  return apply1("ReduceSum", in, Attrs().set("keepdims", int64_t(keepdims)));
}
Variable reduce_mean(const Variable& x, const std::vector<int64_t>& axes, bool keepdims) {
  Attrs a;
  a.set("keepdims", int64_t(keepdims));
  if (!axes.empty()) a.set("axes", axes);
  return apply1("ReduceMean", {x}, a);
}
Variable concat(const std::vector<Variable>& xs, int64_t axis) { return apply1("Concat", xs, Attrs().set("axis", axis)); }

}  // namespace autograd
}  // namespace singa
