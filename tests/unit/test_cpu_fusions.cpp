// The CPU pack's activation and squeeze-and-excitation fusions
// (plugins/ops_nn/passes/fuse_conv_activation.cpp, fuse_squeeze_excite.cpp,
// plugins/ops_math/passes/fuse_gemm_activation.cpp): each fused model must
// compute what the same model computes with the pass switched off
// (option pass.NAME=0), where the standard kernels run every node.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_float;
using testing_util::add_ints;
using testing_util::op_types;
using testing_util::random_floats;

namespace {

// act(in) -> out: one node, or SiLU as Sigmoid and Mul ("SiLU", "SiLU'" with
// the Mul's operands swapped).
void add_activation(ModelBuilder& m, const std::string& act, const std::string& in, const std::string& out) {
  if (act == "SiLU" || act == "SiLU'") {
    m.node("Sigmoid", {in}, {in + "_sig"});
    if (act == "SiLU")
      m.node("Mul", {in, in + "_sig"}, {out});
    else
      m.node("Mul", {in + "_sig", in}, {out});
  } else {
    m.node(act, {in}, {out});
    if (act == "HardSigmoid") add_float(m.last(), "alpha", 0.3f), add_float(m.last(), "beta", 0.4f);
  }
}

struct ConvCase {
  int64_t N = 1, C = 16, M = 32, H = 14, W = 14, K = 3, S = 1, group = 1, pad = 1;
};

// x [N, C, H, W] -> Conv(W, B) -> act -> y.
ModelBuilder conv_act(const ConvCase& c, const std::string& act) {
  ModelBuilder m(14);
  const int64_t OH = (c.H + 2 * c.pad - c.K) / c.S + 1, OW = (c.W + 2 * c.pad - c.K) / c.S + 1;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("w", random_floats({c.M, c.C / c.group, c.K, c.K}, 11))
      .initializer("b", random_floats({c.M}, 12))
      .node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints(m.last(), "kernel_shape", {c.K, c.K});
  add_ints(m.last(), "strides", {c.S, c.S});
  add_ints(m.last(), "pads", {c.pad, c.pad, c.pad, c.pad});
  if (c.group != 1) {
    auto* a = m.last()->add_attribute();
    a->set_name("group");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(c.group);
  }
  add_activation(m, act, "c", "y");
  m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, OH, OW});
  return m;
}

bool has(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Runs m with every pass and with the named passes off; checks the outputs
// agree (relative to max(1, |reference|)) and returns the fused Rep's ops.
std::vector<std::string> check_against_unfused(const ModelBuilder& m, const Tensor& x,
                                               const std::vector<std::string>& passes_off, double tol = 2e-5) {
  singa::onnx::PrepareOptions off;
  for (const auto& p : passes_off) off.options["pass." + p] = "0";
  auto ref = singa::onnx::prepare_bytes(m.bytes(), off);
  auto fused = singa::onnx::prepare_bytes(m.bytes(), {});
  auto a = ref->run({x}), b = fused->run({x});
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 1u);
  if (a.size() != 1 || b.size() != 1) return {};
  EXPECT_EQ(a[0].second.shape(), b[0].second.shape());
  if (a[0].second.shape() != b[0].second.shape()) return {};
  double worst = 0;
  for (int64_t i = 0; i < a[0].second.numel(); ++i) {
    const double r = a[0].second.data<float>()[i], f = b[0].second.data<float>()[i];
    worst = std::max(worst, std::fabs(r - f) / std::max(1.0, std::fabs(r)));
  }
  EXPECT_LE(worst, tol);
  EXPECT_FALSE(has(op_types(*ref), "ChannelGate"));
  return op_types(*fused);
}

const char* const kActivations[] = {"Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "SiLU", "SiLU'"};

// The activation's nodes are gone from the fused model.
void expect_fused(const std::vector<std::string>& ops, const std::string& act) {
  for (const char* op : {"Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Mul"}) EXPECT_FALSE(has(ops, op)) << act << " " << op;
}

}  // namespace

TEST(CpuFusions, EveryActivationFusesIntoEveryConvPath) {
  testing_util::ensure_loaded();
  std::vector<std::pair<std::string, ConvCase>> cases;
  ConvCase c;
  cases.push_back({"3x3 dense", c});  // oneDNN (or Winograd)
  c.C = 3, c.M = 8, c.H = c.W = 17, c.S = 2;
  cases.push_back({"thin 3x3 stride 2", c});
  c = ConvCase();
  c.C = 32, c.M = 48, c.K = 1, c.pad = 0;
  cases.push_back({"pointwise", c});
  c.N = 2, c.H = c.W = 1, c.C = 24, c.M = 40;
  cases.push_back({"pointwise on 1x1 planes (SE squeeze)", c});
  for (int64_t k : {3, 5, 7})
    for (int64_t s : {1, 2}) {
      c = ConvCase();
      c.C = c.M = c.group = 40, c.K = k, c.S = s, c.pad = k / 2, c.H = 15, c.W = 13;  // 32 blocked channels + 8
      cases.push_back({"depthwise " + std::to_string(k) + "x" + std::to_string(k) + " stride " + std::to_string(s), c});
    }
  for (const auto& [name, cc] : cases)
    for (const char* act : kActivations) {
      SCOPED_TRACE(name + " + " + act);
      const auto ops = check_against_unfused(conv_act(cc, act), random_floats({cc.N, cc.C, cc.H, cc.W}, 7, -2.f, 2.f),
                                             {"cpu.conv_activations"});
      expect_fused(ops, act);
      EXPECT_TRUE(has(ops, "FusedConv"));
    }
}

