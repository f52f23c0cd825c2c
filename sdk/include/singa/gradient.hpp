// gradient.hpp - writing an op's gradient in C++ over the C ABI (1.3).
//
// Autograd finds an op's backward only through the forward kernel's hooks:
// a builder of backward nodes (singa_gradient_ext) or a backward kernel
// (singa_gradient_def). This header makes both short.
//
// A builder reads the forward node's values by name and emits nodes made of
// registered ops; the host runs each one at once, so shapes and input data
// are known while the builder runs:
//
//   // y = x * w:  dx = dy * w,  dw = dy * x (summed over broadcast axes)
//   SINGA_GRADIENT("", "Mul", [](singa::sdk::GradBuilder& b) {
//     if (b.needs(0)) b.set_sum_to(0, b.emit("Mul", {b.output_grad(0), b.input(1)}));
//     if (b.needs(1)) b.set_sum_to(1, b.emit("Mul", {b.output_grad(0), b.input(0)}));
//   });
//
// SINGA_GRADIENT registers the builder for every kernel of that op this
// plugin registers through Registrar::kernel (the registrations of a plugin
// may come in any order within the plugin's sources).
//
// A backward kernel is a `backward` member of the kernel class, found by
// Registrar::kernel:
//
//   struct Square {
//     explicit Square(const singa::sdk::Node&) {}
//     void compute(singa::sdk::Context& ctx) const;
//     // Inputs: the forward inputs, then the forward outputs, then the
//     // gradients of the outputs (absent when none reached them). Output i:
//     // the gradient of forward input i.
//     void backward(singa::sdk::Context& ctx) const;
//   };
//
// When a kernel has both, the host uses the backward kernel.
//
// This header is included by kernel.hpp; either may be included first.
#include <singa/kernel.hpp>

#ifndef SINGA_GRADIENT_HPP
#define SINGA_GRADIENT_HPP

#include <map>
#include <memory>
#include <type_traits>

namespace singa {
namespace sdk {

// The domain of singa's backward compute kernels (plugins/ops_grad).
constexpr const char* kGradDomain = "ai.singa.grad";

// A named value of one backward ("" = absent).
using Value = std::string;

// An attribute of an emitted node, built from a C++ value.
class Attr {
 public:
  Attr(std::string name, int64_t v) : name_(std::move(name)), type_(SINGA_ATTR_INT), i_(v) {}
  Attr(std::string name, int v) : Attr(std::move(name), int64_t(v)) {}
  Attr(std::string name, float v) : name_(std::move(name)), type_(SINGA_ATTR_FLOAT), f_(v) {}
  Attr(std::string name, double v) : Attr(std::move(name), float(v)) {}
  Attr(std::string name, std::string v) : name_(std::move(name)), type_(SINGA_ATTR_STRING), s_(std::move(v)) {}
  Attr(std::string name, const char* v) : Attr(std::move(name), std::string(v)) {}
  Attr(std::string name, std::vector<int64_t> v) : name_(std::move(name)), type_(SINGA_ATTR_INTS), ints_(std::move(v)) {}
  Attr(std::string name, std::vector<float> v)
      : name_(std::move(name)), type_(SINGA_ATTR_FLOATS), floats_(std::move(v)) {}

  // The C view; valid while this Attr lives.
  singa_attr raw() const {
    singa_attr a{};
    a.struct_size = SINGA_ATTR_STRUCT_SIZE;
    a.name = name_.c_str();
    a.type = type_;
    a.i = i_;
    a.f = f_;
    a.s = s_.data();
    a.s_len = s_.size();
    a.ints = ints_.data();
    a.floats = floats_.data();
    a.count = type_ == SINGA_ATTR_INTS ? ints_.size() : floats_.size();
    return a;
  }

