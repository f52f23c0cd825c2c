#include "gradient_check.hpp"

#include "tensor_values.hpp"

#include <singa/autograd.hpp>
#include <singa/error.hpp>
#include <singa/layer.hpp>
#include <singa/onnx.hpp>

#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <sstream>

namespace singa {
namespace cli {

namespace fs = std::filesystem;
namespace ag = singa::autograd;

namespace {

// Ops whose outputs are drawn at random: finite differences mean nothing.
const std::set<std::string> kRandomOps = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                          "RandomUniformLike", "Bernoulli", "Multinomial"};

// Ops with floating-point inputs that are not differentiable, for the cases
// ONNX 1.12's schemas leave open (an op or opset newer than the library, or
// an input tagged Unknown): their outputs are piecewise constant, integer-like
// or quantized, so a gradient is zero or undefined everywhere.
const std::set<std::string> kNonDifferentiableOps = {
    "ArgMax", "ArgMin", "BitCast", "Ceil", "Floor", "Round", "Sign", "IsInf", "IsNaN", "Equal", "Greater",
    "GreaterOrEqual", "Less", "LessOrEqual", "Shape", "Size", "NonZero", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "Unique", "EyeLike", "ConstantOfShape", "Range", "StringNormalizer", "ImageDecoder",
    "RegexFullMatch", "StringConcat", "StringSplit", "TfIdfVectorizer", "OneHot", "NonMaxSuppression"};

// Float inputs that set an output's shape (op, input index) where the
// schema leaves the input's category open: a perturbation changes the shape,
// so there is no derivative to check.
const std::set<std::pair<std::string, size_t>> kShapeInputs = {{"Upsample", 1}};

// Float inputs treated as constants where the schema leaves the category
// open: RoiAlign's boxes, as torchvision and Detectron do (the adaptive
// sampling grid, ceil of the bin size, makes the output piecewise in them).
const std::set<std::pair<std::string, size_t>> kConstantInputs = {{"RoiAlign", 1}};

using Clock = std::chrono::steady_clock;

bool is_real(int32_t t) {
  return t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_FLOAT16 || t == SINGA_ONNX_BFLOAT16;
}

// Deterministic numbers from the case name (FNV-1a then SplitMix64), so that
// a run is reproducible on every machine.
class Rng {
 public:
  explicit Rng(const std::string& seed) {
    for (unsigned char ch : seed) state_ = (state_ ^ ch) * 1099511628211ull;
  }
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_ = 14695981039346656037ull;
};

double get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case SINGA_ONNX_FLOAT: return t.data<float>()[i];
    case SINGA_ONNX_DOUBLE: return t.data<double>()[i];
    case SINGA_ONNX_FLOAT16: return half_to_float(t.data<uint16_t>()[i]);
    case SINGA_ONNX_BFLOAT16: return bfloat16_to_float(t.data<uint16_t>()[i]);
    default: throw Error(SINGA_INTERNAL, std::string("gradient check: not a real element type: ") + dtype_name(t.dtype()));
  }
}

void put(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case SINGA_ONNX_FLOAT: t.data<float>()[i] = float(v); break;
    case SINGA_ONNX_DOUBLE: t.data<double>()[i] = v; break;
    case SINGA_ONNX_FLOAT16: t.data<uint16_t>()[i] = float_to_half(float(v)); break;
    case SINGA_ONNX_BFLOAT16: t.data<uint16_t>()[i] = float_to_bfloat16(float(v)); break;
    default: throw Error(SINGA_INTERNAL, std::string("gradient check: not a real element type: ") + dtype_name(t.dtype()));
  }
}

Tensor cast(const Tensor& t, int32_t dtype) {
  if (t.dtype() == dtype) return t;
  Tensor host = t.on_host() ? t : t.to_host();
  Tensor out(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) put(out, i, get(host, i));
  return out;
}

enum class Tag { kYes, kNo, kUnknown };

