// Gradients of RNN, GRU and LSTM (the ops_rnn kernels' backward members)
// against float64 central differences of the forward kernels: every
// direction and layout, with sequence lengths, each output as the loss path.
// Then an imported LSTM classifier trains through ImportedModel and SGD.
#include "model_builder.hpp"
#include "grad_check.hpp"
#include "test_util.hpp"
#include <singa/autograd.hpp>
#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

using singa::Shape;
using singa::Tensor;
using namespace singa::autograd;

namespace {

using testing_util::ensure_loaded;
using testing_util::random_doubles;

Tensor lens_tensor(const std::vector<int32_t>& v) {
  Tensor t({int64_t(v.size())}, SINGA_ONNX_INT32);
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
  return t;
}

// A float or double tensor converted to `dtype` (float or double).
Tensor convert(const Tensor& t, int32_t dtype) {
  Tensor out(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.dtype() == SINGA_ONNX_DOUBLE ? t.data<double>()[i] : double(t.data<float>()[i]);
    if (dtype == SINGA_ONNX_DOUBLE)
      out.data<double>()[i] = v;
    else
      out.data<float>()[i] = float(v);
  }
  return out;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.data<double>()[i] * b.data<double>()[i];
  return s;
}

// One recurrent op's case: its attributes and which outputs make the loss.
struct Case {
  std::string op;  // RNN, GRU, LSTM
  std::string direction = "forward";
  int64_t layout = 0;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  std::vector<bool> loss_outputs;  // per output: in the loss (empty: all)
  Attrs extra;
  // Attributes Attrs cannot carry (string lists): such a case runs its node
  // inside an ImportedModel instead of through autograd::apply.
  std::vector<std::string> activations;
  std::vector<float> alpha, beta;
  bool with_bias = true, with_init = true, peepholes = false;
  int64_t seq = 4, batch = 3, input = 2, hidden = 3;
};

int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
size_t outputs_of(const std::string& op) { return op == "LSTM" ? 3 : 2; }

struct Built {
  std::vector<Tensor> inputs;  // X W R B sequence_lens initial_h [initial_c P]; undefined = absent
  std::vector<bool> differentiable;
};

Built build_inputs(const Case& c, unsigned seed) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gates_of(c.op) * c.hidden;
  Built b;
  const Shape x = c.layout == 0 ? Shape{c.seq, c.batch, c.input} : Shape{c.batch, c.seq, c.input};
  const Shape st = c.layout == 0 ? Shape{D, c.batch, c.hidden} : Shape{c.batch, D, c.hidden};
  b.inputs.push_back(random_doubles(x, -1, 1, seed));
  b.inputs.push_back(random_doubles({D, G, c.input}, -0.7, 0.7, seed + 1));
  b.inputs.push_back(random_doubles({D, G, c.hidden}, -0.7, 0.7, seed + 2));
  b.inputs.push_back(c.with_bias ? random_doubles({D, 2 * G}, -0.5, 0.5, seed + 3) : Tensor());
  b.inputs.push_back(c.lens.empty() ? Tensor() : lens_tensor(c.lens));
  b.inputs.push_back(c.with_init ? random_doubles(st, -0.8, 0.8, seed + 4) : Tensor());
  if (c.op == "LSTM") {
    b.inputs.push_back(c.with_init ? random_doubles(st, -0.8, 0.8, seed + 5) : Tensor());
    if (c.peepholes) b.inputs.push_back(random_doubles({D, 3 * c.hidden}, -0.5, 0.5, seed + 6));
  }
  for (size_t i = 0; i < b.inputs.size(); ++i) b.differentiable.push_back(i != 4 && b.inputs[i].defined());
  return b;
}

Attrs attrs_of(const Case& c) {
  Attrs a = c.extra;
  a.set("hidden_size", c.hidden).set("direction", c.direction).set("layout", c.layout);
  return a;
}

void add_attr(::onnx::NodeProto* n, const Attrs::Item& it) {
  auto* a = n->add_attribute();
  a->set_name(it.name);
  switch (it.kind) {
    case Attrs::Kind::kInt: a->set_type(::onnx::AttributeProto::INT), a->set_i(it.i); break;
    case Attrs::Kind::kFloat: a->set_type(::onnx::AttributeProto::FLOAT), a->set_f(it.f); break;
    case Attrs::Kind::kString: a->set_type(::onnx::AttributeProto::STRING), a->set_s(it.s); break;
    case Attrs::Kind::kInts:
      a->set_type(::onnx::AttributeProto::INTS);
      for (int64_t v : it.ints) a->add_ints(v);
      break;
    case Attrs::Kind::kFloats:
      a->set_type(::onnx::AttributeProto::FLOATS);
      for (float v : it.floats) a->add_floats(v);
      break;
  }
}

