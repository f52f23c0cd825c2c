// Layouts as a typed property of a value (ABI 1.4, singa_layout_ext): a test
// pack's graph pass runs a chain in a layout of its own with explicit
// reorder nodes, and the results match the plain graph's; a kernel that does
// not declare a layout is never handed a value in it; all_outputs and
// last_layers return plain tensors; the host refuses a layout on a graph
// output. The CPU pack's blocked layout is checked the same way.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <map>

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::ensure_loaded;
using testing_util::randn;

void load_pack() {
  ensure_loaded();
  auto& rt = singa::Runtime::instance();
  for (const auto& p : rt.plugins())
    if (p.name == "test_layout_pack") return;
  auto info = rt.load_plugin(std::string(TEST_PLUGIN_DIR) + "/singa_test_layout_pack.so");
  ASSERT_TRUE(info.loaded) << info.error;
}

// x -> Relu -> AddIndex -> AddIndex -> Sigmoid -> y, with AddIndex
// (y[i] = x[i] + i) of the test pack's domain.
std::string chain_model() {
  ModelBuilder m;
  auto* op = m.model.add_opset_import();
  op->set_domain("test.layout");
  op->set_version(1);
  m.input("x", SINGA_ONNX_FLOAT, {2, 3, 4})
      .node("Relu", {"x"}, {"r"}, "relu")
      .node("AddIndex", {"r"}, {"a"}, "first")
      .node("AddIndex", {"a"}, {"b"}, "second")
      .node("Sigmoid", {"b"}, {"y"}, "sig")
      .output("y", SINGA_ONNX_FLOAT, {2, 3, 4});
  m.g->mutable_node(1)->set_domain("test.layout");
  m.g->mutable_node(2)->set_domain("test.layout");
  return m.bytes();
}

singa::onnx::PrepareOptions options(const std::string& mode = "", bool optimize = true) {
  singa::onnx::PrepareOptions o;
  o.check_model = false;  // the checker does not know the test domain
  o.optimize = optimize;
  if (!mode.empty()) o.options["layout.test"] = mode;
  return o;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

// The independent reference: numpy's reading of the same chain.
std::vector<float> reference(const Tensor& x) {
  std::vector<float> y;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float r = std::max(x.data<float>()[i], 0.f) + 2.f * float(i);
    y.push_back(1.f / (1.f + std::exp(-r)));
  }
  return y;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << what << " at " << i;
}

std::string prepare_error(const std::string& model, const singa::onnx::PrepareOptions& o) {
  try {
    singa::onnx::prepare_bytes(model, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Layouts, PassWithReordersMatchesThePlainGraph) {
  load_pack();
  const Tensor x = randn({2, 3, 4}, 3);
  auto plain = singa::onnx::prepare_bytes(chain_model(), options("", false));
  auto laid = singa::onnx::prepare_bytes(chain_model(), options());
  std::map<std::string, int> ops;
  for (const auto& p : laid->placement()) ++ops[p.op_type];
  EXPECT_EQ(ops["ToReversed"], 1);
  EXPECT_EQ(ops["FromReversed"], 1);
  EXPECT_EQ(ops["AddIndex"], 2);
  const auto a = plain->run({x}), b = laid->run({x});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  expect_near(values(a[0].second), reference(x), "plain graph");
  expect_near(values(b[0].second), values(a[0].second), "graph with layouts");

  // The optimized model names the layouts in its metadata.
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(chain_model()));
  int listed = 0;
  const ::onnx::ModelProto optimized = singa::onnx::optimized_model(model, options());
  for (const auto& m : optimized.metadata_props())
    if (m.key().rfind("singa.layout:", 0) == 0) {
      EXPECT_EQ(m.value(), "test.layout.reversed") << m.key();
      ++listed;
    }
  EXPECT_EQ(listed, 3);
}

TEST(Layouts, AllOutputsAndLastLayersArePlain) {
  load_pack();
  const Tensor x = randn({2, 3, 4}, 4);
  auto plain = singa::onnx::prepare_bytes(chain_model(), options("", false));
  auto laid = singa::onnx::prepare_bytes(chain_model(), options());
  singa::onnx::RunOptions all;
  all.all_outputs = true;
  const auto a = plain->run({x}, all), b = laid->run({x}, all);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    expect_near(values(b[i].second), values(a[i].second), "all_outputs '" + a[i].first + "'");
  }
  for (int k = 1; k <= 3; ++k) {
    singa::onnx::RunOptions last;
    last.last_layers = -k;
    const auto pa = plain->run({x}, last), pb = laid->run({x}, last);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i)
      expect_near(values(pb[i].second), values(pa[i].second), "last_layers -" + std::to_string(k) + " '" + pa[i].first + "'");
  }
}

