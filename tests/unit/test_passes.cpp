// Graph passes (core/passes/): each pass fires on a small model and the
// optimised graph computes what the unoptimised one does.
#include "test_util.hpp"
#include "model_builder.hpp"

#include "../../core/env_options.hpp"
#include "../../core/graph_pass.hpp"
#include "../../core/passes/passes.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_float;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::i64_tensor;
using testing_util::op_types;
using testing_util::prepare_at;
using testing_util::random_floats;

namespace {

using testing_util::ensure_loaded;

// The passes' counters for the model, run on the core's graph directly.
singa::passes::PassStats stats_of(const ModelBuilder& m, const singa::onnx::PrepareOptions& opts = {}) {
  singa::graph::Graph g = singa::graph::build(m.model, "<test>", "", opts);
  singa::passes::PassStats s;
  singa::passes::PassOptions po;
  po.stats = &s;
  singa::passes::optimize(g, po);
  // The CPU pack's own passes (plugins/ops_nn/passes, plugins/ops_math/passes).
  ensure_loaded();
  const auto named = singa::with_env_options(opts.options);
  singa::run_graph_passes(g, "cpu", &named, &s.plugin_passes);
  return s;
}

// The rewrites of the plugin graph pass `name` (0 when it did not run).
int plugin_count(const singa::passes::PassStats& s, const std::string& name) {
  auto it = s.plugin_passes.find(name);
  return it == s.plugin_passes.end() ? 0 : it->second;
}

// Activations fused into Convs and Gemms.
int activations(const singa::passes::PassStats& s) {
  return plugin_count(s, "cpu.conv_activations") + plugin_count(s, "cpu.gemm_activations");
}

// Makes node `n` of m an ai.singa.cpu FusedConv (the op that carries the CPU
// pack's fused attributes) and imports the domain.
void as_fused_conv(ModelBuilder& m, ::onnx::NodeProto* n) {
  n->set_op_type("FusedConv");
  n->set_domain("ai.singa.cpu");
  for (const auto& op : m.model.opset_import())
    if (op.domain() == "ai.singa.cpu") return;
  auto* op = m.model.add_opset_import();
  op->set_domain("ai.singa.cpu");
  op->set_version(1);
}

// Runs the model with and without the passes on the same inputs; returns the
// optimised Rep's op types after checking every output agrees.
std::vector<std::string> check_same(const ModelBuilder& m, const std::vector<Tensor>& inputs, double tol = 1e-4,
                                    singa::onnx::PrepareOptions opts = {}) {
  opts.optimize = false;
  auto plain = singa::onnx::prepare_bytes(m.bytes(), opts);
  opts.optimize = true;
  auto fast = singa::onnx::prepare_bytes(m.bytes(), opts);
  auto a = plain->run(inputs), b = fast->run(inputs);
  EXPECT_EQ(a.size(), b.size());
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    EXPECT_EQ(a[k].first, b[k].first);
    EXPECT_EQ(a[k].second.shape(), b[k].second.shape());
    if (a[k].second.shape() != b[k].second.shape()) continue;
    double worst = 0;
    for (int64_t i = 0; i < a[k].second.numel(); ++i)
      worst = std::max(worst, double(std::fabs(a[k].second.data<float>()[i] - b[k].second.data<float>()[i])));
    EXPECT_LE(worst, tol) << "output " << a[k].first;
  }
  return op_types(*fast);
}

// Both Reps give one output, equal within tol, for input x.
void expect_same_output(singa::onnx::Rep& a_rep, singa::onnx::Rep& b_rep, const Tensor& x, double tol) {
  auto a = a_rep.run({x}), b = b_rep.run({x});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(a[0].second.shape(), b[0].second.shape());
  for (int64_t i = 0; i < a[0].second.numel(); ++i)
    EXPECT_NEAR(a[0].second.data<float>()[i], b[0].second.data<float>()[i], tol) << i;
}

// optimized_model() of m holds a `fused_op` node of a singa domain (ai.singa,
// or the CPU pack's ai.singa.cpu) and imports the domain: the written model loads, checks and runs on x with the
// results of the original.
void check_optimized_model_loads_again(const ModelBuilder& m, const std::string& fused_op, const Tensor& x) {
  ::onnx::ModelProto out = singa::onnx::optimized_model(m.model, {});
  bool fused = false;
  for (const auto& n : out.graph().node()) fused = fused || (n.op_type() == fused_op && n.domain().rfind("ai.singa", 0) == 0);
  EXPECT_TRUE(fused);
  std::string bytes;
  ASSERT_TRUE(out.SerializeToString(&bytes));
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  auto again = singa::onnx::prepare_bytes(bytes, o);
  auto plain = singa::onnx::prepare_bytes(m.bytes(), o);
  expect_same_output(*plain, *again, x, 1e-4);
}

// x -> Conv(W, B) -> BatchNormalization -> ACT -> y, on [N,3,9,9] (N symbolic when batch < 0).
ModelBuilder conv_bn(const std::string& act, int64_t batch, int64_t opset = 13) {
  ModelBuilder m(opset);
  m.input("x", SINGA_ONNX_FLOAT, {batch, 3, 9, 9}, {"N"})
      .initializer("W", random_floats({8, 3, 3, 3}, 1))
      .initializer("B", random_floats({8}, 2))
      .initializer("scale", random_floats({8}, 3, 0.5f, 1.5f))
      .initializer("beta", random_floats({8}, 4))
      .initializer("mean", random_floats({8}, 5))
      .initializer("var", random_floats({8}, 6, 0.5f, 2.f))
      .node("Conv", {"x", "W", "B"}, {"c"}, "conv");
  auto* pads = m.last()->add_attribute();
  pads->set_name("pads");
  pads->set_type(::onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  m.node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"}, "bn");
  if (act == "Clip") {
    m.initializer("lo", f32_tensor({}, {-0.25f})).initializer("hi", f32_tensor({}, {0.5f}));
    m.node("Clip", {"bn", "lo", "hi"}, {"y"}, "act");
  } else {
    m.node(act, {"bn"}, {"y"}, "act");
  }
  m.output("y", SINGA_ONNX_FLOAT, {batch, 8, 9, 9}, {"N"});
  return m;
}

}  // namespace

TEST(Passes, ConvBatchNormReluFoldIntoOneConv) {
  ensure_loaded();
  for (const char* act : {"Relu", "LeakyRelu", "Clip"}) {
    SCOPED_TRACE(act);
    ModelBuilder m = conv_bn(act, 2);
    auto ops = check_same(m, {random_floats({2, 3, 9, 9}, 7)});
    EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv"}));
    auto s = stats_of(m);
    EXPECT_EQ(s.conv_bn, 1);
    EXPECT_EQ(activations(s), 1);
  }
}

TEST(Passes, FusedConvWithSymbolicBatchRunsEveryBatchSize) {
  ensure_loaded();
  ModelBuilder m = conv_bn("Relu", -1);
  auto plain_opts = singa::onnx::PrepareOptions();
  for (int64_t n : {1, 3}) {
    auto ops = check_same(m, {random_floats({n, 3, 9, 9}, 8)}, 1e-4, plain_opts);
    EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv"}));
  }
}

TEST(Passes, ConvBatchNormStaysWhenTheConvOutputIsAlsoRead) {
  ensure_loaded();
  ModelBuilder m = conv_bn("Relu", 1);
  m.output("c", SINGA_ONNX_FLOAT, {1, 8, 9, 9});  // the Conv's own result is a graph output
  auto ops = check_same(m, {random_floats({1, 3, 9, 9}, 9)});
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "FusedBatchNorm"}));  // the BatchNorm takes the Relu instead
  EXPECT_EQ(stats_of(m).conv_bn, 0);
}

TEST(Passes, MatMulAddBecomesGemmWithActivation) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {5, 16})
      .initializer("W", random_floats({16, 7}, 10))
      .initializer("b", random_floats({7}, 11))
      .node("MatMul", {"x", "W"}, {"mm"})
      .node("Add", {"b", "mm"}, {"z"})
      .node("Relu", {"z"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {5, 7});
  auto ops = check_same(m, {random_floats({5, 16}, 12)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedGemm"}));
  auto s = stats_of(m);
  EXPECT_EQ(s.matmul_add, 1);
  EXPECT_EQ(activations(s), 1);
}

TEST(Passes, BatchedMatMulTakesABiasRowOnTheCpu) {
  ensure_loaded();
  // [N], [1, N] and [1, 1, N] are rows; either operand order of Add; one
  // product or several.
  for (int64_t batch : {1, 2}) {
    for (const singa::Shape& bs : {singa::Shape{7}, singa::Shape{1, 7}, singa::Shape{1, 1, 7}}) {
      for (bool bias_first : {false, true}) {
        SCOPED_TRACE(std::to_string(batch) + " " + std::to_string(bs.size()) + (bias_first ? " bias first" : ""));
        ModelBuilder m;
        m.input("x", SINGA_ONNX_FLOAT, {batch, 5, 16})
            .initializer("W", random_floats({16, 7}, 13))
            .initializer("b", random_floats(bs, 14))
            .node("MatMul", {"x", "W"}, {"mm"})
            .node("Add", bias_first ? std::vector<std::string>{"b", "mm"} : std::vector<std::string>{"mm", "b"}, {"y"})
            .output("y", SINGA_ONNX_FLOAT, {batch, 5, 7});
        auto ops = check_same(m, {random_floats({batch, 5, 16}, 15)});
        EXPECT_EQ(ops, (std::vector<std::string>{"FusedMatMul"}));
        const auto s = stats_of(m);
        EXPECT_EQ(s.matmul_add, 0);  // no Gemm: A is batched
        EXPECT_EQ(plugin_count(s, "cpu.matmul_bias_rows"), 1);
      }
    }
  }
}

TEST(Passes, BatchedMatMulAddStaysWhenTheAddIsNotABiasRow) {
  ensure_loaded();
  // A [5, 7] addend varies by row; a [2, 1, 7] one by batch; another device
  // has no MatMul taking a third input.
  for (const singa::Shape& bs : {singa::Shape{5, 7}, singa::Shape{2, 1, 7}}) {
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {2, 5, 16})
        .initializer("W", random_floats({16, 7}, 13))
        .initializer("b", random_floats(bs, 14))
        .node("MatMul", {"x", "W"}, {"mm"})
        .node("Add", {"mm", "b"}, {"y"})
        .output("y", SINGA_ONNX_FLOAT, {2, 5, 7});
    auto ops = check_same(m, {random_floats({2, 5, 16}, 15)});
    EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Add"}));
    EXPECT_EQ(stats_of(m).matmul_add, 0);
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.matmul_bias_rows"), 0);
  }
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {2, 5, 16})
      .initializer("W", random_floats({16, 7}, 13))
      .initializer("b", random_floats({7}, 14))
      .node("MatMul", {"x", "W"}, {"mm"})
      .node("Add", {"mm", "b"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {2, 5, 7});
  singa::graph::Graph g = singa::graph::build(m.model, "<test>", "", {});
  EXPECT_EQ(singa::passes::fuse_matmul_add(g), 0);
}

namespace {

// x [2, 5, 16] -> MatMul(W [16, 7]) [-> Add bias] [-> GELU] [-> Add r] -> y,
// the residual r an input of y's shape (or `r_shape`). The GELU is written
// out (Div, Erf, Add, Mul, Mul) for the GELU fusion to make a Gelu node of:
// Debian's ONNX checker knows no opset 20.
struct EpilogueCase {
  bool bias = true, gelu = false, residual = false, residual_first = false;
  singa::Shape r_shape{2, 5, 7};
  int64_t seq = 5;  // -1: symbolic
};

void add_gelu(ModelBuilder& m, std::string& y) {
  m.initializer("sqrt2", f32_tensor({}, {std::sqrt(2.f)})).initializer("one", f32_tensor({}, {1.f}));
  m.initializer("half", f32_tensor({}, {0.5f}));
  m.node("Div", {y, "sqrt2"}, {"t"}).node("Erf", {"t"}, {"e"}).node("Add", {"e", "one"}, {"a"});
  m.node("Mul", {y, "a"}, {"p"}).node("Mul", {"p", "half"}, {"g"});
  y = "g";
}

ModelBuilder matmul_epilogue(const EpilogueCase& c) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {2, c.seq, 16}, {"", "seq", ""}).initializer("W", random_floats({16, 7}, 13));
  m.node("MatMul", {"x", "W"}, {"mm"});
  std::string y = "mm";
  if (c.bias) m.initializer("b", random_floats({7}, 14)).node("Add", {y, "b"}, {"biased"}), y = "biased";
  if (c.gelu) add_gelu(m, y);
  if (c.residual) {
    m.input("r", SINGA_ONNX_FLOAT, c.r_shape);
    m.node("Add", c.residual_first ? std::vector<std::string>{"r", y} : std::vector<std::string>{y, "r"}, {"sum"});
    y = "sum";
  }
  m.node("Identity", {y}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {2, c.seq, 7}, {"", "seq", ""});
  return m;
}

std::vector<Tensor> epilogue_inputs(const EpilogueCase& c) {
  std::vector<Tensor> in{random_floats({2, 5, 16}, 15, -2.f, 2.f)};
  if (c.residual) in.push_back(random_floats(c.r_shape, 16));
  return in;
}

}  // namespace

// A Gelu and a residual Add after a projection go into its MatMul (oneDNN's
// primitive with static shapes, the sgemm path otherwise; the
// matmul_epilogue_sgemm test runs this with SINGA_MATMUL_PRIMITIVE=0), with
// and without a bias row, either Add operand order, at 1 to 3 threads.
TEST(Passes, GeluAndResidualGoIntoTheMatMul) {
  ensure_loaded();
  std::vector<EpilogueCase> cases;
  EpilogueCase c;
  c.gelu = true;
  cases.push_back(c);  // 0: bias + Gelu
  c.bias = false;
  cases.push_back(c);  // 1: Gelu alone
  c = EpilogueCase();
  c.residual = true;
  cases.push_back(c);  // 2: bias + residual
  c.residual_first = true, c.bias = false;
  cases.push_back(c);  // 3: residual alone, Add(r, mm)
  c = EpilogueCase();
  c.gelu = c.residual = true;
  cases.push_back(c);  // 4: bias + Gelu + residual
  c = EpilogueCase();
  c.gelu = true, c.seq = -1;
  cases.push_back(c);  // 5: symbolic seq: no primitive, the Gelu after sgemm
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ModelBuilder m = matmul_epilogue(cases[i]);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      const auto ops = check_same(m, epilogue_inputs(cases[i]), 1e-5, o);
      EXPECT_EQ(ops, (std::vector<std::string>{"FusedMatMul", "Identity"}));
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.matmul_epilogues"), int(cases[i].gelu) + int(cases[i].residual));
  }
}