using Runner = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

// Runs the case's node on the inputs (undefined = absent), recording it.
Runner runner_for(const Case& c, const Built& b) {
  const Attrs attrs = attrs_of(c);
  const int64_t opset = c.layout == 1 ? 14 : 13;
  const size_t nout = outputs_of(c.op);
  if (c.activations.empty())
    return [=](const std::vector<Variable>& v) { return apply(c.op, v, attrs, nout, "", opset); };
  // A one-node model whose graph inputs are the present node inputs.
  testing_util::ModelBuilder mb(14);  // the schema checks `layout`, new in 14
  std::vector<std::string> ins;
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    if (!b.inputs[i].defined()) {
      ins.push_back("");
      continue;
    }
    ins.push_back("in" + std::to_string(i));
    mb.input(ins.back(), b.inputs[i].dtype(), b.inputs[i].shape());
  }
  std::vector<std::string> outs = {"Y", "Y_h", "Y_c"};
  outs.resize(nout);
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  for (size_t k = 0; k < nout; ++k)
    mb.output(outs[k], SINGA_ONNX_DOUBLE,
              k == 0 ? (c.layout == 0 ? Shape{c.seq, D, c.batch, c.hidden} : Shape{c.batch, c.seq, D, c.hidden})
                     : (c.layout == 0 ? Shape{D, c.batch, c.hidden} : Shape{c.batch, D, c.hidden}));
  mb.node(c.op, ins, outs, "rnn");
  for (const Attrs::Item& it : attrs.items()) add_attr(mb.last(), it);
  auto* a = mb.last()->add_attribute();
  a->set_name("activations"), a->set_type(::onnx::AttributeProto::STRINGS);
  for (const std::string& name : c.activations) a->add_strings(name);
  if (!c.alpha.empty()) add_attr(mb.last(), Attrs().set("activation_alpha", c.alpha).items()[0]);
  if (!c.beta.empty()) add_attr(mb.last(), Attrs().set("activation_beta", c.beta).items()[0]);
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  auto model = std::make_shared<singa::layer::ImportedModel>(singa::onnx::prepare(mb.model, o));
  return [model](const std::vector<Variable>& v) {
    std::vector<Variable> present;
    for (const Variable& x : v)
      if (x.defined()) present.push_back(x);
    return model->forward_all(present);
  };
}

// Checks d(sum_k <Y_k, S_k>)/d(input) for every differentiable input against
// central differences, S_k fixed random weights of the chosen outputs.
void check(const Case& c, unsigned seed = 1, double tol = 1e-6) {
  SCOPED_TRACE(c.op + " " + c.direction + " layout " + std::to_string(c.layout) +
               (c.lens.empty() ? "" : " with sequence_lens"));
  ensure_loaded();
  const Built b = build_inputs(c, seed);
  const size_t nout = outputs_of(c.op);
  auto in_loss = [&](size_t k) { return c.loss_outputs.empty() || (k < c.loss_outputs.size() && c.loss_outputs[k]); };
  std::vector<Variable> vars;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    vars.push_back(b.inputs[i].defined() ? Variable(b.inputs[i].clone(), b.differentiable[i]) : Variable());
  const Runner runner = runner_for(c, b);
  auto run = [&]() { return runner(vars); };
  std::vector<Variable> ys = run();
  std::vector<Tensor> weights(nout);
  Variable loss;
  for (size_t k = 0; k < nout; ++k) {
    ASSERT_TRUE(ys[k].defined()) << "output " << k;
    if (!in_loss(k)) continue;
    weights[k] = random_doubles(ys[k].shape(), -1, 1, seed + 10 + unsigned(k));
    Variable term = reduce_sum(mul(ys[k], Variable(weights[k])), {});
    loss = loss.defined() ? add(loss, term) : term;
  }
  backward(loss);
  auto value = [&]() {
    NoGradGuard ng;
    std::vector<Variable> y = run();
    double s = 0;
    for (size_t k = 0; k < nout; ++k)
      if (in_loss(k)) s += dot(y[k].data(), weights[k]);
    return s;
  };
  const double eps = 1e-6;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!b.differentiable[i]) continue;
    ASSERT_TRUE(vars[i].grad().defined()) << "no gradient for input " << i;
    ASSERT_EQ(vars[i].grad().shape(), b.inputs[i].shape()) << "input " << i;
    double* p = vars[i].data().data<double>();
    for (int64_t j = 0; j < b.inputs[i].numel(); ++j) {
      const double keep = p[j];
      p[j] = keep + eps;
      const double up = value();
      p[j] = keep - eps;
      const double down = value();
      p[j] = keep;
      const double numeric = (up - down) / (2 * eps);
      ASSERT_NEAR(vars[i].grad().data<double>()[j], numeric, tol * std::max(1.0, std::abs(numeric)))
          << "input " << i << " element " << j;
    }
  }
}

