// Graph passes owned by plugins (ABI 1.3): a test device claims Add -> Relu
// chains and fuses each into its own op; results match the plain path, and
// every edit the host must refuse is refused with a message naming it.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::ensure_loaded;
using testing_util::f32_tensor;

void load_fuser() {
  ensure_loaded();
  auto& rt = singa::Runtime::instance();
  if (rt.device("fuser")) return;
  auto info = rt.load_plugin(std::string(TEST_PLUGIN_DIR) + "/singa_test_fusing_accel.so");
  ASSERT_TRUE(info.loaded) << info.error;
  ASSERT_EQ(info.graph_passes, (std::vector<std::string>{"fuser.dequantize_probe", "fuser.add_relu"}));
}

// x + b -> Relu -> (y) and, beside it, x + b2 whose sum is also an output
// (not claimable) followed by Relu; then Sigmoid, which the device lacks.
std::string model() {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {2, 3})
      .initializer("b", f32_tensor({2, 3}, {1, -2, 3, -4, 5, -6}))
      .initializer("b2", f32_tensor({2, 3}, {-1, 2, -3, 4, -5, 6}))
      .node("Add", {"x", "b"}, {"s"}, "add1")
      .node("Relu", {"s"}, {"r"}, "relu1")
      .node("Sigmoid", {"r"}, {"y"}, "sig")
      .node("Add", {"x", "b2"}, {"s2"}, "add2")
      .node("Relu", {"s2"}, {"r2"}, "relu2")
      .output("y", SINGA_ONNX_FLOAT, {2, 3})
      .output("s2", SINGA_ONNX_FLOAT, {2, 3})
      .output("r2", SINGA_ONNX_FLOAT, {2, 3});
  return m.bytes();
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

TEST(GraphPass, DeviceClaimsAndFusesAndResultsMatchThePlainPath) {
  load_fuser();
  const Tensor x = f32_tensor({2, 3}, {0.5f, 1, -2, 3, -0.25f, 7});
  auto plain = singa::onnx::prepare_bytes(model())->run({x});

  singa::onnx::PrepareOptions o;
  o.device = "fuser";
  auto rep = singa::onnx::prepare_bytes(model(), o);
  int fused = 0;
  for (const auto& p : rep->placement()) {
    if (p.op_type == "AddRelu") {
      ++fused;
      EXPECT_EQ(p.device, "fuser");
      EXPECT_EQ(p.plugin, "test_fusing_accel");
    } else {
      EXPECT_EQ(p.device, "cpu") << p.op_type;  // fell back
    }
  }
  EXPECT_EQ(fused, 1) << "only the chain whose sum nobody else reads is claimed";
  auto out = rep->run({x});
  ASSERT_EQ(out.size(), plain.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].first, plain[i].first);
    EXPECT_EQ(values(out[i].second), values(plain[i].second)) << out[i].first;
  }
  // The user's view of the model is the file's: nodes() lists the plain graph.
  bool listed_add = false;
  for (const auto& n : rep->nodes()) listed_add = listed_add || n.name == "add1";
  EXPECT_TRUE(listed_add);
}

TEST(GraphPass, SwitchedOffByNamedOptionAndNotRunForOtherDevices) {
  load_fuser();
  singa::onnx::PrepareOptions o;
  o.device = "fuser";
  o.options["pass.fuser.add_relu"] = "0";
  // (Each Rep held in a local: placement() refers into it.)
  const auto off = singa::onnx::prepare_bytes(model(), o);
  for (const auto& p : off->placement()) EXPECT_NE(p.op_type, "AddRelu");
  const auto on_cpu = singa::onnx::prepare_bytes(model());
  for (const auto& p : on_cpu->placement()) EXPECT_NE(p.op_type, "AddRelu");
}

// DequantizeLinear of a constant weight is kept for the quantized passes
// (SINGA_PASS_PRIORITY_QUANTIZED and above) and folded before the float
// passes: x [2,4] @ DQ(W int8 [4,3]) -> y. With an 8-bit activation the CPU
// pack's qdq_matmul claims the product and reads W as int8; with a float
// activation nothing claims it and the prepared graph holds a float constant.
std::string dq_matmul_model(bool quantized_x) {
  ModelBuilder m;
  std::vector<int8_t> w = {1, -2, 3, 4, -5, 6, -7, 8, 9, 10, -11, 12};
  m.initializer("W8", Tensor::from_vector({4, 3}, SINGA_ONNX_INT8, w))
      .initializer("ws", f32_tensor({}, {0.5f}))
      .initializer("wz", Tensor::from_vector({}, SINGA_ONNX_INT8, std::vector<int8_t>{0}))
      .node("DequantizeLinear", {"W8", "ws", "wz"}, {"W"}, "dq_w");
  if (quantized_x) {
    m.input("x8", SINGA_ONNX_UINT8, {2, 4})
        .initializer("xs", f32_tensor({}, {0.25f}))
        .initializer("xz", Tensor::from_vector({}, SINGA_ONNX_UINT8, std::vector<uint8_t>{128}))
        .node("DequantizeLinear", {"x8", "xs", "xz"}, {"x"}, "dq_x");
  } else {
    m.input("x", SINGA_ONNX_FLOAT, {2, 4});
  }
  m.node("MatMul", {"x", "W"}, {"y"}, "mm").output("y", SINGA_ONNX_FLOAT, {2, 3});
  return m.bytes();
}