// Where the MatMul cannot take them: an Add that broadcasts, a product read
// twice, a B that is not a constant, a Gelu after the residual (it would
// come first in the node).
TEST(Passes, MatMulEpiloguesStayWhereTheyWouldChangeTheResult) {
  ensure_loaded();
  EpilogueCase c;
  c.residual = true, c.r_shape = {1, 5, 7};
  check_same(matmul_epilogue(c), epilogue_inputs(c), 1e-5);
  EXPECT_EQ(plugin_count(stats_of(matmul_epilogue(c)), "cpu.matmul_epilogues"), 0);

  ModelBuilder twice(13);
  twice.input("x", SINGA_ONNX_FLOAT, {2, 5, 16}).initializer("W", random_floats({16, 7}, 13));
  twice.node("MatMul", {"x", "W"}, {"mm"});
  std::string g = "mm";
  add_gelu(twice, g);
  twice.output(g, SINGA_ONNX_FLOAT, {2, 5, 7}).output("mm", SINGA_ONNX_FLOAT, {2, 5, 7});
  check_same(twice, {random_floats({2, 5, 16}, 15)}, 1e-5);
  EXPECT_EQ(plugin_count(stats_of(twice), "cpu.matmul_epilogues"), 0);

  ModelBuilder input_b(13);
  input_b.input("x", SINGA_ONNX_FLOAT, {2, 5, 16}).input("W", SINGA_ONNX_FLOAT, {16, 7});
  input_b.node("MatMul", {"x", "W"}, {"mm"});
  g = "mm";
  add_gelu(input_b, g);
  input_b.output(g, SINGA_ONNX_FLOAT, {2, 5, 7});
  check_same(input_b, {random_floats({2, 5, 16}, 15), random_floats({16, 7}, 16)}, 1e-5);
  EXPECT_EQ(plugin_count(stats_of(input_b), "cpu.matmul_epilogues"), 0);

  ModelBuilder late(13);
  late.input("x", SINGA_ONNX_FLOAT, {2, 5, 16}).input("r", SINGA_ONNX_FLOAT, {2, 5, 7});
  late.initializer("W", random_floats({16, 7}, 13));
  late.node("MatMul", {"x", "W"}, {"mm"}).node("Add", {"mm", "r"}, {"s"});
  g = "s";
  add_gelu(late, g);
  late.output(g, SINGA_ONNX_FLOAT, {2, 5, 7});
  const auto ops = check_same(late, {random_floats({2, 5, 16}, 15), random_floats({2, 5, 7}, 16)}, 1e-5);
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedMatMul", "Gelu"}));
  EXPECT_EQ(plugin_count(stats_of(late), "cpu.matmul_epilogues"), 1);
}

// A FusedMatMul written by hand with what only the pass should write, wrong:
// an activation it does not know, a residual of another shape. The error
// names the node; the process goes on.
TEST(Passes, BadMatMulEpiloguesFailClearly) {
  ensure_loaded();
  for (bool bad_act : {true, false}) {
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa.cpu");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {2, 5, 16}).input("r", SINGA_ONNX_FLOAT, {2, 5, 6});
    m.initializer("W", random_floats({16, 7}, 13));
    m.node("FusedMatMul", bad_act ? std::vector<std::string>{"x", "W"} : std::vector<std::string>{"x", "W", "", "r"},
           {"y"}, "proj");
    m.last()->set_domain("ai.singa.cpu");
    if (bad_act) {
      auto* a = m.last()->add_attribute();
      a->set_name("activation");
      a->set_type(::onnx::AttributeProto::STRING);
      a->set_s("Mish");
    }
    m.output("y", SINGA_ONNX_FLOAT, {2, 5, 7});
    singa::onnx::PrepareOptions o;
    o.check_model = false;
    o.optimize = false;
    const std::string want =
        bad_act ? "activation 'Mish' is not one of" : "residual Z must be float [2,5,7], got [2,5,6]";
    try {
      singa::onnx::prepare_bytes(m.bytes(), o)
          ->run(std::vector<Tensor>{random_floats({2, 5, 16}, 1), random_floats({2, 5, 6}, 2)});
      ADD_FAILURE() << "no error for " << want;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("proj"), std::string::npos) << msg;
      EXPECT_NE(msg.find(want), std::string::npos) << msg;
    }
  }
  EpilogueCase ok;
  ok.residual = true;
  check_same(matmul_epilogue(ok), epilogue_inputs(ok), 1e-5);
}

TEST(Passes, BoundDimsLetEachLayersShapeArithmeticFoldInTurn) {
  ensure_loaded();
  // Two layers of y = Reshape(h, [dim 0 of Shape(h), 4, 16]) @ W + b, the way
  // exporters write a transformer's head split. With N bound, layer 1's target
  // folds, inference then knows its output, and only then can layer 2's fold;
  // both MatMul+Adds then see a known rank.
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, 64}, {"N"})
      .initializer("zero", i64_tensor({}, {0}))
      .initializer("axes0", i64_tensor({1}, {0}))
      .initializer("rest", i64_tensor({2}, {4, 16}))
      .initializer("W1", random_floats({16, 16}, 31))
      .initializer("b1", random_floats({16}, 32))
      .initializer("W2", random_floats({16, 16}, 33))
      .initializer("b2", random_floats({16}, 34));
  std::string h = "x";
  for (int layer = 1; layer <= 2; ++layer) {
    const std::string l = std::to_string(layer);
    m.node("Shape", {h}, {"s" + l})
        .node("Gather", {"s" + l, "zero"}, {"n" + l})
        .node("Unsqueeze", {"n" + l, "axes0"}, {"u" + l})
        .node("Concat", {"u" + l, "rest"}, {"t" + l});
    m.last()->add_attribute()->set_name("axis");
    m.last()->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
    m.last()->mutable_attribute(0)->set_i(0);
    m.node("Reshape", {h, "t" + l}, {"r" + l})
        .node("MatMul", {"r" + l, "W" + l}, {"mm" + l})
        .node("Add", {"mm" + l, "b" + l}, {"y" + l});
    h = "y" + l;
  }
  m.output("y2", SINGA_ONNX_FLOAT, {-1, 4, 16}, {"N"});
  singa::onnx::PrepareOptions opts;
  opts.dims = {{"N", 3}};
  auto ops = check_same(m, {random_floats({3, 64}, 35)}, 1e-4, opts);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Add"), 0);
  auto s = stats_of(m, opts);
  EXPECT_EQ(plugin_count(s, "cpu.matmul_bias_rows"), 2);
  EXPECT_GE(s.refined_shapes, 2);
  // Unbound, nothing folds and the Adds stay.
  EXPECT_EQ(plugin_count(stats_of(m), "cpu.matmul_bias_rows"), 0);
}

TEST(Passes, ShapeArithmeticFoldsToAConstantReshapeTarget) {
  ensure_loaded();
  // Reshape(x, Concat(Gather(Shape(x), 0), [-1])): what exporters write for flatten.
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {2, 3, 4})
      .initializer("zero", i64_tensor({}, {0}))
      .initializer("minus_one", i64_tensor({1}, {-1}))
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "zero"}, {"n"})
      .node("Unsqueeze", {"n", "zero_axes"}, {"n1"})
      .initializer("zero_axes", i64_tensor({1}, {0}))
      .node("Concat", {"n1", "minus_one"}, {"target"});
  auto* axis = m.last()->add_attribute();
  axis->set_name("axis");
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(0);
  m.node("Reshape", {"x", "target"}, {"y"}).output("y", SINGA_ONNX_FLOAT, {2, 12});
  auto ops = check_same(m, {random_floats({2, 3, 4}, 16)});
  EXPECT_EQ(ops, (std::vector<std::string>{"Reshape"}));
  auto s = stats_of(m);
  EXPECT_EQ(s.folded_shapes, 1);
  EXPECT_EQ(s.folded_constants, 4);
}

TEST(Passes, ShapeOfASymbolicDimensionIsNotFolded) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, 3}, {"N"}).node("Shape", {"x"}, {"y"}).output("y", SINGA_ONNX_INT64, {2});
  EXPECT_EQ(stats_of(m).folded_shapes, 0);
  singa::onnx::PrepareOptions bound;
  bound.dims["N"] = 4;  // bound at prepare: now static
  EXPECT_EQ(stats_of(m, bound).folded_shapes, 1);
  auto rep = singa::onnx::prepare_bytes(m.bytes(), bound);
  auto out = rep->run({random_floats({4, 3}, 17)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].second.numel(), 2);
  EXPECT_EQ(out[0].second.data<int64_t>()[0], 4);
  EXPECT_EQ(out[0].second.data<int64_t>()[1], 3);
}

TEST(Passes, DeadNodesAreRemoved) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {3})
      .node("Neg", {"x"}, {"unused"})
      .node("Exp", {"unused"}, {"unused2"})
      .node("Abs", {"x"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {3});
  auto ops = check_same(m, {f32_tensor({3}, {-1.f, 0.5f, 2.f})});
  EXPECT_EQ(ops, (std::vector<std::string>{"Abs"}));
  EXPECT_EQ(stats_of(m).removed_dead, 2);
}

TEST(Passes, OptimizedModelShowsTheFusedActivation) {
  ensure_loaded();
  ModelBuilder m = conv_bn("LeakyRelu", 1);
  ::onnx::ModelProto out = singa::onnx::optimized_model(m.model, {});
  ASSERT_EQ(out.graph().node_size(), 1);
  const auto& n = out.graph().node(0);
  EXPECT_EQ(n.op_type(), "FusedConv");
  std::string activation;
  for (const auto& a : n.attribute())
    if (a.name() == "activation") activation = a.s();
  EXPECT_EQ(activation, "LeakyRelu");
  // The folded weights replace the originals, which nothing reads any more.
  for (const auto& init : out.graph().initializer()) EXPECT_NE(init.name(), "scale");
}

namespace {

// LayerNormalization as PyTorch exports it before opset 17, over the last
// axis of x [2, 5, C];
// the residual Add keeps x read twice, as in a transformer.
ModelBuilder decomposed_layer_norm(int64_t opset, int64_t C, bool with_bias, const std::vector<int64_t>& x_dims) {
  ModelBuilder m(opset);
  m.input("x", SINGA_ONNX_FLOAT, x_dims, {"", "S", ""})
      .initializer("two", f32_tensor({}, {2.f}))
      .initializer("eps", f32_tensor({}, {1e-5f}))
      .initializer("gamma", random_floats({C}, 20, 0.5f, 1.5f))
      .initializer("beta", random_floats({C}, 21));
  auto mean = [&](const std::string& in, const std::string& out) {
    m.node("ReduceMean", {in}, {out});
    auto* a = m.last()->add_attribute();
    a->set_name("axes");
    a->set_type(::onnx::AttributeProto::INTS);
    a->add_ints(-1);
  };
  m.node("Add", {"x", "x"}, {"r"});
  mean("r", "m");
  m.node("Sub", {"r", "m"}, {"d"}).node("Pow", {"d", "two"}, {"p"});
  mean("p", "v");
  m.node("Add", {"v", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"s"}).node("Div", {"d", "s"}, {"n"});
  m.node("Mul", {"gamma", "n"}, {with_bias ? "g" : "y"});  // gamma first: either order fuses
  if (with_bias) m.node("Add", {"g", "beta"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {-1, -1, -1}, {"a", "b", "c"});
  return m;
}

}  // namespace

TEST(Passes, DecomposedLayerNormBecomesOneNode) {
  ensure_loaded();
  const int64_t C = 40;
  for (int64_t opset : {13, 17}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE("opset " + std::to_string(opset) + (bias ? " with bias" : " without bias"));
      ModelBuilder m = decomposed_layer_norm(opset, C, bias, {2, -1, C});
      singa::onnx::PrepareOptions o;
      o.dims["S"] = 5;
      auto ops = check_same(m, {random_floats({2, 5, C}, 22, -3.f, 3.f)}, 1e-5, o);
      EXPECT_EQ(ops, (std::vector<std::string>{"Add", "LayerNormalization"}));
      EXPECT_EQ(stats_of(m).layer_norms, 1);
    }
  }
}

TEST(Passes, LayerNormPatternsThatDoNotMatchStay) {
  ensure_loaded();
  // Over a middle axis: not the last one.
  ModelBuilder m = decomposed_layer_norm(13, 5, true, {2, 5, 5});
  for (auto& n : *m.model.mutable_graph()->mutable_node())
    if (n.op_type() == "ReduceMean") n.mutable_attribute(0)->set_ints(0, 1);
  EXPECT_EQ(stats_of(m).layer_norms, 0);
  check_same(m, {random_floats({2, 5, 5}, 23)}, 1e-5);
  // The centred values also read elsewhere (a graph output): they must stay.
  ModelBuilder m2 = decomposed_layer_norm(13, 8, true, {2, 3, 8});
  m2.output("d", SINGA_ONNX_FLOAT, {2, 3, 8});
  EXPECT_EQ(stats_of(m2).layer_norms, 0);
  // gamma of one value against an unknown last dim (it could be broadcasting).
  ModelBuilder m3 = decomposed_layer_norm(13, 1, true, {2, 3, -1});
  EXPECT_EQ(stats_of(m3).layer_norms, 0);
}

namespace {

// GELU as PyTorch exports it before opset 20: Div(x, sqrt 2) -> Erf -> Add 1
// -> Mul x -> Mul 0.5 (optionally Mul by 1/sqrt 2 and operands swapped).
ModelBuilder decomposed_gelu(int32_t dtype, bool swapped) {
  ModelBuilder m;
  auto scalar = [&](const char* name, double v) {
    Tensor t({}, dtype);
    if (dtype == SINGA_ONNX_DOUBLE) t.data<double>()[0] = v;
    else t.data<float>()[0] = float(v);
    m.initializer(name, t);
  };
  m.input("x", dtype, {3, 50});
  scalar("one", 1.0);
  scalar("half", 0.5);
  if (swapped) {
    scalar("k", 1 / std::sqrt(2.0));
    m.node("Mul", {"k", "x"}, {"t"});
  } else {
    scalar("k", std::sqrt(2.0));
    m.node("Div", {"x", "k"}, {"t"});
  }
  m.node("Erf", {"t"}, {"e"});
  m.node("Add", swapped ? std::vector<std::string>{"one", "e"} : std::vector<std::string>{"e", "one"}, {"a"});
  m.node("Mul", swapped ? std::vector<std::string>{"a", "x"} : std::vector<std::string>{"x", "a"}, {"p"});
  m.node("Mul", swapped ? std::vector<std::string>{"half", "p"} : std::vector<std::string>{"p", "half"}, {"y"});
  m.output("y", dtype, {3, 50});
  return m;
}

}  // namespace

TEST(Passes, DecomposedGeluBecomesOneNode) {
  ensure_loaded();
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "Mul by 1/sqrt(2), operands swapped" : "Div by sqrt(2)");
    ModelBuilder m = decomposed_gelu(SINGA_ONNX_FLOAT, swapped);
    auto ops = check_same(m, {random_floats({3, 50}, 30, -6.f, 6.f)}, 2e-6);
    EXPECT_EQ(ops, (std::vector<std::string>{"Gelu"}));
    EXPECT_EQ(stats_of(m).gelus, 1);
  }
  // Other element types keep the nodes.
  EXPECT_EQ(stats_of(decomposed_gelu(SINGA_ONNX_DOUBLE, false)).gelus, 0);
  // A different constant (not GELU) keeps them too.
  ModelBuilder odd = decomposed_gelu(SINGA_ONNX_FLOAT, false);
  for (auto& t : *odd.model.mutable_graph()->mutable_initializer())
    if (t.name() == "half") t.set_raw_data(std::string("\x00\x00\x40\x3f", 4));  // 0.75
  EXPECT_EQ(stats_of(odd).gelus, 0);
}