// Every direction and layout, with and without sequence lengths (one of
// them 0: its Y_h is initial_h), the loss through all outputs.
void check_all_shapes(Case c) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (int64_t layout : {0, 1})
      for (bool lens : {false, true}) {
        c.direction = dir;
        c.layout = layout;
        c.lens = lens ? std::vector<int32_t>{4, 2, 0} : std::vector<int32_t>{};
        check(c, unsigned(layout * 7 + (lens ? 3 : 0) + 11));
      }
}

// Each output alone as the loss path (the others' gradients absent).
void check_each_output(Case c) {
  c.lens = {3, 4, 1};
  c.direction = "bidirectional";
  for (size_t k = 0; k < outputs_of(c.op); ++k) {
    c.loss_outputs.assign(outputs_of(c.op), false);
    c.loss_outputs[k] = true;
    check(c, unsigned(20 + k));
  }
}

TEST(GradientsRnn, RnnEveryDirectionLayoutAndLength) {
  Case c;
  c.op = "RNN";
  check_all_shapes(c);
  check_each_output(c);
}

TEST(GradientsRnn, RnnOtherActivationsClipAndNoOptionalInputs) {
  Case c;
  c.op = "RNN";
  c.direction = "bidirectional";
  c.activations = {"Sigmoid", "Softsign"};
  check(c, 31);
  c.activations.clear();
  c.extra = Attrs().set("clip", 0.6f);  // some pre-activations are clipped: their gradient is 0
  check(c, 32);
  c.with_bias = c.with_init = false;
  check(c, 33);
}

TEST(GradientsRnn, GruEveryDirectionLayoutAndLength) {
  for (int64_t lbr : {0, 1}) {
    SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
    Case c;
    c.op = "GRU";
    c.extra.set("linear_before_reset", lbr);
    check_all_shapes(c);
    check_each_output(c);
  }
}

TEST(GradientsRnn, GruOtherActivationsAndNoOptionalInputs) {
  for (int64_t lbr : {0, 1}) {
    Case c;
    c.op = "GRU";
    c.direction = "reverse";
    c.extra = Attrs().set("linear_before_reset", lbr);
    c.activations = {"HardSigmoid", "Elu"};
    check(c, 41);
    c.activations.clear();
    c.with_bias = c.with_init = false;
    check(c, 42);
  }
}

TEST(GradientsRnn, LstmEveryDirectionLayoutAndLength) {
  Case c;
  c.op = "LSTM";
  check_all_shapes(c);
  check_each_output(c);
}

TEST(GradientsRnn, LstmPeepholesInputForgetActivationsAndClip) {
  Case c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.lens = {2, 4, 3};
  c.peepholes = true;
  check(c, 51);
  c.extra.set("input_forget", int64_t(1));
  check(c, 52);
  c.extra = Attrs();
  c.activations = {"Sigmoid", "Softsign", "ScaledTanh", "HardSigmoid", "Tanh", "Affine"};
  c.alpha = {0.9f, 0.3f, 1.2f};
  c.beta = {1.1f, 0.4f, 0.1f};
  check(c, 53);
  c.activations.clear();
  c.extra = Attrs().set("clip", 0.7f);
  check(c, 54);
  c.peepholes = c.with_bias = c.with_init = false;
  c.extra = Attrs();
  check(c, 55);
}