// ONNX's differentiability tag of input (or output) `i`, from the formal
// parameter that covers it (the last one when it is variadic).
const ::onnx::OpSchema::FormalParameter* formal(const std::vector<::onnx::OpSchema::FormalParameter>& params, size_t i) {
  if (i < params.size()) return &params[i];
  if (!params.empty() && params.back().GetOption() == ::onnx::OpSchema::Variadic) return &params.back();
  return nullptr;
}

Tag tag_of(const ::onnx::OpSchema::FormalParameter* p) {
  if (!p) return Tag::kUnknown;
  switch (p->GetDifferentiationCategory()) {
    case ::onnx::OpSchema::Differentiable: return Tag::kYes;
    case ::onnx::OpSchema::NonDifferentiable: return Tag::kNo;
    default: return Tag::kUnknown;
  }
}

bool allows_double(const ::onnx::OpSchema::FormalParameter* p) {
  if (!p) return false;
  for (const auto* t : p->GetTypes())
    if (t && *t == "tensor(double)") return true;
  return false;
}

// Attributes as autograd::Attrs; "" when every one converts, else why not.
std::string convert_attrs(const ::onnx::NodeProto& node, ag::Attrs& out) {
  using A = ::onnx::AttributeProto;
  for (const auto& a : node.attribute()) {
    switch (a.type()) {
      case A::INT: out.set(a.name(), int64_t(a.i())); break;
      case A::FLOAT: out.set(a.name(), a.f()); break;
      case A::STRING: out.set(a.name(), a.s()); break;
      case A::INTS: out.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
      case A::FLOATS: out.set(a.name(), std::vector<float>(a.floats().begin(), a.floats().end())); break;
      default:
        return "attribute '" + a.name() + "' is of a kind autograd::Attrs cannot carry (" +
               A::AttributeType_Name(a.type()) + ")";
    }
  }
  return "";
}

// bfloat16 test data of ONNX 1.12 is stored as UINT16 bits.
Tensor as_declared(const Tensor& t, int32_t declared) {
  if (declared == SINGA_ONNX_BFLOAT16 && t.dtype() == SINGA_ONNX_UINT16)
    return Tensor(t.storage(), t.shape(), SINGA_ONNX_BFLOAT16);
  return t;
}

// What the checker differentiates: one node through autograd::apply, or a
// whole graph (a function body, the `_expanded` cases) through
// layer::ImportedModel, which runs its nodes one apply at a time.
class Subject {
 public:
  virtual ~Subject() = default;
  // Outputs with the tape recording where inputs require gradients.
  virtual std::vector<ag::Variable> run(const std::vector<ag::Variable>& in) const = 0;

  std::vector<Tensor> forward(const std::vector<Tensor>& in) const {
    ag::NoGradGuard no_grad;
    std::vector<ag::Variable> v;
    for (const Tensor& t : in) v.push_back(t.defined() ? ag::Variable(t) : ag::Variable());
    std::vector<ag::Variable> out = run(v);
    std::vector<Tensor> y(out.size());
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].defined()) y[k] = out[k].data().on_host() ? out[k].data() : out[k].data().to_host();
    return y;
  }
};

class NodeSubject : public Subject {
 public:
  std::string op;
  int64_t opset = 0;
  ag::Attrs attrs;
  size_t num_outputs = 1;
  std::vector<ag::Variable> run(const std::vector<ag::Variable>& in) const override {
    return ag::apply(op, in, attrs, num_outputs, "", opset);
  }
};

class GraphSubject : public Subject {
 public:
  explicit GraphSubject(const std::string& path, int32_t dtype)
      : model_(std::make_shared<layer::ImportedModel>(layer::ImportedModel::prepare_for_training(path))) {
    if (dtype) model_->to(dtype);
  }
  std::vector<ag::Variable> run(const std::vector<ag::Variable>& in) const override { return model_->forward_all(in); }

 private:
  std::shared_ptr<layer::ImportedModel> model_;
};

// The single-node case an `_expanded` case expands (test_elu_expanded_ver18
// expands test_elu), whose op's tags say what is differentiable.
fs::path expanded_from(const fs::path& dir) {
  std::string name = dir.filename().string();
  const size_t at = name.rfind("_expanded");
  if (at == std::string::npos) return {};
  const std::string rest = name.substr(at + 9);
  if (!rest.empty() && rest.rfind("_ver", 0) != 0) return {};
  return dir.parent_path() / name.substr(0, at);
}