namespace {

struct Block {
  int64_t N = 1, C = 8, Me = 32, M = 16, H = 9, W = 7, K = 3, S = 1;
  std::vector<int64_t> pads{1, 1, 1, 1};
  bool expand = true, biases = true;
  int skip = 0;  // 1: y = x + block(x), 2: y = block(x) + x (stride 1, M == the input's channels)
  std::string expand_act = "Clip", dw_act = "Clip", project_act = "";  // "" none, else Relu | LeakyRelu | Clip
  // A stem KxK Conv (stride stem_s, pads stem_pads) of C channels as the
  // expand stage, where stem_k > 0; H and W are then the image's.
  int64_t stem_k = 0, stem_s = 1;
  std::vector<int64_t> stem_pads{1, 1, 1, 1};
  int64_t stem_out(int64_t in, int axis) const {
    if (!stem_k) return in;
    return (in + stem_pads[size_t(axis)] + stem_pads[size_t(axis) + 2] - stem_k) / stem_s + 1;
  }
  int64_t out(int64_t in, int axis) const {
    return (stem_out(in, axis) + pads[size_t(axis)] + pads[size_t(axis) + 2] - K) / S + 1;
  }
};

// in -> [Conv 1x1 -> act] -> depthwise Conv -> act -> Conv 1x1 [-> act] ->
// out, its values named with `prefix` (its initializers' seeds from `seed`
// on); the model has the initializers "lo" and "hi" (Clip's bounds).
void append_block(ModelBuilder& m, const Block& b, const std::string& in, const std::string& out,
                  const std::string& prefix, unsigned& seed) {
  auto act = [&](const std::string& kind, const std::string& from, const std::string& to) {
    if (kind.empty()) return from;
    if (kind == "Clip")
      m.node("Clip", {from, "lo", "hi"}, {to});
    else
      m.node(kind, {from}, {to});
    return to;
  };
  auto conv = [&](const std::string& from, const std::string& name, const singa::Shape& w, int64_t bias) {
    m.initializer(name + "_w", random_floats(w, seed++, -0.5f, 0.5f));
    std::vector<std::string> ins{from, name + "_w"};
    if (b.biases) {
      m.initializer(name + "_b", random_floats({bias}, seed++, -0.5f, 0.5f));
      ins.push_back(name + "_b");
    }
    m.node("Conv", ins, {name}, name);
  };
  std::string v = in;
  if (b.stem_k) {
    conv(v, prefix + "expand", {b.Me, b.C, b.stem_k, b.stem_k}, b.Me);
    add_ints(m.last(), "pads", b.stem_pads);
    add_ints(m.last(), "strides", {b.stem_s, b.stem_s});
    v = act(b.expand_act, prefix + "expand", prefix + "expand_act");
  } else if (b.expand) {
    conv(v, prefix + "expand", {b.Me, b.C, 1, 1}, b.Me);
    v = act(b.expand_act, prefix + "expand", prefix + "expand_act");
  }
  conv(v, prefix + "dw", {b.Me, 1, b.K, b.K}, b.Me);
  auto* dw = m.last();
  add_ints(dw, "pads", b.pads);
  add_ints(dw, "strides", {b.S, b.S});
  add_int(dw, "group", b.Me);
  v = act(b.dw_act, prefix + "dw", prefix + "dw_act");
  conv(v, prefix + "project", {b.M, b.Me, 1, 1}, b.M);
  if (b.skip) {
    v = act(b.project_act, prefix + "project", prefix + "block");
    m.node("Add", b.skip == 1 ? std::vector<std::string>{in, v} : std::vector<std::string>{v, in}, {out});
  } else {
    v = act(b.project_act, prefix + "project", out);
    if (v != out) m.node("Identity", {v}, {out});
  }
}

// x -> [Conv 1x1 -> act] -> depthwise Conv -> act -> Conv 1x1 [-> act] -> y.
ModelBuilder inverted_residual(const Block& b, unsigned seed = 40) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {b.N, b.expand || b.stem_k ? b.C : b.Me, b.H, b.W});
  m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {6.f}));
  append_block(m, b, "x", "y", "", seed);
  m.output("y", SINGA_ONNX_FLOAT, {b.N, b.M, b.out(b.H, 0), b.out(b.W, 1)});
  return m;
}

}  // namespace

// Each block shape against the unfused graph, at 1 to 3 threads: 3x3 and 5x5,
// strides 1 and 2, symmetric and one-sided pads, with and without the expand
// stage and biases, every activation kind; expanded channels in whole vectors
// (the band kernel) and not (the staged fallback); planes several bands tall
// (the kept rows between bands) and batches (one chunk per image); at 2 and
// 3 threads a single small image splits its expanded channels instead of its
// rows (inverted_residual_f32.cpp's run_channel_slices).
TEST(Passes, InvertedResidualBlocksBecomeOneNode) {
  ensure_loaded();
  std::vector<Block> cases;
  Block b;
  cases.push_back(b);
  b.K = 5, b.pads = {2, 2, 2, 2};
  cases.push_back(b);
  b.K = 3, b.S = 2, b.pads = {0, 0, 1, 1}, b.H = 10, b.W = 11;
  cases.push_back(b);
  b.K = 5, b.pads = {1, 2, 2, 1}, b.expand_act = "Relu", b.dw_act = "LeakyRelu", b.project_act = "Clip";
  cases.push_back(b);
  b = Block();
  b.expand = false, b.biases = false, b.dw_act = "Relu", b.project_act = "LeakyRelu";
  cases.push_back(b);
  b = Block();
  b.Me = 24, b.N = 2;  // not whole vectors: the staged path
  cases.push_back(b);
  b = Block();
  b.N = 3, b.H = 70, b.W = 96, b.Me = 48, b.M = 24, b.S = 2, b.pads = {1, 1, 1, 1};  // several bands per chunk
  cases.push_back(b);
  b.S = 1, b.N = 1, b.K = 5, b.pads = {2, 2, 2, 2}, b.expand_act = "", b.dw_act = "";
  cases.push_back(b);
  b = Block();
  b.H = 1, b.W = 1, b.pads = {2, 2, 2, 2}, b.K = 3;  // every tap but the centre is padding
  cases.push_back(b);
  b = Block();
  b.C = b.M = 16, b.skip = 1;  // the skip connection's Add goes into the node
  cases.push_back(b);
  b.skip = 2, b.N = 2, b.H = 70, b.W = 33, b.project_act = "Relu";
  cases.push_back(b);
  b = Block();
  b.expand = false, b.M = 32, b.skip = 2;
  cases.push_back(b);
  b = Block();
  b.C = b.M = 16, b.Me = 24, b.skip = 1;  // the staged path adds it too
  cases.push_back(b);
  b = Block();
  b.Me = 48, b.H = b.W = 7, b.C = b.M = 24, b.skip = 1;  // three uneven channel slices at 3 threads
  cases.push_back(b);
  b.S = 2, b.H = b.W = 14, b.skip = 0, b.pads = {0, 0, 1, 1};
  cases.push_back(b);
  // The expand stage's register tile (pointwise_channels_last_f32.cpp):
  // panels of 64 channels and a tail of 16, pixel tiles of 6 and a tail
  // (the project stage takes it too where M is whole vectors).
  b = Block();
  b.C = 24, b.Me = 144, b.M = 24, b.H = 11, b.W = 13, b.expand_act = "Relu";
  cases.push_back(b);
  b = Block();
  b.N = 2, b.C = 40, b.Me = 80, b.M = 16, b.H = b.W = 7, b.expand_act = "LeakyRelu";
  cases.push_back(b);
  b = Block();
  b.Me = 64, b.H = 2, b.W = 5;  // 10 pixels: a tile of 6 and a tail of 4
  cases.push_back(b);
  // The project stage's packed tile: a whole panel of 64 outputs and a tail of 16.
  b = Block();
  b.C = 16, b.Me = 96, b.M = 80, b.H = 9, b.W = 10, b.project_act = "Relu";
  cases.push_back(b);
  // The project stage of channel slices split by output channels (more of
  // them than pixels), the skip connection added per slice; 4 panels over
  // 2 or 3 threads.
  b = Block();
  b.C = b.M = 64, b.Me = 128, b.H = b.W = 5, b.skip = 1, b.project_act = "Relu";
  cases.push_back(b);
  b = Block();
  b.C = 16, b.Me = 96, b.M = 48, b.H = 4, b.W = 6, b.S = 2, b.pads = {1, 1, 1, 1};
  cases.push_back(b);
  // Outputs of a vector and a half take the project tile with 256-bit FMAs
  // for the half (with the bias, the activation and the skip connection;
  // by pixels in channel slices, as the split by channels takes whole
  // vectors only); 4.5 vectors and a half alone take sgemm.
  b = Block();
  b.C = b.M = 40, b.Me = 80, b.H = 9, b.W = 10, b.skip = 1, b.project_act = "Clip";
  cases.push_back(b);
  b = Block();
  b.C = 16, b.Me = 64, b.M = 40, b.H = b.W = 5, b.project_act = "LeakyRelu";
  cases.push_back(b);
  b.M = 72;
  cases.push_back(b);
  b.M = 8;
  cases.push_back(b);
  b = Block();
  b.C = 16, b.Me = 32, b.M = 24, b.H = 2, b.W = 7;  // 14 pixels: a tile of 8 and a tail of 6
  cases.push_back(b);
  // A stem in front of a block without an expand stage becomes that stage
  // (MobileNetV2's 3 -> 32 3x3/2 and block 1), its rows computed into the
  // bands channels-last (conv_thin_f32.cpp): 32 channels in strips of 12
  // pixels, 64 in strips of 6, strides 1 and 2, one-sided pads, a plane
  // wide enough for whole strips and one narrower than a strip, several
  // bands per chunk, a batch, and each activation kind (LeakyRelu outside
  // the strips' store).
  b = Block();
  b.expand = false, b.C = 3, b.stem_k = 3, b.stem_s = 2, b.H = 40, b.W = 37, b.M = 16;
  cases.push_back(b);
  b.N = 2, b.stem_s = 1, b.stem_pads = {0, 1, 1, 0}, b.H = 9, b.W = 7, b.Me = 64, b.expand_act = "LeakyRelu";
  cases.push_back(b);
  b = Block();
  b.expand = false, b.C = 4, b.stem_k = 5, b.stem_s = 2, b.stem_pads = {2, 2, 2, 2}, b.H = 230, b.W = 61;
  b.K = 5, b.pads = {2, 2, 2, 2}, b.S = 2, b.expand_act = "Relu", b.project_act = "Relu", b.biases = false;
  cases.push_back(b);
  b.expand_act = "", b.N = 2, b.H = 17, b.C = 1, b.Me = 96, b.M = 40;
  cases.push_back(b);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Block& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    ModelBuilder m = inverted_residual(c);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      auto ops = check_same(m, {random_floats({c.N, c.expand || c.stem_k ? c.C : c.Me, c.H, c.W}, 50 + unsigned(i))},
                            1e-4, o);
      std::vector<std::string> want{"ExpandDepthwiseProject"};
      if (c.project_act.empty() && !c.skip) want.push_back("Identity");  // the builder's way to name the result y
      EXPECT_EQ(ops, want);
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.inverted_residuals"), 1);
  }
}

// optimized_model() writes the fused node with its domain imported: the
// model loads, checks and runs again with the same results.
TEST(Passes, OptimizedModelWithAFusedBlockLoadsAgain) {
  ensure_loaded();
  Block b;
  check_optimized_model_loads_again(inverted_residual(b), "ExpandDepthwiseProject", random_floats({1, 8, 9, 7}, 63));
  // With a stem stage: its window attributes travel under expand_.
  Block s;
  s.expand = false, s.C = 3, s.stem_k = 3, s.stem_s = 2, s.H = 20, s.W = 18;
  check_optimized_model_loads_again(inverted_residual(s), "ExpandDepthwiseProject", random_floats({1, 3, 20, 18}, 66));
}

// Between two fused blocks the activations stay channels-last
// (core/passes/channels_last_layout.cpp): a chain of blocks, two images,
// against the unfused graph at 1 to 3 threads. It takes every path that
// reads or writes channels-last: a stem writing it; bands of rows reading
// it through the expand tile, through a copy (no expand stage) and through
// the staged fallback (expanded channels not whole vectors); outputs of a
// vector and a half (activated, with the skip connection added), of 4.5
// vectors (sgemm, then the bias, activation and skip connection in place,
// with and without one);
// channel slices projecting by output channels (2 threads) and by pixels (3).
// The last block's skip connection reads its X in Y's layout, and its Y goes
// to a Relu: both stay NCHW, and so does the block before it.
TEST(Passes, ChannelsLastBetweenInvertedResidualBlocks) {
  ensure_loaded();
  std::vector<Block> chain;
  Block b;
  b.N = 2, b.expand = false, b.C = 3, b.stem_k = 3, b.stem_s = 2, b.H = 40, b.W = 37, b.M = 16;  // -> 16 x 20 x 19
  chain.push_back(b);
  b = Block();
  b.N = 2, b.C = 16, b.Me = 96, b.M = 24, b.H = 20, b.W = 19, b.S = 2, b.project_act = "Relu";  // -> 24 x 10 x 10
  chain.push_back(b);
  b = Block();
  b.N = 2, b.C = b.M = 24, b.Me = 144, b.H = b.W = 10, b.skip = 1, b.project_act = "Clip";
  chain.push_back(b);
  b.Me = 96, b.M = 72, b.skip = 0, b.project_act = "LeakyRelu";  // -> 72 x 10 x 10
  chain.push_back(b);
  b.C = 72, b.skip = 1;
  chain.push_back(b);
  b = Block();
  b.N = 2, b.C = 72, b.Me = 144, b.M = 32, b.H = b.W = 10, b.S = 2, b.project_act = "Clip";  // -> 32 x 5 x 5
  chain.push_back(b);
  b = Block();
  b.N = 2, b.C = b.M = 32, b.Me = 96, b.H = b.W = 5, b.skip = 2, b.project_act = "Relu";
  chain.push_back(b);
  b.expand = false, b.Me = 32, b.skip = 1;
  chain.push_back(b);
  b.expand = true, b.Me = 40, b.M = 16, b.skip = 0, b.project_act = "Clip";  // -> 16 x 5 x 5
  chain.push_back(b);
  b.C = b.M = 16, b.Me = 64, b.skip = 1;
  chain.push_back(b);
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {2, 3, 40, 37});
  m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {6.f}));
  unsigned seed = 700;
  std::string v = "x";
  for (size_t i = 0; i < chain.size(); ++i) {
    const std::string out = "b" + std::to_string(i);
    append_block(m, chain[i], v, out, out + "_", seed);
    v = out;
  }
  m.node("Relu", {v}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {2, 16, 5, 5});
  const Tensor x = random_floats({2, 3, 40, 37}, 71);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    singa::onnx::PrepareOptions o;
    o.threads = threads;
    auto ops = check_same(m, {x}, 1e-3, o);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "ExpandDepthwiseProject"), 10);
  }
  const auto stats = stats_of(m);
  EXPECT_EQ(plugin_count(stats, "cpu.inverted_residuals"), 10);
  EXPECT_EQ(plugin_count(stats, "cpu.channels_last"), 7);
}