// The float backward agrees with the double one (the float forward runs
// other code: oneDNN products, the LSTM's vectorised cells).
TEST(GradientsRnn, FloatAgreesWithDouble) {
  ensure_loaded();
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    Case c;
    c.op = op;
    c.direction = "bidirectional";
    c.lens = {4, 3, 1};
    c.hidden = 20;
    const Built b = build_inputs(c, 61);
    std::vector<Tensor> grads[2];
    for (int32_t dt : {SINGA_ONNX_DOUBLE, SINGA_ONNX_FLOAT}) {
      std::vector<Variable> vars;
      for (size_t i = 0; i < b.inputs.size(); ++i) {
        if (!b.inputs[i].defined()) {
          vars.emplace_back();
        } else {
          Tensor t = b.inputs[i].dtype() == SINGA_ONNX_DOUBLE ? convert(b.inputs[i], dt) : b.inputs[i];
          vars.emplace_back(t, b.differentiable[i]);
        }
      }
      std::vector<Variable> ys = apply(op, vars, attrs_of(c), outputs_of(op), "", 13);
      backward(add(reduce_sum(ys[0], {}), reduce_sum(mul(ys[1], ys[1]), {})));
      for (size_t i = 0; i < vars.size(); ++i)
        grads[dt == SINGA_ONNX_FLOAT].push_back(b.differentiable[i] ? convert(vars[i].grad(), SINGA_ONNX_DOUBLE) : Tensor());
    }
    for (size_t i = 0; i < grads[0].size(); ++i) {
      if (!grads[0][i].defined()) continue;
      for (int64_t j = 0; j < grads[0][i].numel(); ++j)
        ASSERT_NEAR(grads[1][i].data<double>()[j], grads[0][i].data<double>()[j],
                    1e-4 * std::max(1.0, std::abs(grads[0][i].data<double>()[j])))
            << op << " input " << i << " element " << j;
    }
  }
}

TEST(GradientsRnn, HooksAndNoGradientForSequenceLens) {
  ensure_loaded();
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    EXPECT_TRUE(has_gradient(op)) << op;
    Case c;
    c.op = op;
    c.lens = {2, 4, 3};
    const Built b = build_inputs(c, 71);
    std::vector<Variable> vars;
    for (size_t i = 0; i < b.inputs.size(); ++i) vars.emplace_back(b.inputs[i], true);
    std::vector<Variable> ys = apply(op, vars, attrs_of(c), outputs_of(op), "", 13);
    backward(reduce_sum(ys[0], {}));
    for (size_t i = 0; i < vars.size(); ++i)
      EXPECT_EQ(vars[i].grad().defined(), i != 4) << op << " input " << i;
  }
}

// An imported LSTM classifier (x [N, T, 3] -> LSTM layout 1 -> Y_h -> Flatten
// -> Gemm) trains with ImportedModel and SGD: its loss drops.
TEST(GradientsRnn, ImportedLstmClassifierTrains) {
  ensure_loaded();
  const int64_t T = 6, I = 3, H = 8, N = 32;
  testing_util::ModelBuilder mb(14);
  mb.input("x", SINGA_ONNX_FLOAT, {-1, T, I}, {"N"}).output("logits", SINGA_ONNX_FLOAT, {-1, 2}, {"N", ""});
  auto scaled = [](const Shape& s, unsigned seed) {
    Tensor t = testing_util::randn(s, seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 0.3f;
    return t;
  };
  mb.initializer("W", scaled({1, 4 * H, I}, 1)).initializer("R", scaled({1, 4 * H, H}, 2));
  mb.initializer("B", scaled({1, 8 * H}, 3)).initializer("W2", scaled({H, 2}, 4)).initializer("b2", scaled({2}, 5));
  mb.node("LSTM", {"x", "W", "R", "B"}, {"", "h"}, "lstm");
  auto* lstm = mb.last();
  auto* a = lstm->add_attribute();
  a->set_name("hidden_size"), a->set_type(::onnx::AttributeProto::INT), a->set_i(H);
  a = lstm->add_attribute();
  a->set_name("layout"), a->set_type(::onnx::AttributeProto::INT), a->set_i(1);
  mb.node("Flatten", {"h"}, {"f"}).node("Gemm", {"f", "W2", "b2"}, {"logits"});
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  auto rep = singa::onnx::prepare(mb.model, o);
  singa::layer::ImportedModel model(rep);
  // Label: whether the first feature's sum over time is positive (needs the sequence).
  Tensor x = testing_util::randn({N, T, I}, 9);
  Tensor labels({N}, SINGA_ONNX_INT64);
  for (int64_t n = 0; n < N; ++n) {
    float s = 0;
    for (int64_t t = 0; t < T; ++t) s += x.data<float>()[(n * T + t) * I];
    labels.data<int64_t>()[n] = s > 0 ? 1 : 0;
  }
  std::vector<std::string> names;
  for (auto& [name, v] : model.parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"W", "R", "B", "W2", "b2"}));
  singa::optim::SGD opt(model.parameters(), 0.5, 0.9);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    Variable l = singa::loss::softmax_cross_entropy(model(Variable(x)), Variable(labels));
    backward(l);
    for (auto& [name, v] : model.parameters()) ASSERT_TRUE(v.grad().defined()) << name;
    opt.step();
    opt.zero_grad();
    (step == 0 ? first : last) = *l.data().data<float>();
  }
  EXPECT_LT(last, first * 0.5) << "loss " << first << " -> " << last;
}

}  // namespace