TEST(GraphPass, DequantizedWeightsKeptForQuantizedPassesThenFolded) {
  ensure_loaded();
  if (!singa::Runtime::instance().device("cpu")) GTEST_SKIP() << "no CPU device";
  const std::vector<float> w = {0.5f, -1, 1.5f, 2, -2.5f, 3, -3.5f, 4, 4.5f, 5, -5.5f, 6};
  {  // float activation: folded, no DequantizeLinear left to run
    const auto rep = singa::onnx::prepare_bytes(dq_matmul_model(false));
    for (const auto& p : rep->placement()) EXPECT_NE(p.op_type, "DequantizeLinear") << p.node;
    const Tensor x = f32_tensor({2, 4}, {1, 2, 3, 4, -1, 0.5f, 0, 2});
    auto out = rep->run({x});
    const std::vector<float> y = values(out[0].second);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        float ref = 0;
        for (int k = 0; k < 4; ++k) ref += x.data<float>()[i * 4 + k] * w[size_t(k * 3 + j)];
        EXPECT_FLOAT_EQ(y[size_t(i * 3 + j)], ref);
      }
  }
  {  // 8-bit activation: the quantized pass saw DQ(W8) and claimed both
    const auto rep = singa::onnx::prepare_bytes(dq_matmul_model(true));
    bool claimed = false;
    for (const auto& p : rep->placement()) {
      claimed = claimed || p.op_type == "QDQMatMul";
      EXPECT_NE(p.op_type, "DequantizeLinear") << p.node;
    }
    EXPECT_TRUE(claimed) << "the product stayed float";
  }
  // What the passes see: a pass at SINGA_PASS_PRIORITY_QUANTIZED the int8
  // weight's DequantizeLinear, a pass below it the folded float constant.
  for (const auto& [mode, seen] : std::vector<std::pair<std::string, std::string>>{
           {"dq_early", "dq_early saw 1 DequantizeLinear of a constant"},
           {"dq_late", "dq_late saw 0 DequantizeLinear of a constant"}}) {
    load_fuser();
    singa::onnx::PrepareOptions o;
    o.device = "fuser";
    o.options["fuser.test"] = mode;
    try {
      singa::onnx::prepare_bytes(dq_matmul_model(false), o);
      ADD_FAILURE() << mode << ": the probe did not run";
    } catch (const singa::Error& e) {
      EXPECT_NE(std::string(e.what()).find(seen), std::string::npos) << e.what();
    }
  }
  {  // the quantized pass switched off: the weights are folded for the float passes
    singa::onnx::PrepareOptions o;
    o.options["pass.cpu.qdq_matmul"] = "0";
    const auto rep = singa::onnx::prepare_bytes(dq_matmul_model(true), o);
    int dq = 0;
    for (const auto& p : rep->placement()) dq += p.op_type == "DequantizeLinear";
    EXPECT_EQ(dq, 1) << "only the activation's DequantizeLinear runs";
  }
}

// Conv(x float, DQ(W int8)) -> BatchNormalization: no 8-bit activation, so
// no quantized pass claims it; once the weight is folded the core's
// Conv+BatchNorm fusion must still take the BatchNormalization.
TEST(GraphPass, FoldedDequantizedWeightsStillFuseWithBatchNorm) {
  ensure_loaded();
  ModelBuilder m;
  std::vector<int8_t> w(2 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = int8_t(int(i % 7) - 3);
  m.input("x", SINGA_ONNX_FLOAT, {1, 3, 5, 5})
      .initializer("W8", Tensor::from_vector({2, 3, 3, 3}, SINGA_ONNX_INT8, w))
      .initializer("ws", f32_tensor({}, {0.125f}))
      .node("DequantizeLinear", {"W8", "ws"}, {"W"}, "dq_w")
      .node("Conv", {"x", "W"}, {"c"}, "conv")
      .initializer("scale", f32_tensor({2}, {1.5f, 0.5f}))
      .initializer("bias", f32_tensor({2}, {0.25f, -1}))
      .initializer("mean", f32_tensor({2}, {0.1f, -0.2f}))
      .initializer("var", f32_tensor({2}, {2, 0.5f}))
      .node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, "bn")
      .output("y", SINGA_ONNX_FLOAT, {1, 2, 3, 3});
  const auto rep = singa::onnx::prepare_bytes(m.bytes());
  for (const auto& p : rep->placement()) {
    EXPECT_NE(p.op_type, "BatchNormalization") << p.node;
    EXPECT_NE(p.op_type, "DequantizeLinear") << p.node;
  }
}

void expect_refused(const std::string& mode, const std::string& needle) {
  load_fuser();
  singa::onnx::PrepareOptions o;
  o.device = "fuser";
  o.options["fuser.test"] = mode;
  try {
    singa::onnx::prepare_bytes(model(), o);
    ADD_FAILURE() << mode << ": prepare succeeded";
  } catch (const singa::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("graph pass 'fuser.add_relu'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(GraphPass, HostRefusesAnEditThatDropsAValueReadElsewhere) { expect_refused("drop_output", "no new node computes it"); }
TEST(GraphPass, HostRefusesAnOpWithoutKernel) { expect_refused("no_kernel", "no loaded plugin has a kernel"); }
TEST(GraphPass, HostRefusesACycle) { expect_refused("cycle", "cycle"); }
TEST(GraphPass, HostRefusesAReplacedNodeHandle) { expect_refused("stale", "not a node of this graph"); }

}  // namespace