// sum_k <seed_k, y_k>: the scalar whose gradient backward computes.
long double loss(const std::vector<Tensor>& y, const std::vector<Tensor>& seeds) {
  long double s = 0;
  for (size_t k = 0; k < seeds.size(); ++k) {
    if (!seeds[k].defined()) continue;
    if (k >= y.size() || !y[k].defined() || y[k].numel() != seeds[k].numel())
      throw Error(SINGA_INTERNAL, "output " + std::to_string(k) + " changed shape under a small perturbation");
    for (int64_t i = 0; i < y[k].numel(); ++i) {
      const double r = get(seeds[k], i);
      if (r != 0) s += (long double)get(y[k], i) * r;  // 0 marks a non-finite reference element
    }
  }
  return s;
}

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}

struct Outcome {
  GradStatus status;
  std::string reason;
};

Outcome skip(std::string why) { return {GradStatus::kSkip, std::move(why)}; }
Outcome fail(std::string why) { return {GradStatus::kFail, std::move(why)}; }

// A tensor graph value: type and data file (empty when none).
struct Port {
  std::string name;
  int32_t dtype = 0;
  fs::path file;
};

int64_t default_opset(const ::onnx::ModelProto& model) {
  int64_t opset = 0;
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") opset = imp.version();
  return opset;
}