TEST(Layouts, KernelWithoutTheDeclarationIsNeverChosen) {
  load_pack();
  const std::string msg = prepare_error(chain_model(), options("undeclared"));
  EXPECT_NE(msg.find("node 'second' (PlainAddIndex)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 0 'a' in layout 'test.layout.reversed'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not declare"), std::string::npos) << msg;
}

TEST(Layouts, HostRefusesALayoutOnAGraphOutputOrAnUnknownValue) {
  load_pack();
  std::string msg = prepare_error(chain_model(), options("output"));
  EXPECT_NE(msg.find("graph pass 'layout.reverse_chains'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'y' is a graph output"), std::string::npos) << msg;
  msg = prepare_error(chain_model(), options("unknown"));
  EXPECT_NE(msg.find("'no_such_value' is not a value of the graph"), std::string::npos) << msg;
}

// The CPU pack's standard Conv kernel declares no layout: a value in blocks
// never reaches it.
TEST(Layouts, CpuConvKernelIsNotHandedBlocks) {
  load_pack();
  ModelBuilder m;
  // The CPU pack makes conv0 + Relu one FusedConv, which may write blocks;
  // conv1 (two groups) stays a standard Conv.
  m.input("x", SINGA_ONNX_FLOAT, {1, 16, 6, 6})
      .initializer("w0", randn({16, 16, 1, 1}, 6))
      .initializer("w1", randn({16, 8, 1, 1}, 7))
      .node("Conv", {"x", "w0"}, {"c"}, "conv0")
      .node("Relu", {"c"}, {"s"}, "relu")
      .node("Conv", {"s", "w1"}, {"y"}, "conv1")
      .output("y", SINGA_ONNX_FLOAT, {1, 16, 6, 6});
  auto* group = m.last()->add_attribute();
  group->set_name("group");
  group->set_type(::onnx::AttributeProto::INT);
  group->set_i(2);
  const std::string msg = prepare_error(m.bytes(), options("cpu_conv"));
  EXPECT_NE(msg.find("node 'conv1' (Conv)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 0 's' in layout 'ai.singa.cpu.nChw16c'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not declare"), std::string::npos) << msg;
}

// The CPU pack's 16-channel blocks between Convs: the values carry the
// layout, the Convs on both sides are the pack's FusedConv, and every value
// all_outputs returns equals the plain graph's.
TEST(Layouts, CpuBlockedValuesAreDeclaredAndAllOutputsPlain) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 16, 10, 10});
  std::string prev = "x";
  const int64_t channels[] = {32, 32, 16};
  int64_t in = 16;
  for (int i = 0; i < 3; ++i) {
    const std::string w = "w" + std::to_string(i), c = "c" + std::to_string(i), r = "r" + std::to_string(i);
    m.initializer(w, randn({channels[i], in, 3, 3}, 10 + unsigned(i)));
    m.node("Conv", {prev, w}, {c}, "conv" + std::to_string(i));
    auto* pads = m.last()->add_attribute();
    pads->set_name("pads");
    pads->set_type(::onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k) pads->add_ints(1);
    m.node("Relu", {c}, {r}, "relu" + std::to_string(i));
    prev = r;
    in = channels[i];
  }
  m.output(prev, SINGA_ONNX_FLOAT, {1, 16, 10, 10});
  int blocked = 0;
  const ::onnx::ModelProto optimized = singa::onnx::optimized_model(m.model, {});
  for (const auto& p : optimized.metadata_props())
    if (p.value() == "ai.singa.cpu.nChw16c") ++blocked;
  EXPECT_EQ(blocked, 2) << "the values between the three Convs";

  singa::onnx::PrepareOptions off;
  off.optimize = false;
  auto plain = singa::onnx::prepare_bytes(m.bytes(), off);
  auto fast = singa::onnx::prepare_bytes(m.bytes());
  const Tensor x = randn({1, 16, 10, 10}, 5);
  singa::onnx::RunOptions all;
  all.all_outputs = true;
  const auto a = plain->run({x}, all), b = fast->run({x}, all);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    ASSERT_EQ(a[i].second.dtype(), SINGA_ONNX_FLOAT) << a[i].first;
    ASSERT_EQ(b[i].second.dtype(), SINGA_ONNX_FLOAT) << b[i].first;
    const auto va = values(a[i].second), vb = values(b[i].second);
    ASSERT_EQ(va.size(), vb.size()) << a[i].first;
    for (size_t k = 0; k < va.size(); ++k) ASSERT_NEAR(vb[k], va[k], 1e-3) << a[i].first << " at " << k;
  }
  const auto ya = plain->run({x}), yb = fast->run({x});
  ASSERT_EQ(ya.size(), 1u);
  ASSERT_EQ(yb.size(), 1u);
  const auto va = values(ya[0].second), vb = values(yb[0].second);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t k = 0; k < va.size(); ++k) ASSERT_NEAR(vb[k], va[k], 1e-3) << k;
}

}  // namespace