 private:
  std::string name_;
  int32_t type_;
  int64_t i_ = 0;
  float f_ = 0;
  std::string s_;
  std::vector<int64_t> ints_;
  std::vector<float> floats_;
};

// How to emit one node (the general form of GradBuilder::emit).
struct Emit {
  std::string op_type;
  std::string domain;           // "" = ai.onnx
  std::vector<Value> inputs;    // "" = absent optional input
  size_t num_outputs = 1;
  std::vector<bool> wanted;     // per output; empty = all wanted
  std::vector<Attr> attrs;
  bool forward_attrs = false;   // copy the forward node's attributes first
  int64_t opset = 0;            // 0: 17 for ai.onnx, 1 for other domains
};

// One backward being built: what a builder function receives.
class GradBuilder {
 public:
  GradBuilder(const singa_node* node, singa_grad_builder* b) : node_(node), b_(b) {}

  // The forward node: attributes, opset, and (in the eager backward) every
  // input's shape and data.
  const Node& node() const { return node_; }
  size_t num_inputs() const { return node_.num_inputs(); }
  size_t num_outputs() const { return node_.num_outputs(); }

  // Forward input i, output k and the gradient reaching output k ("" when
  // absent / not kept / none reached it).
  Value input(size_t i) const { return host().grad_input_name(b_, i); }
  Value output(size_t k) const { return host().grad_output_name(b_, k); }
  Value output_grad(size_t k) const { return host().grad_output_grad_name(b_, k); }
  // Whether forward input i needs a gradient; set only those.
  bool needs(size_t i) const { return host().grad_input_needed(b_, i) != 0; }

  singa_value_info info(const Value& v) const {
    singa_value_info vi{};
    vi.struct_size = sizeof(vi);
    check(host().grad_value_info(b_, v.c_str(), &vi) != 0, "gradient: no value named '" + v + "'");
    return vi;
  }
  Shape shape(const Value& v) const {
    singa_value_info vi = info(v);
    check(vi.ndim >= 0, "gradient: value '" + v + "' has no known shape");
    return Shape(vi.dims, vi.dims + vi.ndim);
  }
  int32_t dtype(const Value& v) const { return info(v).onnx_dtype; }
  int ndim(const Value& v) const { return int(shape(v).size()); }
  // Forward input i's data on the host (absent when the host does not know it).
  Tensor constant(size_t i) const { return node_.constant(i); }
  // Forward input i (an integer tensor: axes, repeats) as a vector.
  std::vector<int64_t> input_ints(size_t i) const {
    Tensor t = constant(i);
    check(t.present(), "gradient of " + node_.op_type() + ": input " + std::to_string(i) + " is not known on the host");
    return t.to_int_vector();
  }

  // Emits a node and returns its outputs' value names ("" for unwanted ones).
  std::vector<Value> emit(const Emit& e) {
    std::vector<Value> outs(e.num_outputs);
    for (size_t k = 0; k < e.num_outputs; ++k)
      if (e.wanted.empty() || (k < e.wanted.size() && e.wanted[k])) outs[k] = "g" + std::to_string(next_++);
    std::vector<const char*> in, out;
    for (const Value& v : e.inputs) in.push_back(v.c_str());
    for (const Value& v : outs) out.push_back(v.c_str());
    std::vector<singa_attr> attrs;
    for (const Attr& a : e.attrs) attrs.push_back(a.raw());
    singa_node_spec spec{};
    spec.struct_size = SINGA_NODE_SPEC_STRUCT_SIZE;
    spec.domain = e.domain.c_str();
    spec.op_type = e.op_type.c_str();
    spec.opset = e.opset;
    spec.inputs = in.data();
    spec.num_inputs = in.size();
    spec.outputs = out.data();
    spec.num_outputs = out.size();
    spec.attrs_from = e.forward_attrs ? node_.raw() : nullptr;
    spec.attrs = attrs.data();
    spec.num_attrs = attrs.size();
    throw_if(host().grad_emit(b_, &spec));
    return outs;
  }
  // An op of the default domain with one output.
  Value emit(const std::string& op, const std::vector<Value>& inputs, std::vector<Attr> attrs = {}) {
    Emit e;
    e.op_type = op;
    e.inputs = inputs;
    e.attrs = std::move(attrs);
    return emit(e)[0];
  }
  // A backward compute kernel of ai.singa.grad carrying the forward node's
  // attributes (then `extra`); output k only where want[k].
  std::vector<Value> grad_kernel(const std::string& op, const std::vector<Value>& inputs, const std::vector<bool>& want,
                                 std::vector<Attr> extra = {}) {
    Emit e;
    e.op_type = op;
    e.domain = kGradDomain;
    e.inputs = inputs;
    e.num_outputs = want.size();
    e.wanted = want;
    e.attrs = std::move(extra);
    e.forward_attrs = true;
    return emit(e);
  }