TEST(Passes, InvertedResidualStaysWhenAnIntermediateIsRead) {
  ensure_loaded();
  Block b;
  ModelBuilder m = inverted_residual(b);
  m.output("dw_act", SINGA_ONNX_FLOAT, {1, 32, 9, 7});  // the depthwise result is a graph output
  // Only the expand and depthwise stages fuse: a node without W2 whose output is that result.
  auto ops = check_same(m, {random_floats({1, 8, 9, 7}, 60)});
  EXPECT_EQ(ops, (std::vector<std::string>{"ExpandDepthwiseProject", "Conv", "Identity"}));
  EXPECT_EQ(plugin_count(stats_of(m), "cpu.inverted_residuals"), 1);
  // An expand output that is read elsewhere: only the depthwise and project fuse.
  ModelBuilder m2 = inverted_residual(b);
  m2.output("expand_act", SINGA_ONNX_FLOAT, {1, 32, 9, 7});
  ops = check_same(m2, {random_floats({1, 8, 9, 7}, 61)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "ExpandDepthwiseProject", "Identity"}));
  // A dilated depthwise window is not the kernel's.
  ModelBuilder m3 = inverted_residual(b);
  for (auto& n : *m3.model.mutable_graph()->mutable_node())
    if (n.name() == "dw") add_ints(&n, "dilations", {2, 2});
  auto* dims = m3.model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(2)->set_dim_value(7);  // a 5x5 reach over 9x7 with pads 1
  dims->mutable_dim(3)->set_dim_value(5);
  ops = check_same(m3, {random_floats({1, 8, 9, 7}, 62)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "FusedConv", "Conv", "Identity"}));
  EXPECT_EQ(plugin_count(stats_of(m3), "cpu.inverted_residuals"), 0);
  // A stem the band kernel cannot take stays a Conv in front of the block:
  // more than 4 channels, a stride of 3 (outputs that are not groups of 32 fuse, padded: test_depthwise_family3).
  for (int i = 1; i < 3; ++i) {
    SCOPED_TRACE("stem case " + std::to_string(i));
    Block s;
    s.expand = false, s.C = 3, s.stem_k = 3, s.stem_s = 2, s.H = 12, s.W = 10;
    if (i == 0) s.Me = 48;
    if (i == 1) s.C = 5;
    if (i == 2) s.stem_s = 3;
    ops = check_same(inverted_residual(s), {random_floats({1, s.C, s.H, s.W}, 65)});
    EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "ExpandDepthwiseProject", "Identity"}));
  }
}

namespace {

struct PoolCase {
  int64_t N = 1, C = 3, M = 16, H = 23, W = 20;
  int64_t k = 3, s = 2;
  std::vector<int64_t> pads{0, 0, 0, 0};
  int64_t ceil = 0;
  std::string act = "Relu";  // "" for none
};

// MaxPool's output over the [N, M, H, W] conv output (ONNX's rule: in ceil
// mode a last window that would start in the end padding is dropped).
std::vector<int64_t> pooled_shape(const PoolCase& c) {
  auto out = [&](int64_t in, int64_t pb, int64_t pe) {
    int64_t o = (in + pb + pe - c.k + (c.ceil ? c.s - 1 : 0)) / c.s + 1;
    if (c.ceil && (o - 1) * c.s >= in + pb) --o;
    return o;
  };
  return {c.N, c.M, out(c.H, c.pads[0], c.pads[2]), out(c.W, c.pads[1], c.pads[3])};
}

// x -> Conv 3x3 pads 1 [-> act] -> MaxPool -> y.
ModelBuilder conv_pool(const PoolCase& c) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("w", random_floats({c.M, c.C, 3, 3}, 70))
      .initializer("b", random_floats({c.M}, 71))
      .node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  std::string v = "c";
  if (!c.act.empty()) {
    m.node(c.act, {"c"}, {"a"}, "act");
    v = "a";
  }
  m.node("MaxPool", {v}, {"y"}, "pool");
  add_ints(m.last(), "kernel_shape", {c.k, c.k});
  add_ints(m.last(), "strides", {c.s, c.s});
  add_ints(m.last(), "pads", c.pads);
  add_int(m.last(), "ceil_mode", c.ceil);
  m.output("y", SINGA_ONNX_FLOAT, pooled_shape(c));
  return m;
}

}  // namespace

// The MaxPool runs inside the Conv, pooled in oneDNN's 16-channel blocks,
// where the output channels are a multiple of 16; otherwise the two stay
// apart. Both at 1 and 2 threads, against the unfused graph.
TEST(Passes, MaxPoolAfterAConvRunsInsideIt) {
  ensure_loaded();
  std::vector<PoolCase> cases;
  PoolCase c;
  cases.push_back(c);  // SqueezeNet's first layer, in small
  c.ceil = 1;
  cases.push_back(c);
  c.k = 2, c.s = 2, c.ceil = 0, c.act = "LeakyRelu", c.M = 32, c.C = 16, c.N = 2;
  cases.push_back(c);
  c.k = 3, c.s = 2, c.pads = {1, 1, 1, 1}, c.act = "", c.M = 16, c.C = 3, c.N = 1, c.H = 40, c.W = 37;
  cases.push_back(c);  // ResNet's stem pool, bands several rows apart
  c.M = 8;
  cases.push_back(c);  // not whole 16-channel blocks: not fused
  c.M = 16, c.k = 2, c.s = 1, c.pads = {0, 0, 1, 1}, c.H = 9, c.W = 9;
  cases.push_back(c);  // Tiny-YOLO's last pool: stride 1, one-sided pads
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const PoolCase& pc = cases[i];
    ModelBuilder m = conv_pool(pc);
    for (int threads : {1, 2}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      auto ops = check_same(m, {random_floats({pc.N, pc.C, pc.H, pc.W}, 80 + unsigned(i))}, 1e-4, o);
      const bool fused = pc.M % 16 == 0;
      EXPECT_EQ(ops, (fused ? std::vector<std::string>{"FusedConv"} : std::vector<std::string>{"Conv", "MaxPool"}));
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.conv_pools"), pc.M % 16 == 0 ? 1 : 0);
  }
}

TEST(Passes, MaxPoolStaysWhenItsIndicesOrTheConvOutputAreRead) {
  ensure_loaded();
  PoolCase c;
  ModelBuilder with_indices = conv_pool(c);
  auto* pool = with_indices.model.mutable_graph()->mutable_node(2);
  pool->add_output("idx");
  with_indices.output("idx", SINGA_ONNX_INT64, pooled_shape(c));
  EXPECT_EQ(plugin_count(stats_of(with_indices), "cpu.conv_pools"), 0);
  ModelBuilder read = conv_pool(c);
  read.output("a", SINGA_ONNX_FLOAT, {1, 16, 23, 20});
  check_same(read, {random_floats({1, 3, 23, 20}, 90)});
  EXPECT_EQ(plugin_count(stats_of(read), "cpu.conv_pools"), 0);
  ModelBuilder dilated = conv_pool(c);
  add_ints(dilated.model.mutable_graph()->mutable_node(2), "dilations", {2, 2});
  EXPECT_EQ(plugin_count(stats_of(dilated), "cpu.conv_pools"), 0);
}

namespace {

// x [N, C, H, W] -> Conv(w [M, C, K, K], b) -> ACT -> GlobalAveragePool -> y.
struct MeanCase {
  int64_t N = 1, C = 24, M = 70, H = 7, W = 7, K = 1;
  std::string act = "Relu";  // Relu, Clip (0, 6), LeakyRelu or "" (none)
  bool bias = true;
};

ModelBuilder conv_mean(const MeanCase& c) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W}).initializer("w", random_floats({c.M, c.C, c.K, c.K}, 72));
  if (c.bias) m.initializer("b", random_floats({c.M}, 73));
  m.node("Conv", c.bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"c"}, "head");
  if (c.K > 1) add_ints(m.last(), "pads", {c.K / 2, c.K / 2, c.K / 2, c.K / 2});
  std::string v = "c";
  if (c.act == "Clip") {
    m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {0.25f}));
    m.node("Clip", {"c", "lo", "hi"}, {"a"}, "act");
    v = "a";
  } else if (!c.act.empty()) {
    m.node(c.act, {"c"}, {"a"}, "act");
    v = "a";
  }
  m.node("GlobalAveragePool", {v}, {"y"}, "gap");
  m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, 1, 1});
  return m;
}

}  // namespace

// The GlobalAveragePool after a pointwise Conv (a net's head) runs inside it:
// the product's tiles are summed where they are computed. Panels of 64
// output channels (70: one whole, one of 6), planes of whole 6-pixel tiles
// and of tails, each activation, no bias, batches, 1-3 threads.
TEST(Passes, GlobalAveragePoolAfterAPointwiseConvRunsInsideIt) {
  ensure_loaded();
  std::vector<MeanCase> cases;
  MeanCase c;
  cases.push_back(c);  // MobileNetV2's head, in small: 49 pixels
  c.act = "Clip", c.H = 2, c.W = 3, c.M = 64;
  cases.push_back(c);  // one whole tile, one whole panel
  c.act = "LeakyRelu", c.H = 13, c.W = 13, c.M = 130, c.N = 2;
  cases.push_back(c);  // SqueezeNet's classifier, in small
  c.act = "", c.bias = false, c.H = 1, c.W = 1, c.M = 5, c.N = 3;
  cases.push_back(c);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const MeanCase& mc = cases[i];
    ModelBuilder m = conv_mean(mc);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      auto ops = check_same(m, {random_floats({mc.N, mc.C, mc.H, mc.W}, 90 + unsigned(i))}, 1e-5, o);
      EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv"}));
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.conv_means"), 1);
  }
}

// Where the Conv is not pointwise, or its output is read elsewhere too, the
// GlobalAveragePool stays; a hand-written global_average_pool on a 3x3 Conv
// convolves into a buffer first; one with a fused MaxPool or Z fails clearly.
TEST(Passes, GlobalAveragePoolStaysOrFailsWhereTheConvCannotTakeIt) {
  ensure_loaded();
  MeanCase c;
  c.K = 3;
  EXPECT_EQ(plugin_count(stats_of(conv_mean(c)), "cpu.conv_means"), 0);
  ModelBuilder read = conv_mean(MeanCase());
  read.output("a", SINGA_ONNX_FLOAT, {1, 70, 7, 7});
  check_same(read, {random_floats({1, 24, 7, 7}, 91)});
  EXPECT_EQ(plugin_count(stats_of(read), "cpu.conv_means"), 0);
  ModelBuilder strided = conv_mean(MeanCase());
  add_ints(strided.model.mutable_graph()->mutable_node(0), "strides", {2, 2});
  EXPECT_EQ(plugin_count(stats_of(strided), "cpu.conv_means"), 0);

  // The attribute by hand on the 3x3 Conv, against Conv -> Relu -> GAP.
  ModelBuilder by_hand = conv_mean(c);
  auto* g = by_hand.model.mutable_graph();
  as_fused_conv(by_hand, g->mutable_node(0));
  add_int(g->mutable_node(0), "global_average_pool", 1);
  auto* act = g->mutable_node(0)->add_attribute();
  act->set_name("activation");
  act->set_type(::onnx::AttributeProto::STRING);
  act->set_s("Relu");
  g->mutable_node(0)->set_output(0, "y");
  g->mutable_node()->DeleteSubrange(1, 2);
  singa::onnx::PrepareOptions o;
  o.check_model = false;
  o.optimize = false;
  auto fused = singa::onnx::prepare_bytes(by_hand.bytes(), o);
  auto plain = singa::onnx::prepare_bytes(conv_mean(c).bytes(), o);
  expect_same_output(*plain, *fused, random_floats({1, 24, 7, 7}, 92), 1e-5);

  for (const char* extra : {"pool_kernel_shape"}) {  // (a blocked layout is a value's: tests/unit/test_layouts.cpp)
    ModelBuilder bad = conv_mean(MeanCase());
    auto* n = bad.model.mutable_graph()->mutable_node(0);
    as_fused_conv(bad, n);
    add_int(n, "global_average_pool", 1);
    if (std::string(extra) == "pool_kernel_shape")
      add_ints(n, extra, {2, 2});
    else
      add_int(n, extra, 1);
    try {
      singa::onnx::prepare_bytes(bad.bytes(), o);
      ADD_FAILURE() << "no error for global_average_pool with " << extra;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("head"), std::string::npos) << msg;
      EXPECT_NE(msg.find("global_average_pool"), std::string::npos) << msg;
    }
  }
}

namespace {

// conv_mean(c) -> Flatten -> Gemm(wfc, cfc) -> y [N, outputs]: a classifier head.
struct HeadCase {
  MeanCase conv;
  int64_t outputs = 37;
  bool trans_b = true;
  int gemm_bias = 1;  // 0: none, 1: [outputs], 2: [1, outputs]
};

ModelBuilder conv_mean_gemm(const HeadCase& h) {
  ModelBuilder m = conv_mean(h.conv);
  auto* g = m.model.mutable_graph();
  g->mutable_node(g->node_size() - 1)->set_output(0, "means");
  g->mutable_output()->Clear();
  const int64_t M = h.conv.M;
  m.initializer("wfc", random_floats(h.trans_b ? singa::Shape{h.outputs, M} : singa::Shape{M, h.outputs}, 74));
  std::vector<std::string> ins{"flat", "wfc"};
  if (h.gemm_bias) {
    m.initializer("cfc", random_floats(h.gemm_bias == 1 ? singa::Shape{h.outputs} : singa::Shape{1, h.outputs}, 75));
    ins.push_back("cfc");
  }
  m.node("Flatten", {"means"}, {"flat"}, "flatten");
  m.node("Gemm", ins, {"y"}, "fc");
  if (h.trans_b) add_int(m.last(), "transB", 1);
  m.output("y", SINGA_ONNX_FLOAT, {h.conv.N, h.outputs});
  return m;
}

}  // namespace

// A Conv with its GlobalAveragePool, a Flatten and a Gemm with constant
// weights (a classifier head) run as one ConvMeanGemm node: Wfc as [outputs,
// M] and [M, outputs], a bias row of either shape or none, batches, the
// fallback of a conv without pointwise weights (no bias, 1x1 plane), a
// Gemm wide enough to split its columns over 2-3 threads, and at batch 1 the
// classifier taken panel by panel with the means.
TEST(Passes, ClassifierHeadRunsAsOneNode) {
  ensure_loaded();
  std::vector<HeadCase> cases;
  HeadCase h;
  cases.push_back(h);  // MobileNetV2's head, in small: 70 channels on 49 pixels, 37 classes
  h.conv.N = 2, h.conv.act = "Clip", h.trans_b = false, h.gemm_bias = 2;
  cases.push_back(h);
  h = HeadCase();
  h.conv.act = "", h.conv.bias = false, h.conv.H = h.conv.W = 1, h.conv.M = 5, h.conv.N = 3, h.gemm_bias = 0;
  cases.push_back(h);
  h = HeadCase();
  h.conv.act = "LeakyRelu", h.conv.M = 130, h.conv.H = h.conv.W = 5, h.conv.N = 2, h.outputs = 1000;
  cases.push_back(h);
  // One image: the classifier panel by panel, 3 panels (the last of 2
  // means) over 1-3 tasks, Wfc either way round, 1000 outputs in 8 groups.
  h.conv.N = 1, h.trans_b = false, h.gemm_bias = 0;
  cases.push_back(h);
  h.trans_b = true, h.gemm_bias = 2, h.conv.M = 40, h.outputs = 19;  // one panel for 3 threads
  cases.push_back(h);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const HeadCase& c = cases[i];
    ModelBuilder m = conv_mean_gemm(c);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      auto ops = check_same(m, {random_floats({c.conv.N, c.conv.C, c.conv.H, c.conv.W}, 95 + unsigned(i))}, 1e-5, o);
      EXPECT_EQ(ops, (std::vector<std::string>{"ConvMeanGemm"}));
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.conv_mean_gemms"), 1);
  }
}