Outcome check(const TestCase& c, const GradCheckOptions& o, GradResult& r) {
  const fs::path dir(c.dir);
  ::onnx::ModelProto model = onnx::load_model((dir / "model.onnx").string());
  const auto& g = model.graph();
  const int64_t opset = default_opset(model);
  if (opset <= 0) return skip("the model imports no opset of the default domain");
  const bool whole_graph = g.node_size() != 1;

  // The node whose op's tags say what is differentiable: the model's only
  // node, or for a function body the node of the case it expands.
  ::onnx::ModelProto tag_model;
  const ::onnx::NodeProto* tag_node = nullptr;
  int64_t tag_opset = opset;
  if (!whole_graph) {
    tag_node = &g.node(0);
  } else {
    const fs::path from = expanded_from(dir);
    std::error_code ec;
    if (from.empty() || !fs::is_regular_file(from / "model.onnx", ec))
      return skip("the model has " + std::to_string(g.node_size()) +
                  " nodes and expands no single-node case whose op tags its inputs");
    tag_model = onnx::load_model((from / "model.onnx").string());
    if (tag_model.graph().node_size() != 1)
      return skip("the model has " + std::to_string(g.node_size()) + " nodes and expands a multi-node case");
    tag_node = &tag_model.graph().node(0);
    tag_opset = default_opset(tag_model);
    for (const auto& n : g.node())
      if (!n.domain().empty() && n.domain() != "ai.onnx") return skip("a node of domain '" + n.domain() + "'");
  }
  const ::onnx::NodeProto& node = *tag_node;
  r.op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return skip("op of domain '" + node.domain() + "'");
  if (kRandomOps.count(r.op)) return skip("random op");
  for (const auto& n : g.node())
    if (kRandomOps.count(n.op_type())) return skip("random op " + n.op_type() + " in the function body");

  NodeSubject call;
  if (!whole_graph) {
    call.op = r.op;
    call.opset = opset;
    call.num_outputs = size_t(node.output_size());
    std::string attr_problem = convert_attrs(node, call.attrs);
    if (!attr_problem.empty()) return skip(attr_problem);
  }

  // Graph values by name: inputs (with their data file) and initializers.
  const fs::path set = dir / "test_data_set_0";
  std::map<std::string, Port> graph_inputs, graph_outputs;
  for (int i = 0; i < g.input_size(); ++i) {
    const auto& vi = g.input(i);
    if (!vi.type().has_tensor_type()) return skip("input '" + vi.name() + "' is not a tensor");
    graph_inputs[vi.name()] = {vi.name(), vi.type().tensor_type().elem_type(), set / ("input_" + std::to_string(i) + ".pb")};
  }
  for (int i = 0; i < g.output_size(); ++i) {
    const auto& vi = g.output(i);
    if (!vi.type().has_tensor_type()) return skip("output '" + vi.name() + "' is not a tensor");
    graph_outputs[vi.name()] = {vi.name(), vi.type().tensor_type().elem_type(), set / ("output_" + std::to_string(i) + ".pb")};
  }
  std::map<std::string, const ::onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) inits[t.name()] = &t;

  // The values perturbed and seeded: the node's inputs and outputs, or the
  // graph's; tag_in/tag_out: their positions at the tagging node (npos: none).
  constexpr size_t npos = size_t(-1);
  std::vector<std::string> in_names, out_names;
  std::vector<size_t> tag_in, tag_out;
  auto position_at = [](const auto& names, const std::string& n) {
    for (int j = 0; j < names.size(); ++j)
      if (!n.empty() && names.Get(j) == n) return size_t(j);
    return npos;
  };
  if (!whole_graph) {
    for (int i = 0; i < node.input_size(); ++i) in_names.push_back(node.input(i)), tag_in.push_back(size_t(i));
    for (int k = 0; k < node.output_size(); ++k) out_names.push_back(node.output(k)), tag_out.push_back(size_t(k));
  } else {
    for (int i = 0; i < g.input_size(); ++i)
      if (!inits.count(g.input(i).name()))
        in_names.push_back(g.input(i).name()), tag_in.push_back(position_at(node.input(), g.input(i).name()));
    for (int k = 0; k < g.output_size(); ++k)
      out_names.push_back(g.output(k).name()), tag_out.push_back(position_at(node.output(), g.output(k).name()));
  }

  std::vector<Tensor> x(in_names.size());
  for (size_t i = 0; i < in_names.size(); ++i) {
    const std::string& name = in_names[i];
    if (name.empty()) continue;
    auto gi = graph_inputs.find(name);
    if (gi != graph_inputs.end()) {
      std::error_code ec;
      if (!fs::is_regular_file(gi->second.file, ec)) return skip("no data for input '" + name + "' in test_data_set_0");
      x[i] = as_declared(onnx::load_tensor_file(gi->second.file.string()), gi->second.dtype);
    } else if (inits.count(name)) {
      x[i] = onnx::from_proto(*inits[name], c.dir);
    } else {
      return skip("input '" + name + "' is neither a graph input nor an initializer");
    }
  }

  // Which inputs and outputs are differentiable: ONNX's tags where the 1.12
  // library knows the op, else every real-valued one unless the op is known
  // to be piecewise constant.
  const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(r.op, int(tag_opset), "");
  const bool op_nondiff = kNonDifferentiableOps.count(r.op) > 0;
  auto input_formal = [&](size_t i) {
    return schema && tag_in[i] != npos ? formal(schema->inputs(), tag_in[i]) : nullptr;
  };
  auto output_formal = [&](size_t k) {
    return schema && tag_out[k] != npos ? formal(schema->outputs(), tag_out[k]) : nullptr;
  };
  std::vector<bool> diff(x.size(), false);
  bool any_real = false, any_diff = false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!x[i].defined() || !is_real(x[i].dtype()) || x[i].numel() == 0) continue;
    any_real = true;
    Tag t = tag_of(input_formal(i));
    diff[i] = t == Tag::kYes || (t == Tag::kUnknown && !op_nondiff && !kShapeInputs.count({r.op, tag_in[i]}) &&
                                 !kConstantInputs.count({r.op, tag_in[i]}));
    any_diff = any_diff || diff[i];
  }
  if (!any_diff)
    return skip(any_real ? "ONNX marks no real-valued input of " + r.op + " differentiable"
                         : "no non-empty real-valued input");
  // Outputs by their declared type (an output that is not a graph output is
  // judged once it is computed).
  std::vector<bool> out_diff(out_names.size(), false);
  bool any_out = false;
  for (size_t k = 0; k < out_diff.size(); ++k) {
    if (out_names[k].empty()) continue;
    auto go = graph_outputs.find(out_names[k]);
    const int32_t declared = go == graph_outputs.end() ? 0 : go->second.dtype;
    const Tag t = tag_of(output_formal(k));
    out_diff[k] = (declared == 0 || is_real(declared)) && t != Tag::kNo && !(t == Tag::kUnknown && op_nondiff);
    any_out = any_out || out_diff[k];
  }
  if (!any_out) return skip("no differentiable real-valued output");
  if (r.op == "Dropout" && x.size() > 2 && x[2].defined() && x[2].numel() == 1 && to_doubles(x[2])[0] != 0)
    return skip("Dropout in training mode is random");
  if (!whole_graph && !ag::has_gradient(r.op)) return {GradStatus::kNoGradient, "no gradient hook for op '" + r.op + "'"};

  // Float64 where the op's type constraint allows it: the differentiable
  // inputs and the inputs that share their type parameter (a whole graph
  // also casts its float constants: ImportedModel::to).
  std::set<std::string> diff_types;
  for (size_t i = 0; i < x.size(); ++i)
    if (diff[i] && input_formal(i)) diff_types.insert(input_formal(i)->GetTypeStr());
  std::vector<Tensor> x64 = x;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!x[i].defined() || !is_real(x[i].dtype())) continue;
    const auto* p = input_formal(i);
    bool widen = p ? diff_types.count(p->GetTypeStr()) && allows_double(p) : diff[i];
    if (widen) x64[i] = cast(x[i], SINGA_ONNX_DOUBLE);
  }
  // Float64 first, then the case's own types. A whole graph is prepared for
  // training once per precision; a body the tape cannot run (control flow)
  // is skipped.
  std::unique_ptr<Subject> subject;
  auto make_subject = [&](int32_t dtype) -> std::unique_ptr<Subject> {
    if (!whole_graph) return std::make_unique<NodeSubject>(call);
    return std::make_unique<GraphSubject>((dir / "model.onnx").string(), dtype);
  };
  std::vector<Tensor> in = x64, y;
  try {
    subject = make_subject(SINGA_ONNX_DOUBLE);
    y = subject->forward(in);
  } catch (const std::exception&) {
    in = x;
    try {
      subject = make_subject(0);
      y = subject->forward(in);
    } catch (const Error& e) {
      if (whole_graph && e.code() == SINGA_UNIMPLEMENTED) return skip(std::string("function body: ") + e.what());
      return fail(std::string("forward: ") + e.what());
    } catch (const std::exception& e) {
      return fail(std::string("forward: ") + e.what());
    }
  }

  // A random seed gradient on every differentiable real output.
  Rng rng(c.name);
  std::vector<Tensor> seeds(y.size());
  bool any_seed = false;
  for (size_t k = 0; k < y.size() && k < out_diff.size(); ++k) {
    if (!out_diff[k] || !y[k].defined() || !is_real(y[k].dtype()) || y[k].numel() == 0) continue;
    seeds[k] = Tensor(y[k].shape(), y[k].dtype());
    for (int64_t i = 0; i < y[k].numel(); ++i) put(seeds[k], i, std::isfinite(get(y[k], i)) ? rng.uniform(-1, 1) : 0.0);
    any_seed = true;
  }
  if (!any_seed) return skip("no differentiable real-valued output");

  // The coarsest precision among the perturbed inputs and the seeded outputs
  // sets the step and the tolerance: central differences of float32 values
  // resolve about 1e-2, of float16 values nothing useful.
  int32_t coarsest = SINGA_ONNX_DOUBLE;
  auto rank = [](int32_t t) { return t == SINGA_ONNX_DOUBLE ? 0 : t == SINGA_ONNX_FLOAT ? 1 : 2; };
  auto note = [&](int32_t t) {
    if (rank(t) > rank(coarsest)) coarsest = t;
  };
  for (size_t i = 0; i < in.size(); ++i)
    if (diff[i]) note(in[i].dtype());
  for (size_t k = 0; k < seeds.size(); ++k)
    if (seeds[k].defined()) note(seeds[k].dtype());
  if (coarsest != SINGA_ONNX_DOUBLE && coarsest != SINGA_ONNX_FLOAT)
    return skip(std::string("a differentiable value is ") + dtype_name(coarsest) +
                " even with float64 inputs: too coarse for finite differences");
  const bool in_double = coarsest == SINGA_ONNX_DOUBLE;
  const double atol = in_double ? o.atol : std::max(o.atol, 1e-2);
  const double rtol = in_double ? o.rtol : std::max(o.rtol, 1e-2);
  const double step = in_double ? 1e-6 : 1e-3;

  // The forward against the case's reference outputs (computed in the
  // case's precision, so float32-level tolerances).
  for (size_t k = 0; k < out_names.size(); ++k) {
    auto go = graph_outputs.find(out_names[k]);
    if (go == graph_outputs.end()) continue;
    std::error_code ec;
    if (!fs::is_regular_file(go->second.file, ec)) continue;
    Tensor want = as_declared(onnx::load_tensor_file(go->second.file.string()), go->second.dtype);
    Tensor have = k < y.size() ? y[k] : Tensor();
    if (!have.defined()) return fail("forward: output " + std::to_string(k) + " was not produced");
    if (is_real(want.dtype()) && is_real(have.dtype())) have = cast(have, want.dtype());
    Tolerance tol;
    tol.rtol = want.dtype() == SINGA_ONNX_FLOAT16 || want.dtype() == SINGA_ONNX_BFLOAT16 ? 1e-2 : 1e-3;
    tol.atol = 1e-5;
    std::string diff_text = compare_tensors(want, have, tol);
    if (!diff_text.empty()) return fail("forward (output " + std::to_string(k) + "): " + diff_text);
  }

  // Analytic: backward from each seeded output, accumulating into the leaves.
  std::vector<ag::Variable> leaves;
  for (size_t i = 0; i < in.size(); ++i)
    leaves.push_back(in[i].defined() ? ag::Variable(in[i].clone(), bool(diff[i])) : ag::Variable());
  try {
    std::vector<ag::Variable> out = subject->run(leaves);
    for (size_t k = 0; k < seeds.size() && k < out.size(); ++k)
      if (seeds[k].defined() && out[k].defined() && out[k].requires_grad()) ag::backward(out[k], seeds[k]);
  } catch (const Error& e) {
    std::string m = e.what();
    if (e.code() == SINGA_UNIMPLEMENTED && m.find("no gradient") != std::string::npos)
      return whole_graph ? skip("a node of the function body has no gradient: " + m)
                         : Outcome{GradStatus::kNoGradient, m};
    return fail("backward: " + m);
  }

  // Numeric: central differences of the same scalar, element by element.
  const long double l0 = loss(subject->forward(in), seeds);
  size_t checked = 0, kinks = 0, jumps = 0;
  int64_t j_now = 0;
  std::string worst;
  double worst_excess = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!diff[i]) continue;
    const Tensor& gx = leaves[i].grad();
    if (gx.defined() && gx.numel() != in[i].numel())
      return fail("input " + std::to_string(i) + ": gradient has shape " + shape_to_string(gx.shape()) + ", input " +
                  shape_to_string(in[i].shape()));
    std::vector<int64_t> idx(size_t(in[i].numel()));
    for (size_t j = 0; j < idx.size(); ++j) idx[j] = int64_t(j);
    if (idx.size() > size_t(o.max_points)) {
      for (size_t j = 0; j < size_t(o.max_points); ++j) std::swap(idx[j], idx[j + rng.next() % (idx.size() - j)]);
      idx.resize(size_t(o.max_points));
      std::sort(idx.begin(), idx.end());
    }
    Tensor xi = in[i].clone();
    std::vector<Tensor> args = in;
    args[i] = xi;
    // Sets element j to x (x becomes the value stored) and returns the loss.
    const LossAt loss_at = [&](double& x) {
      put(xi, j_now, x);
      x = get(xi, j_now);
      return loss(subject->forward(args), seeds);
    };
    for (int64_t j : idx) {
      j_now = j;
      const double x0 = get(xi, j);
      const double h = step * std::max(1.0, std::fabs(x0));
      const double ana = gx.defined() ? get(gx, j) : 0.0;
      const PointCheck pc = judge_point(loss_at, x0, l0, h, ana, atol, rtol);
      put(xi, j, x0);
      if (pc.verdict == PointVerdict::kKink || pc.verdict == PointVerdict::kNotFinite) {
        ++kinks;
        continue;
      }
      if (pc.verdict == PointVerdict::kJump) {
        ++jumps;
        continue;
      }
      const double num = pc.numeric;
      const double err = std::fabs(ana - num);
      const double rel = err / std::max(std::fabs(num), atol);
      ++checked;
      if (std::isfinite(err)) r.max_abs = std::max(r.max_abs, err);
      if (std::isfinite(rel)) r.max_rel = std::max(r.max_rel, rel);
      const double excess = pc.verdict == PointVerdict::kMatch ? 0.0
                            : std::isfinite(err)                ? err - (atol + rtol * std::fabs(num))
                                                                : INFINITY;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = "input " + std::to_string(i) + " '" + in_names[i] + "'" +
                (gx.defined() ? "" : " got no gradient") + ", element " + std::to_string(j) + ": analytic " +
                fmt(ana) + ", numeric " + fmt(num);
      }
    }
  }
  if (!checked) return skip("every perturbed element is infinite, NaN, on a kink or at a jump");
  std::string notes = in_double ? "" : "checked in float32";
  if (kinks) notes += std::string(notes.empty() ? "" : "; ") + std::to_string(kinks) + " elements skipped (not finite or on a kink)";
  if (jumps)
    notes += std::string(notes.empty() ? "" : "; ") + std::to_string(jumps) +
             " elements skipped (the output jumps there: no derivative)";
  if (!worst.empty()) return fail(worst + " (max abs " + fmt(r.max_abs) + ", rel " + fmt(r.max_rel) + ")");
  return {GradStatus::kPass, notes};
}

}  // namespace

