// Model intake beyond the onnx library: IR 9+ and opset 18+ models load
// through singa's own checks, kernels serve opsets until their op's next
// version (core/onnx/op_versions.inc), graphs out of order are sorted, and
// what is wrong or newer than supported is named.
#include "model_builder.hpp"
#include "test_util.hpp"

#include <singa/error.hpp>
#include <singa/onnx.hpp>
#include <singa/op_versions.hpp>

#include <gtest/gtest.h>

#include <climits>

using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

std::string prepare_error(const ModelBuilder& m) {
  try {
    singa::onnx::prepare_bytes(m.bytes(), {});
  } catch (const singa::Error& e) {
    return e.what();
  }
  return "";
}

// x -> Abs -> Neg -> y, the nodes listed in `order` (0 = Abs, 1 = Neg).
ModelBuilder abs_neg(int64_t ir, int64_t opset, std::vector<int> order = {0, 1}) {
  ModelBuilder m(opset);
  m.model.set_ir_version(ir);
  m.input("x", SINGA_ONNX_FLOAT, {2, 3});
  for (int k : order) {
    if (k == 0) m.node("Abs", {"x"}, {"a"}, "abs");
    if (k == 1) m.node("Neg", {"a"}, {"y"}, "neg");
  }
  m.output("y", SINGA_ONNX_FLOAT, {2, 3});
  return m;
}

void expect_minus_abs(const ModelBuilder& m) {
  auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
  Tensor x = testing_util::randn({2, 3});
  auto out = rep->run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(out[0].second.data<float>()[i], -std::fabs(x.data<float>()[i]));
}

}  // namespace

TEST(OpVersions, KernelsServeUntilTheOpsNextVersion) {
  using singa::onnx::last_served_opset;
  // Abs: 1, 6, 13. A kernel written against opset 17 serves every later opset.
  EXPECT_EQ(last_served_opset("", "Abs", 13, 17), INT32_MAX);
  EXPECT_EQ(last_served_opset("", "Abs", 6, 12), 12);
  EXPECT_EQ(last_served_opset("", "Abs", 13, SINGA_VERSION_OPEN), INT32_MAX);
  EXPECT_EQ(last_served_opset("", "Abs", 6, SINGA_VERSION_OPEN), 12);
  // ReduceMax changed at 18 (axes became an input): its opset-17 kernel stops there.
  EXPECT_EQ(last_served_opset("", "ReduceMax", 13, 17), 17);
  EXPECT_EQ(last_served_opset("", "ReduceMax", 13, SINGA_VERSION_OPEN), 17);
  // Ops the table does not know keep their range literally.
  EXPECT_EQ(last_served_opset("com.example", "Foo", 1, 3), 3);
  EXPECT_EQ(last_served_opset("com.example", "Foo", 1, SINGA_VERSION_OPEN), INT32_MAX);
  EXPECT_EQ(singa::onnx::op_version_at("", "Abs", 22), 13);
  EXPECT_EQ(singa::onnx::op_version_at("", "ReduceMax", 18), 18);
  EXPECT_EQ(singa::onnx::op_version_at("", "Abs", 0), 0);
  EXPECT_GE(singa::onnx::newest_known_opset(""), 18);
  EXPECT_GE(singa::onnx::newest_known_opset("ai.onnx.ml"), 3);
}

TEST(Intake, NewerIrAndOpsetLoadAndRun) {
  testing_util::ensure_loaded();
  expect_minus_abs(abs_neg(10, 18));
  expect_minus_abs(abs_neg(11, 23));
  expect_minus_abs(abs_neg(8, 17));  // the onnx library's checker still serves what it covers
}

TEST(Intake, NodesOutOfOrderAreSorted) {
  testing_util::ensure_loaded();
  expect_minus_abs(abs_neg(8, 13, {1, 0}));   // through the onnx checker
  expect_minus_abs(abs_neg(10, 18, {1, 0}));  // through singa's own checks
}

TEST(Intake, ACycleIsRefusedWithItsNodes) {
  testing_util::ensure_loaded();
  for (int64_t ir : {8, 10}) {
    ModelBuilder m(ir == 8 ? 13 : 18);
    m.model.set_ir_version(ir);
    m.input("x", SINGA_ONNX_FLOAT, {2});
    m.node("Add", {"x", "b"}, {"a"}, "first");
    m.node("Neg", {"a"}, {"b"}, "second");
    m.output("b", SINGA_ONNX_FLOAT, {2});
    const std::string e = prepare_error(m);
    EXPECT_NE(e.find("cycle"), std::string::npos) << e;
    EXPECT_TRUE(e.find("first") != std::string::npos || e.find("second") != std::string::npos) << e;
  }
}