// optimized_model() writes the ConvMeanGemm node with its domain: the model
// loads, checks and runs again with the same results.
TEST(Passes, OptimizedModelWithAClassifierHeadLoadsAgain) {
  ensure_loaded();
  check_optimized_model_loads_again(conv_mean_gemm(HeadCase()), "ConvMeanGemm", random_floats({1, 24, 7, 7}, 98));
}

// The head stays three nodes where the Gemm does more than the fused kernel
// (alpha, weights that are an input), where the Flatten's result is read too
// or flattens at another axis; a ConvMeanGemm written by hand with weights of
// the wrong shape, or without the GlobalAveragePool, fails naming them.
TEST(Passes, ClassifierHeadStaysOrFailsWhereTheKernelCannotTakeIt) {
  ensure_loaded();
  const Tensor x = random_floats({1, 24, 7, 7}, 99);
  ModelBuilder scaled = conv_mean_gemm(HeadCase());
  add_float(scaled.last(), "alpha", 0.5f);
  ModelBuilder read = conv_mean_gemm(HeadCase());
  read.output("flat", SINGA_ONNX_FLOAT, {1, 70});
  ModelBuilder axis0 = conv_mean_gemm(HeadCase());
  add_int(axis0.model.mutable_graph()->mutable_node(3), "axis", 0);
  ModelBuilder fed = conv_mean_gemm(HeadCase());
  fed.input("wfc_in", SINGA_ONNX_FLOAT, {37, 70});
  fed.last()->set_input(1, "wfc_in");
  for (ModelBuilder* m : {&scaled, &read, &axis0}) {
    EXPECT_EQ(plugin_count(stats_of(*m), "cpu.conv_mean_gemms"), 0);
    check_same(*m, {x}, 1e-5);
  }
  EXPECT_EQ(plugin_count(stats_of(fed), "cpu.conv_mean_gemms"), 0);

  for (const std::string bad : {"shape", "no mean"}) {
    SCOPED_TRACE(bad);
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa.cpu");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {1, 24, 7, 7}).initializer("w", random_floats({70, 24, 1, 1}, 72));
    m.initializer("wfc", random_floats(bad == "shape" ? singa::Shape{37, 69} : singa::Shape{37, 70}, 74));
    m.node("ConvMeanGemm", {"x", "w", "", "wfc"}, {"y"}, "head");
    m.last()->set_domain("ai.singa.cpu");
    if (bad != "no mean") add_int(m.last(), "global_average_pool", 1);
    add_int(m.last(), "transB", 1);
    m.output("y", SINGA_ONNX_FLOAT, {1, 37});
    try {
      auto rep = singa::onnx::prepare_bytes(m.bytes());
      rep->run({x});
      ADD_FAILURE() << "no error";
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("head"), std::string::npos) << msg;
      EXPECT_NE(msg.find(bad == "shape" ? "Wfc" : "global_average_pool"), std::string::npos) << msg;
    }
  }
}

namespace {

struct ResidualCase {
  int64_t N = 1, C = 16, M = 16, H = 12, W = 12;
  int64_t K = 3;      // the second Conv's window (pads K / 2)
  int64_t S = 1;      // the first Conv's stride; the shortcut is x itself when 1 and C == M
  bool shortcut_conv = false;  // a 1x1 Conv of stride S as the shortcut (ResNet's downsampling)
  bool conv_first = true;      // Add(conv, shortcut), else Add(shortcut, conv)
  std::string act = "Relu";    // after the Add; "" none
};

// x -> Conv 3x3 stride S pads 1 -> Relu -> Conv KxK -> Add(shortcut) [-> act] -> y:
// a ResNet basic block.
ModelBuilder residual_block(const ResidualCase& c) {
  ModelBuilder m(13);
  const int64_t OH = (c.H - 1) / c.S + 1, OW = (c.W - 1) / c.S + 1;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("w1", random_floats({c.M, c.C, 3, 3}, 110, -0.3f, 0.3f))
      .initializer("b1", random_floats({c.M}, 111))
      .initializer("w2", random_floats({c.M, c.M, c.K, c.K}, 112, -0.3f, 0.3f))
      .initializer("b2", random_floats({c.M}, 113))
      .initializer("lo", f32_tensor({}, {-0.5f}))
      .initializer("hi", f32_tensor({}, {1.5f}));
  m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  add_ints(m.last(), "strides", {c.S, c.S});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2");
  add_ints(m.last(), "pads", std::vector<int64_t>(4, c.K / 2));
  std::string shortcut = "x";
  if (c.shortcut_conv) {
    m.initializer("wd", random_floats({c.M, c.C, 1, 1}, 114)).node("Conv", {"x", "wd"}, {"down"}, "down");
    add_ints(m.last(), "strides", {c.S, c.S});
    shortcut = "down";
  }
  const std::string sum = c.act.empty() ? "y" : "sum";
  m.node("Add", c.conv_first ? std::vector<std::string>{"c2", shortcut} : std::vector<std::string>{shortcut, "c2"},
         {sum}, "add");
  if (c.act == "Clip")
    m.node("Clip", {sum, "lo", "hi"}, {"y"}, "act");
  else if (!c.act.empty())
    m.node(c.act, {sum}, {"y"}, "act");
  m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, OH, OW});
  return m;
}

}  // namespace

// The residual Add (and the activation after it) runs inside the second Conv,
// against the unfused graph at 1 to 3 threads: oneDNN parts that unblock 16
// channels with the sum (bands of rows, channel slices, whole), parts that
// do not (channels not a multiple of 16), and the 1x1 paths (a pass over the
// output), every activation kind, either Add operand order.
TEST(Passes, ResidualAddRunsInsideTheConv) {
  ensure_loaded();
  std::vector<ResidualCase> cases;
  ResidualCase c;
  c.W = 37;
  cases.push_back(c);  // identity shortcut, Winograd; rows of two whole 16-column blocks and a tail
  c.W = 12;
  c.S = 2, c.M = 32, c.shortcut_conv = true, c.act = "LeakyRelu", c.conv_first = false;
  cases.push_back(c);  // downsampling block: the 3x3 Conv takes the sum, not the 1x1 shortcut
  c = ResidualCase();
  c.C = c.M = 64, c.H = c.W = 3, c.act = "Clip";
  cases.push_back(c);  // weight-heavy: channel slices at 2 and 3 threads
  c = ResidualCase();
  c.C = c.M = 12, c.K = 5, c.act = "";
  cases.push_back(c);  // no 16-channel blocks: a pass over each part's rows
  c = ResidualCase();
  c.C = c.M = 24, c.K = 1, c.N = 2;
  cases.push_back(c);  // a 1x1 second Conv: the pointwise path, then the sum
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ResidualCase& rc = cases[i];
    ModelBuilder m = residual_block(rc);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      auto ops = check_same(m, {random_floats({rc.N, rc.C, rc.H, rc.W}, 120 + unsigned(i))}, 1e-4, o);
      // The shortcut writes its output (Z) in 16-channel blocks, as a FusedConv.
      const std::vector<std::string> want = rc.shortcut_conv ? std::vector<std::string>{"FusedConv", "FusedConv", "ConvAdd"}
                                                             : std::vector<std::string>{"FusedConv", "ConvAdd"};
      EXPECT_EQ(ops, want);
    }
    const ::onnx::ModelProto optimized = singa::onnx::optimized_model(m.model, {});
    for (const auto& n : optimized.graph().node())
      if (n.op_type() == "ConvAdd") {
        EXPECT_EQ(n.name(), "conv2");  // not the 1x1 shortcut
      }
    const auto st = stats_of(m);
    // The ConvAdd, and the activation after the sum that it takes in.
    EXPECT_EQ(plugin_count(st, "cpu.conv_adds"), rc.act.empty() ? 1 : 2);
    EXPECT_EQ(plugin_count(st, "cpu.conv_activations"), 1);
  }
}

// The Add stays when the Conv's output is also read, when the other operand
// broadcasts, or when an activation sits between the Conv and the Add.
TEST(Passes, ResidualAddStaysWhereTheConvCannotTakeIt) {
  ensure_loaded();
  ResidualCase c;
  ModelBuilder read = residual_block(c);
  read.output("c2", SINGA_ONNX_FLOAT, {1, 16, 12, 12});
  auto ops = check_same(read, {random_floats({1, 16, 12, 12}, 130)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "FusedConv", "Add", "Relu"}));
  EXPECT_EQ(plugin_count(stats_of(read), "cpu.conv_adds"), 0);

  ModelBuilder bcast = residual_block(c);
  for (auto& n : *bcast.model.mutable_graph()->mutable_node())
    if (n.name() == "add") n.set_input(1, "b2row");
  bcast.initializer("b2row", random_floats({1, 16, 1, 1}, 131));
  ops = check_same(bcast, {random_floats({1, 16, 12, 12}, 132)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "FusedConv", "Add", "Relu"}));

  ModelBuilder relu_first = residual_block(c);
  auto* nodes = relu_first.model.mutable_graph()->mutable_node();
  int at = 0;
  while (nodes->Get(at).name() != "conv2") ++at;
  nodes->Mutable(at)->set_output(0, "c2pre");
  relu_first.node("Relu", {"c2pre"}, {"c2"}, "relu2");
  for (int k = nodes->size() - 1; k > at + 1; --k) nodes->SwapElements(k, k - 1);  // right after conv2
  ops = check_same(relu_first, {random_floats({1, 16, 12, 12}, 133)});
  EXPECT_EQ(ops, (std::vector<std::string>{"FusedConv", "FusedConv", "Add", "Relu"}));
  EXPECT_EQ(plugin_count(stats_of(relu_first), "cpu.conv_adds"), 0);
}

namespace {

struct BlockedCase {
  int64_t N = 1, H = 20, W = 20;
  int64_t M1 = 16, M2 = 32;  // channels of the first and the second residual block
  int64_t stem = 16;         // the stem's channels (3 in): 32 or 64 take conv_thin_f32
  int64_t batch = 1;         // the input's declared batch; -1 symbolic
};

// A small ResNet stage: x [N, 3, H, W] -> Conv 3x3 (stem) -> Relu -> MaxPool
// 2x2/2 -> identity block (M1) -> downsampling block (stride 2, 1x1 Conv
// shortcut, M2) -> GlobalAveragePool -> y. Between the stem and the last
// block every value is a Conv's and only Convs read it.
ModelBuilder blocked_stage(const BlockedCase& c) {
  ModelBuilder m(13);
  const std::vector<std::string> sym = c.batch < 0 ? std::vector<std::string>{"N"} : std::vector<std::string>{};
  m.input("x", SINGA_ONNX_FLOAT, {c.batch, 3, c.H, c.W}, sym);
  unsigned seed = 300;
  auto conv = [&](const std::string& in, const std::string& out, int64_t C, int64_t M, int64_t k, int64_t s) {
    const std::string w = out + "_w", b = out + "_b";
    seed += 2;
    m.initializer(w, random_floats({M, C, k, k}, seed, -0.3f, 0.3f)).initializer(b, random_floats({M}, seed + 1));
    m.node("Conv", {in, w, b}, {out}, out);
    add_ints(m.last(), "pads", std::vector<int64_t>(4, k / 2));
    add_ints(m.last(), "strides", {s, s});
  };
  conv("x", "stem", 3, c.stem, 3, 1);
  m.node("Relu", {"stem"}, {"stem_r"}, "stem_relu");
  m.node("MaxPool", {"stem_r"}, {"pool"}, "pool");
  add_ints(m.last(), "kernel_shape", {2, 2});
  add_ints(m.last(), "strides", {2, 2});
  std::string x = "pool";
  if (c.stem != c.M1) {
    conv(x, "widen", c.stem, c.M1, 1, 1);
    x = "widen";
  }
  conv(x, "a1", c.M1, c.M1, 3, 1);
  m.node("Relu", {"a1"}, {"a1r"}, "a1_relu");
  conv("a1r", "a2", c.M1, c.M1, 3, 1);
  m.node("Add", {"a2", x}, {"asum"}, "a_add");
  m.node("Relu", {"asum"}, {"a"}, "a_relu");
  conv("a", "b1", c.M1, c.M2, 3, 2);
  m.node("Relu", {"b1"}, {"b1r"}, "b1_relu");
  conv("b1r", "b2", c.M2, c.M2, 3, 1);
  conv("a", "down", c.M1, c.M2, 1, 2);
  m.node("Add", {"b2", "down"}, {"bsum"}, "b_add");
  m.node("Relu", {"bsum"}, {"b"}, "b_relu");
  m.node("GlobalAveragePool", {"b"}, {"y"}, "gap");
  m.output("y", SINGA_ONNX_FLOAT, {c.batch, c.M2, 1, 1}, sym);
  return m;
}

// The nodes of the optimised graph whose X or Y is in 16-channel blocks (the
// value layouts optimized_model lists in the metadata), as "name:in",
// "name:out".
std::vector<std::string> blocked_sides(const ModelBuilder& m) {
  std::vector<std::string> sides;
  const ::onnx::ModelProto optimized = singa::onnx::optimized_model(m.model, {});
  std::set<std::string> blocked;
  for (const auto& p : optimized.metadata_props())
    if (p.key().rfind("singa.layout:", 0) == 0 && p.value() == "ai.singa.cpu.nChw16c") blocked.insert(p.key().substr(13));
  for (const auto& n : optimized.graph().node()) {
    if (n.input_size() > 0 && blocked.count(n.input(0))) sides.push_back(n.name() + ":in");
    if (n.output_size() > 0 && blocked.count(n.output(0))) sides.push_back(n.name() + ":out");
  }
  return sides;
}

}  // namespace

// Values between Convs stay in 16-channel blocks: which sides the pass marks
// on a ResNet stage, and the stage's result against the unoptimised graph at
// 1 to 3 threads for oneDNN's bands (copied rows), channel slices (in place),
// whole convs, reorders into its channels-last code (the stride-2 convs),
// pooled stems (oneDNN's and conv_thin_f32's) and a 1x1 widening Conv.
TEST(Passes, ConvsPassBlockedActivationsToConvs) {
  ensure_loaded();
  BlockedCase c;
  ModelBuilder m = blocked_stage(c);
  // The Relus, the MaxPool and the Adds fold into the Convs. The last
  // block's output goes to the GlobalAveragePool in NCHW; its shortcut stays
  // in blocks, which the ConvAdd b2 adds before its output leaves them.
  EXPECT_EQ(blocked_sides(m), (std::vector<std::string>{"stem:out", "a1:in", "a1:out", "a2:in", "a2:out", "b1:in",
                                                        "b1:out", "down:in", "down:out", "b2:in"}));
  EXPECT_EQ(plugin_count(stats_of(m), "cpu.blocked_layout"), 5);
  std::vector<BlockedCase> cases;
  cases.push_back(c);
  c.stem = 32, c.M1 = 32, c.M2 = 64;  // thin stem with the pool fused
  cases.push_back(c);
  c = BlockedCase();
  c.stem = 16, c.M1 = 64, c.M2 = 128, c.H = c.W = 10;  // weight-heavy: channel slices
  cases.push_back(c);
  c = BlockedCase();
  // A 1x1 widening Conv on a plane of 6x7 (below 64 pixels it reads blocks),
  // two images, odd sizes.
  c.stem = 64, c.M1 = 32, c.N = c.batch = 2, c.H = 13, c.W = 15;
  cases.push_back(c);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const BlockedCase& bc = cases[i];
    ModelBuilder s = blocked_stage(bc);
    EXPECT_GE(plugin_count(stats_of(s), "cpu.blocked_layout"), 4);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      check_same(s, {random_floats({bc.N, 3, bc.H, bc.W}, 310 + unsigned(i))}, 2e-4, o);
    }
  }
}