const char* grad_status_word(GradStatus s) {
  switch (s) {
    case GradStatus::kPass: return "PASS";
    case GradStatus::kNoGradient: return "NOGRAD";
    case GradStatus::kSkip: return "SKIP";
    default: return "FAIL";
  }
}

GradResult check_case_gradient(const TestCase& c, const GradCheckOptions& options) {
  const Clock::time_point t0 = Clock::now();
  GradResult r;
  try {
    Outcome out = check(c, options, r);
    r.status = out.status;
    r.reason = out.reason;
  } catch (const std::exception& e) {
    r.status = GradStatus::kFail;
    r.reason = e.what();
  }
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

// WORD ms max_abs max_rel op reason...: the op is one token ("-" when none).
std::string encode_grad_result(const GradResult& r) {
  std::ostringstream o;
  o.precision(17);
  o << grad_status_word(r.status) << ' ' << r.ms << ' ' << r.max_abs << ' ' << r.max_rel << ' '
    << (r.op.empty() ? "-" : r.op) << ' ';
  // One line: a multi-line message (the nodes without a gradient) is joined.
  for (char ch : r.reason) o << (ch == '\n' ? ' ' : ch);
  return o.str();
}

GradResult decode_grad_result(const std::string& text) {
  GradResult r;
  std::istringstream in(text);
  std::string word, op;
  if (!(in >> word >> r.ms >> r.max_abs >> r.max_rel >> op) ||
      (word != "PASS" && word != "FAIL" && word != "NOGRAD" && word != "SKIP")) {
    r = GradResult{};
    r.reason = "garbled result from the child process";
    return r;
  }
  r.status = word == "PASS" ? GradStatus::kPass
             : word == "NOGRAD" ? GradStatus::kNoGradient
             : word == "SKIP" ? GradStatus::kSkip
                              : GradStatus::kFail;
  r.op = op == "-" ? "" : op;
  std::getline(in, r.reason);
  if (!r.reason.empty() && r.reason[0] == ' ') r.reason.erase(0, 1);
  return r;
}

}  // namespace cli
}  // namespace singa