TEST(Intake, NewerThanSupportedIsNamed) {
  testing_util::ensure_loaded();
  const int newest = singa::onnx::newest_known_opset("");
  const std::string e = prepare_error(abs_neg(10, newest + 1));
  EXPECT_NE(e.find("newer than supported"), std::string::npos) << e;
  EXPECT_NE(e.find("Abs has versions 1, 6, 13"), std::string::npos) << e;
  const std::string ir = prepare_error(abs_neg(99, 18));
  EXPECT_NE(ir.find("IR version 99"), std::string::npos) << ir;
}

TEST(Intake, MalformedNewerModelsAreNamed) {
  testing_util::ensure_loaded();
  {  // an attribute whose declared type is not the value it holds
    ModelBuilder m = abs_neg(10, 18);
    auto* a = m.g->mutable_node(0)->add_attribute();
    a->set_name("alpha");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_f(0.5f);
    const std::string e = prepare_error(m);
    EXPECT_NE(e.find("attribute 'alpha'"), std::string::npos) << e;
    EXPECT_NE(e.find("abs"), std::string::npos) << e;
  }
  {  // an element type ONNX does not define
    ModelBuilder m = abs_neg(10, 18);
    m.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(99);
    const std::string e = prepare_error(m);
    EXPECT_NE(e.find("element type 99"), std::string::npos) << e;
  }
  {  // a node reading a name nobody defines
    ModelBuilder m = abs_neg(10, 18);
    m.g->mutable_node(1)->set_input(0, "nowhere");
    const std::string e = prepare_error(m);
    EXPECT_NE(e.find("nowhere"), std::string::npos) << e;
  }
  {  // no op_type
    ModelBuilder m = abs_neg(10, 18);
    m.g->mutable_node(0)->clear_op_type();
    EXPECT_NE(prepare_error(m).find("no op_type"), std::string::npos);
  }
  {  // the same domain imported twice
    ModelBuilder m = abs_neg(10, 18);
    auto* op = m.model.add_opset_import();
    op->set_domain("ai.onnx");
    op->set_version(19);
    EXPECT_NE(prepare_error(m).find("twice"), std::string::npos);
  }
}

// ONNX 1.12's data propagation read the type of Shape's input without
// checking it had one; an input made by an op the library has no schema for
// (a newer version such as Pad-18, or a custom domain) crashed the process.
TEST(Intake, ShapeOfAValueWithoutAnInferredTypeDoesNotCrash) {
  testing_util::ensure_loaded();
  {  // Pad-18 (axes as an input), newer than the library: runs
    ModelBuilder m(18);
    m.model.set_ir_version(8);
    m.input("x", SINGA_ONNX_FLOAT, {2, 3}).input("pads", SINGA_ONNX_INT64, {4});
    m.node("Pad", {"x", "pads"}, {"p"}, "pad");
    m.node("Shape", {"p"}, {"s"}, "shape");
    m.output("s", SINGA_ONNX_INT64, {2});
    auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
    Tensor pads({4}, SINGA_ONNX_INT64);
    const int64_t p[4] = {1, 0, 2, 1};
    for (int i = 0; i < 4; ++i) pads.data<int64_t>()[i] = p[i];
    auto out = rep->run({{"x", testing_util::randn({2, 3})}, {"pads", pads}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].second.data<int64_t>()[0], 5);
    EXPECT_EQ(out[0].second.data<int64_t>()[1], 4);
  }
  {  // an op of a custom domain no plugin implements: a clear error, no crash
    ModelBuilder m(13);
    auto* op = m.model.add_opset_import();
    op->set_domain("com.example");
    op->set_version(1);
    m.input("x", SINGA_ONNX_FLOAT, {2, 3});
    m.node("Mystery", {"x"}, {"a"}, "mystery");
    m.last()->set_domain("com.example");
    m.node("Shape", {"a"}, {"s"}, "shape");
    m.node("Slice", {"s", "s", "s"}, {"t"}, "slice");
    m.output("t", SINGA_ONNX_INT64, {2});
    const std::string e = prepare_error(m);
    EXPECT_NE(e.find("Mystery"), std::string::npos) << e;
  }
}