// With a symbolic batch oneDNN's plans are made for the first run's shape;
// another batch takes the NCHW paths, with the blocked inputs and outputs
// converted around them, and computes the same.
TEST(Passes, BlockedConvsRunOtherBatchSizesThroughNchw) {
  ensure_loaded();
  BlockedCase c;
  c.batch = -1;
  ModelBuilder m = blocked_stage(c);
  singa::onnx::PrepareOptions o;
  o.threads = 2;
  auto plain = singa::onnx::prepare_bytes(m.bytes(), [&] {
    auto p = o;
    p.optimize = false;
    return p;
  }());
  auto fast = singa::onnx::prepare_bytes(m.bytes(), o);
  for (int64_t n : {1, 3, 1}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    expect_same_output(*plain, *fast, random_floats({n, 3, c.H, c.W}, 320 + unsigned(n)), 2e-4);
  }
}

// No blocks where another op reads the value, where it is a graph output,
// for a grouped Conv, for channels that are no multiple of 16, into a 1x1
// Conv on a plane of 64 pixels or more, or out of a 1x1 Conv that reads NCHW;
// Option pass.cpu.blocked_layout=0 turns the pass off.
TEST(Passes, BlockedLayoutStaysOffWhereAReaderNeedsNchw) {
  ensure_loaded();
  BlockedCase c;
  ModelBuilder read = blocked_stage(c);
  read.output("a1", SINGA_ONNX_FLOAT, {1, 16, 10, 10});
  auto sides = blocked_sides(read);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a1:out"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a2:in"), 0);
  check_same(read, {random_floats({1, 3, 20, 20}, 330)});

  c.stem = c.M1 = 24, c.M2 = 40;
  EXPECT_TRUE(blocked_sides(blocked_stage(c)).empty());

  ModelBuilder grouped = blocked_stage(BlockedCase());
  for (auto& n : *grouped.model.mutable_graph()->mutable_node())
    if (n.name() == "a2") add_int(&n, "group", 2);
  grouped.initializer("a2_w", random_floats({16, 8, 3, 3}, 331, -0.3f, 0.3f));
  auto* inits = grouped.model.mutable_graph()->mutable_initializer();
  for (int i = 0; i < inits->size(); ++i)
    if (inits->Get(i).name() == "a2_w") {
      inits->DeleteSubrange(i, 1);  // the first, 16x16x3x3, made by blocked_stage
      break;
    }
  sides = blocked_sides(grouped);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a2:in"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a1:out"), 0);
  check_same(grouped, {random_floats({1, 3, 20, 20}, 332)});

  c = BlockedCase();
  c.stem = 64, c.M1 = 32;
  ModelBuilder widen = blocked_stage(c);
  widen.output("pool", SINGA_ONNX_FLOAT, {1, 64, 10, 10});  // widen reads the pooled stem in NCHW
  sides = blocked_sides(widen);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "widen:out"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a1:in"), 0);

  // On a plane of 64 pixels and more, a stride-1 1x1 Conv whose output is
  // NCHW (here a graph output) reads NCHW (its direct kernel,
  // pointwise_direct_f32.hpp), so the pooled stem writes NCHW too; the 3x3
  // Convs after it still pass blocks. From blocks to blocks it reads blocks.
  c = BlockedCase();
  c.stem = 64, c.M1 = 32;
  ModelBuilder pointwise = blocked_stage(c);
  pointwise.output("widen", SINGA_ONNX_FLOAT, {1, 32, 10, 10});
  sides = blocked_sides(pointwise);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "stem:out"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "widen:in"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "widen:out"), 0);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "a1:out"), 1);
  check_same(pointwise, {random_floats({1, 3, 20, 20}, 333)});
  ModelBuilder pointwise_blocked = blocked_stage(c);
  sides = blocked_sides(pointwise_blocked);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "stem:out"), 1);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "widen:in"), 1);
  EXPECT_EQ(std::count(sides.begin(), sides.end(), "widen:out"), 1);
  check_same(pointwise_blocked, {random_floats({1, 3, 20, 20}, 334)});

  setenv("SINGA_OPTIONS", "pass.cpu.blocked_layout=0", 1);
  EXPECT_EQ(plugin_count(stats_of(blocked_stage(BlockedCase())), "cpu.blocked_layout"), 0);
  unsetenv("SINGA_OPTIONS");
}

// optimized_model() writes ConvAdd in the ai.singa domain, which loads and
// runs again with the same results.
TEST(Passes, OptimizedModelWithAConvAddLoadsAgain) {
  ensure_loaded();
  // No activation anywhere: ONNX's checker refuses singa's activation
  // attributes on a Conv read from a file (BadFusedNodesFailClearly).
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {1, 16, 12, 12})
      .initializer("w", random_floats({16, 16, 3, 3}, 138, -0.3f, 0.3f))
      .initializer("b", random_floats({16}, 139))
      .node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.node("Add", {"c", "x"}, {"y"}, "add").output("y", SINGA_ONNX_FLOAT, {1, 16, 12, 12});
  check_optimized_model_loads_again(m, "ConvAdd", random_floats({1, 16, 12, 12}, 134));
}

// Q K^T / s (and s * Q K^T, Q K^T * s) -> one MatMul with alpha, against the
// unfused graph; a scalar dividend (s / Q K^T) and a non-scalar operand stay.
TEST(Passes, AScaleAfterAMatMulBecomesItsAlpha) {
  ensure_loaded();
  struct Case {
    std::string op;
    bool scalar_first;
    singa::Shape shape;
    bool fuses;
  };
  const std::vector<Case> cases = {{"Div", false, {}, true},       {"Mul", false, {1}, true}, {"Mul", true, {}, true},
                                   {"Div", true, {}, false},       {"Mul", false, {5}, false}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    ModelBuilder m(13);
    m.input("q", SINGA_ONNX_FLOAT, {2, 3, 4, 8}).input("k", SINGA_ONNX_FLOAT, {2, 3, 8, 5});
    m.initializer("s", Tensor::from_vector(c.shape, SINGA_ONNX_FLOAT, std::vector<float>(c.shape.empty() ? 1 : size_t(c.shape[0]), 2.5f)));
    m.node("MatMul", {"q", "k"}, {"scores"});
    m.node(c.op, c.scalar_first ? std::vector<std::string>{"s", "scores"} : std::vector<std::string>{"scores", "s"},
           {"y"});
    m.output("y", SINGA_ONNX_FLOAT, {2, 3, 4, 5});
    auto ops = check_same(m, {random_floats({2, 3, 4, 8}, 100), random_floats({2, 3, 8, 5}, 101)}, 1e-5);
    const std::vector<std::string> want =
        c.fuses ? std::vector<std::string>{"FusedMatMul"} : std::vector<std::string>{"MatMul", c.op};
    EXPECT_EQ(ops, want);
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.matmul_scales"), c.fuses ? 1 : 0);
  }
}

// Fused nodes written by hand with inconsistent weights or attributes fail
// with one clear error naming the node, and the process goes on.
TEST(Passes, BadFusedNodesFailClearly) {
  ensure_loaded();
  auto expect_error = [](const ModelBuilder& m, const std::vector<Tensor>& in, const std::string& what) {
    try {
      auto rep = singa::onnx::prepare_bytes(m.bytes());
      rep->run(in);
      ADD_FAILURE() << "no error for " << what;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("bad"), std::string::npos) << msg;  // the node's name
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  };
  {  // ExpandDepthwiseProject whose depthwise weights do not match the expand
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa.cpu");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {1, 8, 9, 7})
        .initializer("w1", random_floats({32, 8, 1, 1}, 1))
        .initializer("wd", random_floats({24, 1, 3, 3}, 2))
        .initializer("w2", random_floats({16, 32, 1, 1}, 3))
        .node("ExpandDepthwiseProject", {"x", "w1", "", "wd", "", "w2", ""}, {"y"}, "bad");
    m.last()->set_domain("ai.singa.cpu");
    add_ints(m.last(), "pads", {1, 1, 1, 1});
    m.output("y", SINGA_ONNX_FLOAT, {1, 16, 9, 7});
    expect_error(m, {random_floats({1, 8, 9, 7}, 4)}, "Wd must be");
  }
  // ExpandDepthwiseProject with a stem stage: its window leaves no output, its
  // weights read other channels than X has, a stem without W1.
  for (int i = 0; i < 3; ++i) {
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa.cpu");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {1, 3, 4, 4})
        .initializer("w1", random_floats({32, i == 1 ? 4 : 3, i == 0 ? 7 : 3, 3}, 1))
        .initializer("wd", random_floats({i == 2 ? 3 : 32, 1, 3, 3}, 2))
        .initializer("w2", random_floats({16, i == 2 ? 3 : 32, 1, 1}, 3))
        .node("ExpandDepthwiseProject", {"x", i == 2 ? "" : "w1", "", "wd", "", "w2", ""}, {"y"}, "bad");
    m.last()->set_domain("ai.singa.cpu");
    add_ints(m.last(), "pads", {1, 1, 1, 1});
    add_int(m.last(), "expand_window", 1);
    add_ints(m.last(), "expand_strides", {2, 2});
    m.output("y", SINGA_ONNX_FLOAT, {1, 16, 2, 2});
    const char* what[] = {"window of", "W1 must be [Me, 3, KH, KW]", "expand_window is given without W1"};
    SCOPED_TRACE(what[i]);
    expect_error(m, {random_floats({1, 3, 4, 4}, 4)}, what[i]);
  }
  {  // ConvAdd whose summand does not have the output's shape
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa.cpu");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {1, 4, 5, 5})
        .input("z", SINGA_ONNX_FLOAT, {1, 4, 5, 4})
        .initializer("w", random_floats({4, 4, 1, 1}, 5))
        .node("ConvAdd", {"x", "w", "", "z"}, {"y"}, "bad");
    m.last()->set_domain("ai.singa.cpu");
    m.output("y", SINGA_ONNX_FLOAT, {1, 4, 5, 5});
    expect_error(m, {random_floats({1, 4, 5, 5}, 6), random_floats({1, 4, 5, 4}, 7)}, "Z of shape [1,4,5,4]");
  }
  // (Blocks are a value's layout, which only a graph pass sets: a model file
  // cannot hand a ConvAdd blocks. tests/unit/test_layouts.cpp checks that no
  // kernel gets a layout it did not declare.)
  {  // singa's own Conv attributes in a model file: ONNX's checker refuses them, naming the node
    ModelBuilder m(13);
    m.input("x", SINGA_ONNX_FLOAT, {1, 3, 9, 9})
        .initializer("w", random_floats({16, 3, 3, 3}, 5))
        .node("Conv", {"x", "w"}, {"y"}, "bad");
    add_ints(m.last(), "pool_kernel_shape", {2, 2, 2});
    m.output("y", SINGA_ONNX_FLOAT, {1, 16, 7, 7});
    expect_error(m, {random_floats({1, 3, 9, 9}, 6)}, "pool_kernel_shape");
  }
  // The runtime still works after them.
  Block b;
  check_same(inverted_residual(b), {random_floats({1, 8, 9, 7}, 7)});
}

// A MatMul with a constant B and A's shape known at prepare runs through
// oneDNN's matmul primitive (plugins/ops_math/matmul_dnnl.cpp), bias row and
// scale included: against a double-precision loop at 1 to 3 threads.
TEST(Passes, PlannedMatMulMatchesAPlainLoop) {
  ensure_loaded();
  const int64_t B = 3, M = 7, K = 40, N = 50;
  const Tensor b = random_floats({K, N}, 110), bias = random_floats({N}, 111), a = random_floats({B, M, K}, 112);
  for (int variant = 0; variant < 3; ++variant) {  // plain, + bias row, / scalar
    SCOPED_TRACE("variant " + std::to_string(variant));
    ModelBuilder m(13);
    m.input("a", SINGA_ONNX_FLOAT, {B, M, K}).initializer("b", b).node("MatMul", {"a", "b"}, {"p"});
    if (variant == 1) m.initializer("bias", bias).node("Add", {"p", "bias"}, {"y"});
    if (variant == 2) m.initializer("s", f32_tensor({}, {4.f})).node("Div", {"p", "s"}, {"y"});
    if (variant == 0) m.node("Identity", {"p"}, {"y"});
    m.output("y", SINGA_ONNX_FLOAT, {B, M, N});
    for (int threads : {1, 2, 3}) {
      auto out = prepare_at(m, threads)->run({a});
      const float* y = out[0].second.data<float>();
      for (int64_t r = 0; r < B * M; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0;
          for (int64_t k = 0; k < K; ++k) want += double(a.data<float>()[r * K + k]) * b.data<float>()[k * N + n];
          if (variant == 1) want += bias.data<float>()[n];
          if (variant == 2) want /= 4;
          ASSERT_NEAR(y[r * N + n], want, 1e-4) << "threads " << threads << " row " << r << " col " << n;
        }
    }
  }
}