TEST(CpuFusions, SiluFusesIntoGemm) {
  testing_util::ensure_loaded();
  for (const char* act : kActivations) {
    SCOPED_TRACE(act);
    ModelBuilder m(14);
    m.input("x", SINGA_ONNX_FLOAT, {4, 20})
        .initializer("w", random_floats({20, 24}, 3))
        .initializer("b", random_floats({24}, 4))
        .node("Gemm", {"x", "w", "b"}, {"c"});
    add_activation(m, act, "c", "y");
    m.output("y", SINGA_ONNX_FLOAT, {4, 24});
    const auto ops = check_against_unfused(m, random_floats({4, 20}, 5, -2.f, 2.f), {"cpu.gemm_activations"});
    expect_fused(ops, act);
  }
}

// A Sigmoid whose input is also read elsewhere, or a Mul of two unrelated
// values, is no SiLU: the nodes stay.
TEST(CpuFusions, MulWithAnotherSigmoidIsNoSilu) {
  testing_util::ensure_loaded();
  ModelBuilder m(14);
  m.input("x", SINGA_ONNX_FLOAT, {1, 4, 6, 6})
      .initializer("w", random_floats({4, 4, 1, 1}, 1))
      .node("Conv", {"x", "w"}, {"c"})
      .node("Sigmoid", {"x"}, {"s"})
      .node("Mul", {"c", "s"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {1, 4, 6, 6});
  const auto ops = check_against_unfused(m, random_floats({1, 4, 6, 6}, 2), {"cpu.conv_activations"});
  EXPECT_TRUE(has(ops, "Sigmoid"));
}

namespace {

// EfficientNet's squeeze-and-excitation: x -> GAP -> Conv 1x1 -> SiLU ->
// Conv 1x1 -> gate activation -> Mul with x (gate first when swapped).
ModelBuilder se_block(int64_t N, int64_t C, int64_t H, int64_t W, const std::string& gate_act, bool swapped) {
  const int64_t R = std::max<int64_t>(1, C / 4);
  ModelBuilder m(14);
  m.input("x", SINGA_ONNX_FLOAT, {N, C, H, W})
      .initializer("w1", random_floats({R, C, 1, 1}, 21))
      .initializer("b1", random_floats({R}, 22))
      .initializer("w2", random_floats({C, R, 1, 1}, 23))
      .initializer("b2", random_floats({C}, 24))
      .node("GlobalAveragePool", {"x"}, {"p"})
      .node("Conv", {"p", "w1", "b1"}, {"s1"});
  add_activation(m, "SiLU", "s1", "a1");
  m.node("Conv", {"a1", "w2", "b2"}, {"s2"});
  add_activation(m, gate_act, "s2", "g");
  if (swapped)
    m.node("Mul", {"g", "x"}, {"y"});
  else
    m.node("Mul", {"x", "g"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {N, C, H, W});
  return m;
}

}  // namespace

TEST(CpuFusions, SqueezeExcitationGateIsOneNode) {
  testing_util::ensure_loaded();
  struct Case {
    int64_t N, C, H, W;
    const char* act;
    bool swapped;
  };
  for (const Case& c : {Case{1, 32, 10, 10, "Sigmoid", false}, Case{2, 24, 7, 9, "Sigmoid", true},
                        Case{1, 16, 5, 5, "HardSigmoid", false}, Case{3, 40, 1, 3, "HardSigmoid", true}}) {
    SCOPED_TRACE(std::string(c.act) + " C=" + std::to_string(c.C) + (c.swapped ? " swapped" : ""));
    const auto ops = check_against_unfused(se_block(c.N, c.C, c.H, c.W, c.act, c.swapped),
                                           random_floats({c.N, c.C, c.H, c.W}, 9, -2.f, 2.f),
                                           {"cpu.squeeze_excites", "cpu.conv_activations"});
    EXPECT_TRUE(has(ops, "ChannelGate"));
    expect_fused(ops, c.act);
    // Each pass alone gives the same result too.
    check_against_unfused(se_block(c.N, c.C, c.H, c.W, c.act, c.swapped), random_floats({c.N, c.C, c.H, c.W}, 9),
                          {"cpu.squeeze_excites"});
  }
}

// A broadcast Mul that is no per-channel gate stays a Mul.
TEST(CpuFusions, OtherBroadcastMulsStay) {
  testing_util::ensure_loaded();
  ModelBuilder m(14);
  m.input("x", SINGA_ONNX_FLOAT, {1, 4, 6, 6})
      .initializer("r", random_floats({1, 1, 6, 6}, 1))
      .node("Mul", {"x", "r"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {1, 4, 6, 6});
  const auto ops = check_against_unfused(m, random_floats({1, 4, 6, 6}, 2), {"cpu.squeeze_excites"});
  EXPECT_FALSE(has(ops, "ChannelGate"));
}

// ChannelGate fed a gate that is not one value per channel fails with a message.
TEST(CpuFusions, ChannelGateRejectsAWrongGateShape) {
  testing_util::ensure_loaded();
  ModelBuilder m(14);
  auto* op = m.model.add_opset_import();
  op->set_domain("ai.singa.cpu");
  op->set_version(1);
  m.input("x", SINGA_ONNX_FLOAT, {1, 4, 3, 3})
      .input("g", SINGA_ONNX_FLOAT, {1, 3, 1, 1})
      .node("ChannelGate", {"x", "g"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {1, 4, 3, 3});
  m.last()->set_domain("ai.singa.cpu");
  try {
    auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
    rep->run(std::vector<Tensor>{random_floats({1, 4, 3, 3}, 1), random_floats({1, 3, 1, 1}, 2)});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("one gate per channel"), std::string::npos) << e.what();
  }
}