  // Constants: a scalar of element type `dtype`, a 1-D int64 tensor.
  Value scalar(double v, int32_t dtype) { return constant_value(v, dtype); }
  Value int64s(const std::vector<int64_t>& v) {
    int64_t n = int64_t(v.size());
    DLTensor t{};
    t.data = const_cast<int64_t*>(v.data());
    t.device = {kDLCPU, 0};
    t.ndim = 1;
    t.dtype = dl_dtype(SINGA_ONNX_INT64);
    t.shape = &n;
    return constant_tensor(t);
  }

  // Elementwise arithmetic (broadcasting as the ops do).
  Value add(const Value& a, const Value& c) { return emit("Add", {a, c}); }
  Value sub(const Value& a, const Value& c) { return emit("Sub", {a, c}); }
  Value mul(const Value& a, const Value& c) { return emit("Mul", {a, c}); }
  Value div(const Value& a, const Value& c) { return emit("Div", {a, c}); }
  Value neg(const Value& a) { return emit("Neg", {a}); }
  Value reshape(const Value& a, const Shape& s) { return emit("Reshape", {a, int64s(s)}); }
  Value zeros(const Shape& s, int32_t dtype) { return emit("Expand", {scalar(0, dtype), int64s(s)}); }
  // `g` summed over the axes broadcasting expanded, to `target`.
  Value sum_to(const Value& g, const Shape& target) {
    const Shape gs = shape(g);
    if (gs == target) return g;
    const size_t lead = gs.size() - target.size();
    std::vector<int64_t> axes;
    for (size_t i = 0; i < gs.size(); ++i) {
      const int64_t want = i < lead ? 1 : target[i - lead];
      if (i < lead || (want == 1 && gs[i] != 1)) axes.push_back(int64_t(i));
    }
    Value r = axes.empty() ? g : emit("ReduceSum", {g, int64s(axes)}, {Attr("keepdims", int64_t(1))});
    return shape(r) == target ? r : reshape(r, target);
  }

  // Names the gradient of forward input i; set_sum_to first sums `g` to
  // input i's shape.
  void set(size_t i, const Value& g) { throw_if(host().grad_set_input_grad(b_, i, g.c_str())); }
  void set_sum_to(size_t i, const Value& g) { set(i, sum_to(g, shape(input(i)))); }

  singa_grad_builder* raw() const { return b_; }

 private:
  Value constant_value(double v, int32_t dtype) {
    Value out;
    dispatch(dtype, [&](auto tag) {
      using T = decltype(tag);
      T x = static_cast<T>(v);
      DLTensor t{};
      t.data = &x;
      t.device = {kDLCPU, 0};
      t.ndim = 0;
      t.dtype = dl_dtype(dtype);
      out = constant_tensor(t);
    }, kNumericTypes);
    return out;
  }
  Value constant_tensor(const DLTensor& t) {
    Attr dummy("value", int64_t(0));
    singa_attr a = dummy.raw();
    a.type = SINGA_ATTR_TENSOR;
    a.tensor = &t;
    Value out = "g" + std::to_string(next_++);
    const char* outs[] = {out.c_str()};
    singa_node_spec spec{};
    spec.struct_size = SINGA_NODE_SPEC_STRUCT_SIZE;
    spec.domain = "";
    spec.op_type = "Constant";
    spec.outputs = outs;
    spec.num_outputs = 1;
    spec.attrs = &a;
    spec.num_attrs = 1;
    throw_if(host().grad_emit(b_, &spec));
    return out;
  }