// A product of 1 to 8 rows by a constant B runs through the column-split
// kernel (plugins/ops_math/matmul_rows.cpp): MatMul, FusedMatMul with a
// transposed B, bias row, Gelu and residual or with a scale, Gemm with
// transB and a scaled bias row or with a scale alone; 9 and 16 rows take
// oneDNN's matmul primitive (B packed once, Gemm's transB included). Against a
// double-precision loop at 1 to 3 threads, and with cpu.matmul_rows=0.
// B is 600 x 200: four panels of 64 columns, the last part-filled, so the
// panels split over the threads.
TEST(Passes, FewRowProductsMatchAPlainLoop) {
  ensure_loaded();
  const int64_t K = 600, N = 200;
  const Tensor b = random_floats({K, N}, 130), bt = random_floats({N, K}, 131), bias = random_floats({N}, 132);
  const std::vector<std::vector<int64_t>> a_shapes{{1, K}, {1, 1, K}, {2, 3, K}, {5, K}, {8, K}, {9, K}, {16, K}};
  for (const auto& as : a_shapes) {
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < as.size(); ++d) rows *= as[d];
    std::vector<int64_t> ys(as);
    ys.back() = N;
    const Tensor a = random_floats(as, 133), z = random_floats(ys, 134);
    // MatMul, FusedMatMul + Gelu + residual, scaled FusedMatMul, Gemm + bias, scaled Gemm
    for (int variant = 0; variant < 5; ++variant) {
      if (variant >= 3 && as.size() != 2) continue;
      SCOPED_TRACE("rows " + std::to_string(rows) + " rank " + std::to_string(as.size()) + " variant " +
                   std::to_string(variant));
      ModelBuilder m(13);
      auto* op = m.model.add_opset_import();
      op->set_domain("ai.singa.cpu");
      op->set_version(1);
      m.input("a", SINGA_ONNX_FLOAT, as);
      std::vector<Tensor> inputs{a};
      const bool transposed = variant == 1 || variant == 3;
      m.initializer("b", transposed ? bt : b).initializer("bias", bias);
      if (variant == 0) m.node("MatMul", {"a", "b"}, {"y"});
      if (variant == 1) {
        m.input("z", SINGA_ONNX_FLOAT, ys);
        inputs.push_back(z);
        m.node("FusedMatMul", {"a", "b", "bias", "z"}, {"y"});
        auto* act = m.last()->add_attribute();
        act->set_name("activation");
        act->set_type(::onnx::AttributeProto::STRING);
        act->set_s("Gelu");
      }
      if (variant == 2) m.node("FusedMatMul", {"a", "b"}, {"y"}), add_float(m.last(), "alpha", 0.25f);
      if (variant == 1 || variant == 2) m.last()->set_domain("ai.singa.cpu");
      if (variant == 1) add_int(m.last(), "transB", 1);
      if (variant == 3) {
        m.node("Gemm", {"a", "b", "bias"}, {"y"});
        add_int(m.last(), "transB", 1);
        add_float(m.last(), "beta", 2.f);
      }
      if (variant == 4) m.node("Gemm", {"a", "b"}, {"y"}), add_float(m.last(), "alpha", 0.5f);
      m.output("y", SINGA_ONNX_FLOAT, ys);
      for (bool kernel : {true, false})
        for (int threads : {1, 2, 3}) {
          singa::onnx::PrepareOptions o;
          o.threads = threads;
          o.check_model = false;
          o.optimize = false;
          if (!kernel) o.options["cpu.matmul_rows"] = "0";
          auto out = singa::onnx::prepare_bytes(m.bytes(), o)->run(inputs);
          ASSERT_EQ(out.size(), 1u);
          ASSERT_EQ(out[0].second.numel(), rows * N);
          const float* y = out[0].second.data<float>();
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t n = 0; n < N; ++n) {
              double want = 0;
              for (int64_t k = 0; k < K; ++k)
                want += double(a.data<float>()[r * K + k]) *
                        (transposed ? bt.data<float>()[n * K + k] : b.data<float>()[k * N + n]);
              if (variant == 1) {
                want += bias.data<float>()[n];
                want = 0.5 * want * (1 + std::erf(want / std::sqrt(2.0))) + z.data<float>()[r * N + n];
              }
              if (variant == 2) want *= 0.25;
              if (variant == 3) want += 2.0 * bias.data<float>()[n];
              if (variant == 4) want *= 0.5;
              ASSERT_NEAR(y[r * N + n], want, 1e-3)
                  << "threads " << threads << " kernel " << kernel << " row " << r << " col " << n;
            }
        }
    }
  }
}

// Q K^T with K^T a Transpose of the last two axes -> one MatMul reading K
// transposed (transB), against the unfused graph; a Transpose of other axes,
// or one whose result is also read elsewhere, stays.
TEST(Passes, ATransposedBGoesIntoTheMatMul) {
  ensure_loaded();
  struct Case {
    std::vector<int64_t> perm;
    bool also_output, fuses;
  };
  for (const Case& c : std::vector<Case>{{{0, 1, 3, 2}, false, true}, {{1, 0, 3, 2}, false, false},
                                         {{0, 1, 3, 2}, true, false}}) {
    ModelBuilder m(13);
    m.input("q", SINGA_ONNX_FLOAT, {2, 3, 4, 8}).input("k", SINGA_ONNX_FLOAT, {c.perm[0] == 0 ? 2 : 3, 3, 5, 8});
    if (c.perm[0] != 0) {  // k is [3, 2, 5, 8], transposed to [2, 3, 8, 5]
      m.model.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
          1)->set_dim_value(2);
    }
    m.node("Transpose", {"k"}, {"kt"});
    add_ints(m.last(), "perm", c.perm);
    m.node("MatMul", {"q", "kt"}, {"y"});
    m.output("y", SINGA_ONNX_FLOAT, {2, 3, 4, 5});
    if (c.also_output) m.output("kt", SINGA_ONNX_FLOAT, {2, 3, 8, 5});
    const singa::Shape ks = c.perm[0] == 0 ? singa::Shape{2, 3, 5, 8} : singa::Shape{3, 2, 5, 8};
    auto ops = check_same(m, {random_floats({2, 3, 4, 8}, 120), random_floats(ks, 121)}, 1e-5);
    const std::vector<std::string> want =
        c.fuses ? std::vector<std::string>{"FusedMatMul"} : std::vector<std::string>{"Transpose", "MatMul"};
    EXPECT_EQ(ops, want);
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.transposed_b"), c.fuses ? 1 : 0);
  }
}

namespace {

struct AttentionCase {
  int64_t B = 2, Sq = 7, Sk = 7, H = 3, D = 5, E = 8;
  bool packed = true;          // one QKV projection viewed as [B, S, 3, H, D], split; else three, with K^T as a view
  int64_t opset = 13;          // 11: Split's sizes and Squeeze's axes as attributes
  int64_t softmax_axis = -1;   // -2: no attribute (the opset's default)
  bool mask = false;           // an additive mask before the Softmax
  bool scores_read = false;    // the Softmax's output is also a graph output
  bool symbolic = false;       // seq symbolic, so no static shapes
  bool heads_last = false;     // rows hold D groups of H (Reshape [B, S, D, H]), not H heads side by side
};

Tensor ints1(std::vector<int64_t> v) { return i64_tensor({int64_t(v.size())}, v); }

// Multi-head attention as PyTorch exports it: the projections, the head
// views, softmax(Q K^T * s) V, the heads back side by side in [B, Sq, H * D].
ModelBuilder attention_block(const AttentionCase& c) {
  ModelBuilder m(c.opset);
  const int64_t HD = c.H * c.D, S = c.symbolic ? -1 : c.Sq;
  const std::vector<std::string> seq{"", c.symbolic ? "seq" : "", ""};
  m.input("x", SINGA_ONNX_FLOAT, {c.B, S, c.E}, seq);
  const bool cross = c.Sk != c.Sq;
  if (cross) m.input("mem", SINGA_ONNX_FLOAT, {c.B, c.Sk, c.E});
  if (c.mask) m.input("mask", SINGA_ONNX_FLOAT, {c.B, 1, 1, c.Sk});
  m.initializer("scale", f32_tensor({}, {1.f / std::sqrt(float(c.D))}));
  std::string q, kt, v;
  if (c.packed) {
    m.initializer("wqkv", random_floats({c.E, 3 * HD}, 150, -0.5f, 0.5f)).initializer("bqkv", random_floats({3 * HD}, 151));
    m.node("MatMul", {"x", "wqkv"}, {"qkv0"}).node("Add", {"qkv0", "bqkv"}, {"qkv"});
    m.initializer("shape5", ints1({c.B, -1, 3, c.H, c.D})).node("Reshape", {"qkv", "shape5"}, {"qkv5"});
    m.node("Transpose", {"qkv5"}, {"heads"});
    add_ints(m.last(), "perm", {2, 0, 3, 1, 4});
    if (c.opset >= 13) {
      m.initializer("ones", ints1({1, 1, 1})).node("Split", {"heads", "ones"}, {"s0", "s1", "s2"});
      m.initializer("axis0", ints1({0}));
    } else {
      m.node("Split", {"heads"}, {"s0", "s1", "s2"});
      add_ints(m.last(), "split", {1, 1, 1});
    }
    add_int(m.last(), "axis", 0);
    for (const char* s : {"0", "1", "2"}) {
      m.node("Squeeze", c.opset >= 13 ? std::vector<std::string>{std::string("s") + s, "axis0"}
                                      : std::vector<std::string>{std::string("s") + s},
             {std::string("h") + s});
      if (c.opset < 13) add_ints(m.last(), "axes", {0});
    }
    m.node("Transpose", {"h1"}, {"kt"});
    add_ints(m.last(), "perm", {0, 1, 3, 2});
    q = "h0", kt = "kt", v = "h2";
  } else {
    auto project = [&](const std::string& name, const std::string& from, int64_t len, std::vector<int64_t> perm,
                       unsigned seed) {
      m.initializer("w" + name, random_floats({c.E, HD}, seed, -0.5f, 0.5f));
      m.node("MatMul", {from, "w" + name}, {name + "0"});
      const std::vector<int64_t> split = c.heads_last ? std::vector<int64_t>{c.B, len, c.D, c.H}
                                                      : std::vector<int64_t>{c.B, len, c.H, c.D};
      m.initializer("shape_" + name, ints1(split)).node("Reshape", {name + "0", "shape_" + name}, {name + "4"});
      if (c.heads_last)  // [B, S, D, H] -> [B, H, S, D] (or K^T's [B, H, D, S])
        perm = perm[3] == 3 ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{0, 3, 2, 1};
      m.node("Transpose", {name + "4"}, {name});
      add_ints(m.last(), "perm", perm);
    };
    project("q", "x", S, {0, 2, 1, 3}, 152);
    project("kt", cross ? "mem" : "x", c.Sk, {0, 2, 3, 1}, 153);  // K^T directly, not a Transpose of K
    project("v", cross ? "mem" : "x", c.Sk, {0, 2, 1, 3}, 154);
    q = "q", kt = "kt", v = "v";
  }
  m.node("MatMul", {q, kt}, {"qk"});
  m.node(c.packed ? "Mul" : "Div", {"qk", "scale"}, {"scores"});
  if (!c.packed) m.model.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string("\x00\x00\x80\x40", 4));  // 4
  std::string logits = "scores";
  if (c.mask) m.node("Add", {"scores", "mask"}, {"masked"}), logits = "masked";
  m.node("Softmax", {logits}, {"p"});
  if (c.softmax_axis != -2) add_int(m.last(), "axis", c.softmax_axis);
  m.node("MatMul", {"p", v}, {"ctx"}).node("Transpose", {"ctx"}, {"ctx_t"});
  add_ints(m.last(), "perm", {0, 2, 1, 3});
  m.initializer("shape3", ints1({c.B, -1, HD})).node("Reshape", {"ctx_t", "shape3"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {c.B, S, HD}, seq);
  if (c.scores_read) m.output("p", SINGA_ONNX_FLOAT, {c.B, c.H, c.Sq, c.Sk});
  return m;
}

std::vector<Tensor> attention_inputs(const AttentionCase& c, unsigned seed) {
  std::vector<Tensor> in{random_floats({c.B, c.Sq, c.E}, seed, -2.f, 2.f)};
  if (c.Sk != c.Sq) in.push_back(random_floats({c.B, c.Sk, c.E}, seed + 1, -2.f, 2.f));
  if (c.mask) in.push_back(random_floats({c.B, 1, 1, c.Sk}, seed + 2, -3.f, 0.f));
  return in;
}

bool has_op(const std::vector<std::string>& ops, const char* op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); }

}  // namespace

// softmax(Q K^T s) V over head views becomes one Attention node that reads
// the heads in place, against the unfused graph at 1 to 3 threads: a packed
// QKV projection (opset 13 and 11 spellings), three projections with K^T as
// a view, cross attention (Sq != Sk), one head split into row blocks, a
// score matrix past the per-task buffer, key counts with and without a
// partial vector.
TEST(Passes, AttentionBecomesOneNode) {
  ensure_loaded();
  std::vector<AttentionCase> cases;
  AttentionCase c;
  cases.push_back(c);
  c.opset = 11, c.softmax_axis = 3;
  cases.push_back(c);
  c = AttentionCase();
  c.packed = false, c.Sk = 12, c.B = 1, c.H = 2, c.D = 16, c.E = 20;
  cases.push_back(c);
  c = AttentionCase();
  c.packed = false, c.B = 1, c.H = 1, c.D = 8, c.Sq = c.Sk = 70;
  cases.push_back(c);  // one head: its rows in blocks over the threads
  c = AttentionCase();
  c.packed = false, c.B = 1, c.H = 1, c.D = 4, c.E = 4, c.Sq = 20, c.Sk = 3300;
  cases.push_back(c);  // 20 x 3300 scores: blocks of at most 19 rows
  c = AttentionCase();
  c.B = 1, c.H = 2, c.D = 16, c.E = 12, c.Sq = c.Sk = 32;
  cases.push_back(c);  // rows of whole 16-lane vectors, no tail
  c = AttentionCase();
  c.mask = true;
  cases.push_back(c);  // an additive mask [B, 1, 1, Sk] (more forms: test_attention_masked.cpp)
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ModelBuilder m = attention_block(cases[i]);
    for (int threads : {1, 2, 3}) {
      singa::onnx::PrepareOptions o;
      o.threads = threads;
      const auto ops = check_same(m, attention_inputs(cases[i], 160 + unsigned(i)), 1e-5, o);
      EXPECT_TRUE(has_op(ops, "Attention"));
      for (const char* gone : {"Softmax", "Transpose", "Split", "Squeeze", "Reshape"}) EXPECT_FALSE(has_op(ops, gone)) << gone;
    }
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.attention"), 1);
  }
}

// The pattern stays where the node could not compute it: the Softmax over
// another axis (opset 11's default flattens from
// axis 1), the probabilities also read, heads not side by side in the rows,
// shapes not known at prepare (packed or not).
TEST(Passes, AttentionStaysWhereTheNodeCannotTakeIt) {
  ensure_loaded();
  std::vector<AttentionCase> cases(6);
  cases[0].packed = false, cases[0].symbolic = true;
  cases[1].softmax_axis = 2;
  cases[2].opset = 11, cases[2].softmax_axis = -2;
  cases[3].scores_read = true;
  cases[4].packed = false, cases[4].heads_last = true;
  cases[5].symbolic = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ModelBuilder m = attention_block(cases[i]);
    const auto ops = check_same(m, attention_inputs(cases[i], 170 + unsigned(i)), 1e-5);
    EXPECT_FALSE(has_op(ops, "Attention"));
    EXPECT_TRUE(has_op(ops, "Softmax"));
    EXPECT_EQ(plugin_count(stats_of(m), "cpu.attention"), 0);
  }
}

// optimized_model() writes the Attention node in the ai.singa domain; the
// model loads and runs again with the same results. (Projections without a
// bias: ONNX's checker refuses the CPU MatMul's bias input in a file.)
TEST(Passes, OptimizedModelWithAttentionLoadsAgain) {
  ensure_loaded();
  AttentionCase c;
  c.packed = false;
  check_optimized_model_loads_again(attention_block(c), "Attention", attention_inputs(c, 180)[0]);
}

// An Attention node written by hand whose heads do not fit its inputs'
// rows, or whose K and V disagree, fails naming the node; the process goes on.
TEST(Passes, BadAttentionNodesFailClearly) {
  ensure_loaded();
  struct Case {
    int64_t heads, head_size, v_offset, v_rows;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{{2, 4, 0, 5, "Q [1,3,6] has no columns 0..8 for 2 heads of 4"},
                                         {2, 3, 4, 5, "V [1,5,8] has no columns 4..10"},
                                         {2, 3, 0, 4, "must be [1, Sk, W] alike"},
                                         {0, 3, 0, 5, "num_heads and head_size must be positive"}}) {
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.singa");
    op->set_version(1);
    m.input("q", SINGA_ONNX_FLOAT, {1, 3, 6}).input("k", SINGA_ONNX_FLOAT, {1, 5, 6});
    m.input("v", SINGA_ONNX_FLOAT, {1, c.v_rows, 8});
    m.node("Attention", {"q", "k", "v"}, {"y"}, "bad");
    m.last()->set_domain("ai.singa");
    add_int(m.last(), "num_heads", c.heads);
    add_int(m.last(), "head_size", c.head_size);
    add_int(m.last(), "v_offset", c.v_offset);
    m.output("y", SINGA_ONNX_FLOAT, {-1, -1, -1}, {"b", "s", "w"});
    try {
      singa::onnx::prepare_bytes(m.bytes())->run(
          {random_floats({1, 3, 6}, 1), random_floats({1, 5, 6}, 2), random_floats({1, c.v_rows, 8}, 3)});
      ADD_FAILURE() << "no error for " << c.error;
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("bad"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.error), std::string::npos) << msg;
    }
  }
  AttentionCase ok;
  check_same(attention_block(ok), attention_inputs(ok, 190), 1e-5);
}

namespace {

// The CPU pack's graph passes (plugins/ops_nn/passes, plugins/ops_math/passes).
const char* const kCpuPasses[] = {"cpu.conv_activations", "cpu.inverted_residuals", "cpu.conv_pools",
                                  "cpu.conv_means",       "cpu.conv_mean_gemms",    "cpu.conv_adds",
                                  "cpu.blocked_layout",   "cpu.channels_last",      "cpu.gemm_activations",
                                  "cpu.matmul_bias_rows", "cpu.matmul_scales",      "cpu.transposed_b",
                                  "cpu.attention",        "cpu.matmul_epilogues"};

// A BERT-like encoder layer on one input x [2, 7, 8]: the packed-QKV
// attention block (a bias row, the scale, K^T, the attention), the output
// projection with its bias and the residual x, then the feed-forward
// projection with its bias, GELU written out, the second projection and
// the second residual.
ModelBuilder bert_layer() {
  AttentionCase c;
  ModelBuilder m = attention_block(c);
  m.model.mutable_graph()->clear_output();
  const int64_t HD = c.H * c.D, F = 16;
  auto project = [&](const std::string& in, const std::string& out, int64_t k, int64_t n, unsigned seed) {
    m.initializer("w_" + out, random_floats({k, n}, seed, -0.5f, 0.5f)).initializer("b_" + out, random_floats({n}, seed + 1));
    m.node("MatMul", {in, "w_" + out}, {out + "0"}).node("Add", {out + "0", "b_" + out}, {out});
  };
  project("y", "o", HD, c.E, 220);
  m.node("Add", {"o", "x"}, {"r1"});
  project("r1", "f", c.E, F, 222);
  m.initializer("g_sqrt2", f32_tensor({}, {std::sqrt(2.f)})).initializer("g_one", f32_tensor({}, {1.f}));
  m.initializer("g_half", f32_tensor({}, {0.5f}));
  m.node("Div", {"f", "g_sqrt2"}, {"g_t"}).node("Erf", {"g_t"}, {"g_e"}).node("Add", {"g_e", "g_one"}, {"g_a"});
  m.node("Mul", {"f", "g_a"}, {"g_p"}).node("Mul", {"g_p", "g_half"}, {"g"});
  project("g", "f2", F, c.E, 224);
  m.node("Add", {"f2", "r1"}, {"out"});
  m.output("out", SINGA_ONNX_FLOAT, {c.B, c.Sq, c.E});
  return m;
}

// Attributes only the CPU pack's fused ops carry.
bool private_attribute(const std::string& name) {
  for (const char* p : {"activation", "expand_activation", "depthwise_activation", "project_activation", "pool_",
                        "global_average_pool", "blocked_", "channels_last_"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

// The models each CPU pass fires on, with an input.
std::vector<std::pair<ModelBuilder, Tensor>> cpu_pass_models() {
  std::vector<std::pair<ModelBuilder, Tensor>> out;
  out.emplace_back(conv_bn("Relu", 2), random_floats({2, 3, 9, 9}, 200));
  out.emplace_back(conv_pool(PoolCase()), random_floats({1, 3, 23, 20}, 201));
  out.emplace_back(conv_mean_gemm(HeadCase()), random_floats({1, 24, 7, 7}, 202));
  ResidualCase rc;
  rc.shortcut_conv = true, rc.S = 2, rc.M = 32;
  out.emplace_back(residual_block(rc), random_floats({1, 16, 12, 12}, 203));
  out.emplace_back(blocked_stage(BlockedCase()), random_floats({1, 3, 20, 20}, 204));
  Block b;
  b.skip = 1, b.M = 8;
  out.emplace_back(inverted_residual(b), random_floats({1, 8, 9, 7}, 205));
  Block s;
  s.expand = false, s.C = 3, s.stem_k = 3, s.stem_s = 2, s.H = 20, s.W = 18;
  out.emplace_back(inverted_residual(s), random_floats({1, 3, 20, 18}, 206));
  out.emplace_back(bert_layer(), random_floats({2, 7, 8}, 207, -2.f, 2.f));
  {  // two inverted residual blocks: channels-last between them
    ModelBuilder m(13);
    m.input("x", SINGA_ONNX_FLOAT, {1, 24, 6, 6});
    m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {6.f}));
    Block b;
    b.C = b.M = 24, b.Me = 48, b.H = b.W = 6, b.project_act = "Relu";  // no skip: Y alone may change layout
    unsigned seed = 240;
    append_block(m, b, "x", "b0", "b0_", seed);
    append_block(m, b, "b0", "b1", "b1_", seed);
    m.node("Relu", {"b1"}, {"y"});
    m.output("y", SINGA_ONNX_FLOAT, {1, 24, 6, 6});
    out.emplace_back(m, random_floats({1, 24, 6, 6}, 208));
  }
  {  // an MLP layer: MatMul + Add -> Gemm (the core) + Relu
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {5, 16}).initializer("W", random_floats({16, 7}, 10));
    m.initializer("b", random_floats({7}, 11)).node("MatMul", {"x", "W"}, {"mm"}).node("Add", {"mm", "b"}, {"z"});
    m.node("Relu", {"z"}, {"y"}).output("y", SINGA_ONNX_FLOAT, {5, 7});
    out.emplace_back(m, random_floats({5, 16}, 209));
  }
  return out;
}

}  // namespace

// Every fused path against the graph without it: each CPU pass switched off
// by its named option (pass.NAME=0) in turn, and all of them (optimize off),
// give the results of the full pipeline.
TEST(Passes, EachCpuPassSwitchedOffGivesTheSameResults) {
  ensure_loaded();
  std::set<std::string> fired;
  for (auto& [m, x] : cpu_pass_models()) {
    singa::onnx::PrepareOptions all;
    auto fast = singa::onnx::prepare_bytes(m.bytes(), all);
    const auto s = stats_of(m);
    for (const char* pass : kCpuPasses) {
      SCOPED_TRACE(pass);
      if (plugin_count(s, pass) > 0) fired.insert(pass);
      singa::onnx::PrepareOptions off;
      off.options[std::string("pass.") + pass] = "0";
      auto without = singa::onnx::prepare_bytes(m.bytes(), off);
      expect_same_output(*without, *fast, x, 1e-4);
    }
    singa::onnx::PrepareOptions none;
    none.optimize = false;
    auto plain = singa::onnx::prepare_bytes(m.bytes(), none);
    expect_same_output(*plain, *fast, x, 1e-4);
  }
  for (const char* p : kCpuPasses) EXPECT_TRUE(fired.count(p)) << p << " fired on no model";
}

// A pass switched off leaves its nodes alone: no ConvAdd without
// cpu.conv_adds, no FusedConv at all without the Conv passes.
TEST(Passes, ACpuPassSwitchedOffDoesNotRun) {
  ensure_loaded();
  ResidualCase rc;
  ModelBuilder m = residual_block(rc);
  EXPECT_GT(plugin_count(stats_of(m), "cpu.conv_adds"), 0);
  singa::onnx::PrepareOptions off;
  off.options["pass.cpu.conv_adds"] = "0";
  EXPECT_EQ(plugin_count(stats_of(m, off), "cpu.conv_adds"), 0);
  for (const char* p : kCpuPasses) off.options[std::string("pass.") + p] = "0";
  auto ops = op_types(*singa::onnx::prepare_bytes(m.bytes(), off));
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Relu", "Conv", "Add", "Relu"}));
}

// No standard ONNX node leaves the passes with a private attribute: what
// they fuse becomes an op of the CPU domain, so a pack with only plain
// kernels for a standard op never receives fused attributes.
TEST(Passes, NoStandardOpCarriesFusedAttributes) {
  ensure_loaded();
  int fused = 0;
  for (auto& [m, x] : cpu_pass_models()) {
    const ::onnx::ModelProto out = singa::onnx::optimized_model(m.model, {});
    for (const auto& n : out.graph().node()) {
      const bool standard = n.domain().empty() || n.domain() == "ai.onnx";
      // ONNX's MatMul has two inputs and no attributes (the fused scale,
      // transposed B, bias row and epilogue are FusedMatMul's).
      if (standard && n.op_type() == "MatMul") {
        EXPECT_EQ(n.attribute_size(), 0) << n.name();
        EXPECT_EQ(n.input_size(), 2) << n.name();
      }
      for (const auto& a : n.attribute()) {
        if (!private_attribute(a.name())) continue;
        EXPECT_FALSE(standard) << n.op_type() << " '" << n.name() << "' carries " << a.name();
        fused += standard ? 0 : 1;
      }
      if (!standard) {
        EXPECT_EQ(n.domain(), "ai.singa.cpu") << n.op_type();
      }
    }
  }
  EXPECT_GT(fused, 0);
}

// A standard Conv is read as ONNX defines it: a private attribute someone
// wrote on it by hand (activation = Relu) changes nothing, where the same
// attribute on a FusedConv applies the Relu.
TEST(Passes, AStandardConvIgnoresFusedAttributes) {
  ensure_loaded();
  ModelBuilder m = conv_bn("Relu", 1);
  auto* g = m.model.mutable_graph();
  // Conv only: drop the BatchNormalization and the Relu.
  g->mutable_node(0)->set_output(0, "y");
  g->mutable_node()->DeleteSubrange(1, 2);
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  o.check_model = false;
  const Tensor x = random_floats({1, 3, 9, 9}, 210);
  auto plain = singa::onnx::prepare_bytes(m.bytes(), o)->run({x});
  ModelBuilder tagged = m;
  auto* act = tagged.model.mutable_graph()->mutable_node(0)->add_attribute();
  act->set_name("activation");
  act->set_type(::onnx::AttributeProto::STRING);
  act->set_s("Relu");
  auto same = singa::onnx::prepare_bytes(tagged.bytes(), o)->run({x});
  as_fused_conv(tagged, tagged.model.mutable_graph()->mutable_node(0));
  auto relu = singa::onnx::prepare_bytes(tagged.bytes(), o)->run({x});
  const Tensor& p = plain[0].second;
  bool negative = false;
  for (int64_t i = 0; i < p.numel(); ++i) {
    EXPECT_EQ(same[0].second.data<float>()[i], p.data<float>()[i]) << i;
    EXPECT_NEAR(relu[0].second.data<float>()[i], std::max(p.data<float>()[i], 0.f), 1e-5) << i;
    negative = negative || p.data<float>()[i] < 0;
  }
  EXPECT_TRUE(negative);  // the Relu had something to do
}

// A standard MatMul is read as ONNX defines it: the FusedMatMul attributes
// written on it by hand (a scale, a transposed B, a Gelu) change nothing.
TEST(Passes, AStandardMatMulIgnoresFusedAttributes) {
  ensure_loaded();
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {2, 5, 16}).initializer("W", random_floats({16, 7}, 13));
  m.node("MatMul", {"x", "W"}, {"y"}, "proj");
  m.output("y", SINGA_ONNX_FLOAT, {2, 5, 7});
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  o.check_model = false;
  const Tensor x = random_floats({2, 5, 16}, 14);
  const auto plain = singa::onnx::prepare_bytes(m.bytes(), o)->run({x});
  ModelBuilder tagged = m;
  auto* n = tagged.model.mutable_graph()->mutable_node(0);
  for (const char* name : {"alpha", "activation"}) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(name[1] == 'l' ? ::onnx::AttributeProto::FLOAT : ::onnx::AttributeProto::STRING);
    a->set_f(3.f);
    a->set_s("Gelu");
  }
  add_int(n, "transB", 1);
  const auto same = singa::onnx::prepare_bytes(tagged.bytes(), o)->run({x});
  for (int64_t i = 0; i < plain[0].second.numel(); ++i)
    EXPECT_EQ(same[0].second.data<float>()[i], plain[0].second.data<float>()[i]) << i;
}

// The BERT-like layer through every MatMul pass: four projections become
// FusedMatMuls (their bias rows, the feed-forward Gelu, both residuals),
// the attention one node, against the unfused graph.
TEST(Passes, BertLayerRunsAsFusedNodes) {
  ensure_loaded();
  const ModelBuilder m = bert_layer();
  const auto ops = check_same(m, {random_floats({2, 7, 8}, 230, -2.f, 2.f)}, 1e-4);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "FusedMatMul"), 4);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Attention"), 1);
  for (const char* gone : {"MatMul", "Softmax", "Gelu", "Add", "Erf"}) EXPECT_FALSE(has_op(ops, gone)) << gone;
  const auto s = stats_of(m);
  EXPECT_EQ(s.gelus, 1);
  EXPECT_EQ(plugin_count(s, "cpu.matmul_bias_rows"), 4);
  EXPECT_EQ(plugin_count(s, "cpu.matmul_scales"), 1);
  EXPECT_EQ(plugin_count(s, "cpu.transposed_b"), 1);
  EXPECT_EQ(plugin_count(s, "cpu.attention"), 1);
  EXPECT_EQ(plugin_count(s, "cpu.matmul_epilogues"), 3);
}

// optimized_model() writes a model that loads again at its own opsets: the
// LayerNorm fusion (an opset-17 op) applies to a model importing 17, and is
// left out of one importing 13, where prepare() still runs it.
TEST(Passes, OptimizedModelKeepsTheModelsOpset) {
  ensure_loaded();
  for (int64_t opset : {13, 17}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    const ModelBuilder m = decomposed_layer_norm(opset, 8, true, {2, 3, 8});
    EXPECT_EQ(stats_of(m).layer_norms, 1);
    const ::onnx::ModelProto out = singa::onnx::optimized_model(m.model, {});
    bool fused = false;
    for (const auto& n : out.graph().node()) fused = fused || n.op_type() == "LayerNormalization";
    EXPECT_EQ(fused, opset >= 17);
    std::string bytes;
    ASSERT_TRUE(out.SerializeToString(&bytes));
    const Tensor x = random_floats({2, 3, 8}, 240);
    singa::onnx::PrepareOptions o;
    o.optimize = false;
    expect_same_output(*singa::onnx::prepare_bytes(m.bytes(), o), *singa::onnx::prepare_bytes(bytes, o), x, 1e-5);
  }
}