  Node node_;
  singa_grad_builder* b_;
  int next_ = 0;
};

using GradientFn = void (*)(GradBuilder&);

// ----------------------------------------------------------- registration

namespace detail {

inline singa_status* run_builder(void* user, const singa_node* node, singa_grad_builder* builder) {
  SINGA_TRY_BEGIN
  GradBuilder b(node, builder);
  reinterpret_cast<GradientFn>(user)(b);
  SINGA_TRY_END
}

// This plugin's builders by (domain, op_type). The extension structs live
// here until the plugin is unloaded (node-based map: stable addresses).
inline std::map<std::pair<std::string, std::string>, singa_gradient_ext>& gradient_table() {
  static std::map<std::pair<std::string, std::string>, singa_gradient_ext> table;
  return table;
}

template <typename K, typename = void>
struct has_backward : std::false_type {};
template <typename K>
struct has_backward<K, decltype(std::declval<const K&>().backward(std::declval<Context&>()), void())>
    : std::true_type {};

template <typename K>
struct BackwardTrampoline {
  static singa_status* backward(void* state, singa_kernel_context* ctx) {
    SINGA_TRY_BEGIN
    Context c(ctx);
    static_cast<const K*>(state)->backward(c);
    SINGA_TRY_END
  }
  static const singa_gradient_def* def() {
    static const singa_gradient_def d{sizeof(singa_gradient_def), &backward};
    return &d;
  }
};

inline std::string norm_domain(const char* d) {
  std::string s = d ? d : "";
  return s == "ai.onnx" ? std::string() : s;
}

}  // namespace detail

// Registers `fn` as the builder of op_type's gradient for this plugin's
// kernels of that op. Call before the kernels are registered (SINGA_GRADIENT
// does, at load time).
inline void register_gradient(const char* domain, const char* op_type, GradientFn fn) {
  singa_gradient_ext e{};
  e.base.struct_size = SINGA_GRADIENT_EXT_STRUCT_SIZE;
  e.base.type = SINGA_EXTENSION_GRADIENT;
  e.base.next = nullptr;
  e.user = reinterpret_cast<void*>(fn);
  e.build = &detail::run_builder;
  detail::gradient_table()[{detail::norm_domain(domain), op_type}] = e;
}

// Called by Registrar::kernel: hangs this plugin's hooks for the op on `def`.
template <typename K>
void attach_gradient(singa_kernel_def& def) {
  if constexpr (detail::has_backward<K>::value) def.gradient = detail::BackwardTrampoline<K>::def();
  auto& t = detail::gradient_table();
  auto it = t.find({detail::norm_domain(def.domain), def.op_type ? def.op_type : ""});
  if (it != t.end()) def.extensions = &it->second.base;
}

struct GradientRegistration {
  GradientRegistration(const char* domain, const char* op_type, GradientFn fn) {
    register_gradient(domain, op_type, fn);
  }
};

}  // namespace sdk
}  // namespace singa

#define SINGA_GRADIENT_CAT2_(a, b) a##b
#define SINGA_GRADIENT_CAT_(a, b) SINGA_GRADIENT_CAT2_(a, b)
// Registers a builder (a function or captureless lambda taking GradBuilder&)
// for op OP of DOMAIN, at load time.
#define SINGA_GRADIENT(DOMAIN, OP, ...)                                                          \
  static const ::singa::sdk::GradientRegistration SINGA_GRADIENT_CAT_(singa_gradient_reg_, __LINE__)( \
      DOMAIN, OP, __VA_ARGS__)

#endif  // SINGA_GRADIENT_HPP
