// Backend and executor: prepare/run, last_layers, all_outputs, symbolic
// dims, bad models and bad inputs, concurrent runs.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::f32_tensor;

namespace {

using testing_util::ensure_loaded;

// x[N,4] -> Relu -> Add(b) -> MatMul(W[4,2]) -> Sigmoid -> y[N,2]
ModelBuilder mlp() {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, 4}, {"batch"})
      .initializer("b", f32_tensor({4}, {0.5f, -1.f, 2.f, 0.f}))
      .initializer("W", f32_tensor({4, 2}, {1, 0, 0, 1, 1, 1, -1, 2}))
      .node("Relu", {"x"}, {"r"}, "relu")
      .node("Add", {"r", "b"}, {"a"}, "add")
      .node("MatMul", {"a", "W"}, {"m"}, "matmul")
      .node("Sigmoid", {"m"}, {"y"}, "sigmoid")
      .output("y", SINGA_ONNX_FLOAT, {-1, 2}, {"batch"});
  return m;
}

std::vector<float> reference(const std::vector<float>& x, size_t n) {
  const float b[4] = {0.5f, -1.f, 2.f, 0.f};
  const float W[8] = {1, 0, 0, 1, 1, 1, -1, 2};
  std::vector<float> y(n * 2);
  for (size_t r = 0; r < n; ++r)
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 4; ++k) s += (std::max(0.f, x[r * 4 + k]) + b[k]) * W[k * 2 + j];
      y[r * 2 + j] = 1.f / (1.f + std::exp(-s));
    }
  return y;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const singa::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Backend, RunsAndBindsBatchAtRunTime) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  ASSERT_EQ(rep->inputs().size(), 1u);
  EXPECT_EQ(rep->inputs()[0].dim_names[0], "batch");
  for (size_t n : {1u, 3u}) {
    std::vector<float> x(n * 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.37f - 1.f;
    auto out = rep->run({f32_tensor({int64_t(n), 4}, x)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].first, "y");
    ASSERT_EQ(out[0].second.shape(), (singa::Shape{int64_t(n), 2}));
    auto ref = reference(x, n);
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out[0].second.data<float>()[i], ref[i], 1e-6);
  }
}

TEST(Backend, DimsBoundAtPrepare) {
  ensure_loaded();
  singa::onnx::PrepareOptions opt;
  opt.dims["batch"] = 2;
  auto rep = singa::onnx::prepare_bytes(mlp().bytes(), opt);
  EXPECT_EQ(rep->inputs()[0].dims[0], 2);
  std::string err = error_of([&] { rep->run({f32_tensor({3, 4}, std::vector<float>(12, 1.f))}); });
  EXPECT_NE(err.find("input 'x' has shape [3,4]"), std::string::npos) << err;
}

TEST(Backend, LastLayersStopsBeforeTheEnd) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  std::vector<float> x = {1, -2, 3, -4};
  singa::onnx::RunOptions ro;
  ro.last_layers = -2;  // stop before MatMul and Sigmoid: output of Add
  auto out = rep->run({f32_tensor({1, 4}, x)}, ro);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "a");
  std::vector<float> expect = {1.5f, -1.f, 5.f, 0.f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out[0].second.data<float>()[i], expect[size_t(i)]);
  ro.last_layers = -4;
  EXPECT_NE(error_of([&] { rep->run({f32_tensor({1, 4}, x)}, ro); }).find("leaves no node"), std::string::npos);
}

// Rep::nodes() lists the order last_layers counts: the file's order (a
// Constant written late stays late, where a queue of ready nodes moved every
// Constant first), and last_node cuts after a node by name.
TEST(Backend, NodesListTheOrderLastLayersCounts) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 4})
      .node("Relu", {"x"}, {"r"}, "relu")
      .node("Constant", {}, {"b"}, "bias")
      .node("Add", {"r", "b"}, {"a"}, "add")
      .node("Neg", {"a"}, {"y"}, "neg")
      .output("y", SINGA_ONNX_FLOAT, {1, 4});
  auto* value = m.g->mutable_node(1)->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  *value->mutable_t() = singa::onnx::to_proto(f32_tensor({4}, {1, 1, 1, 1}), "");
  auto rep = singa::onnx::prepare_bytes(m.bytes());
  const auto nodes = rep->nodes();
  ASSERT_EQ(nodes.size(), 4u);
  const char* names[] = {"relu", "bias", "add", "neg"};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(nodes[i].name, names[i]);
  EXPECT_EQ(nodes[2].op_type, "Add");
  ASSERT_EQ(nodes[2].outputs.size(), 1u);
  EXPECT_EQ(nodes[2].outputs[0].name, "a");
  EXPECT_EQ(nodes[2].outputs[0].dims, (std::vector<int64_t>{1, 4}));

  std::vector<float> x = {1, -2, 3, -4};
  singa::onnx::RunOptions ro;
  ro.last_layers = -2;  // stops after "bias", the second node in the file
  auto out = rep->run({f32_tensor({1, 4}, x)}, ro);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "b");
  ro.last_layers = 0;
  ro.last_node = "add";
  out = rep->run({f32_tensor({1, 4}, x)}, ro);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "a");
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[0], 2.f);
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[1], 1.f);
  ro.last_node = "nowhere";
  EXPECT_NE(error_of([&] { rep->run({f32_tensor({1, 4}, x)}, ro); }).find("names no node"), std::string::npos);
  ro.last_node = "add";
  ro.last_layers = -1;
  EXPECT_NE(error_of([&] { rep->run({f32_tensor({1, 4}, x)}, ro); }).find("not both"), std::string::npos);
}

TEST(Backend, AllOutputsReturnsEveryIntermediate) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  singa::onnx::RunOptions ro;
  ro.all_outputs = true;
  auto out = rep->run({f32_tensor({1, 4}, {1, -2, 3, -4})}, ro);
  std::vector<std::string> names;
  for (auto& kv : out) names.push_back(kv.first);
  EXPECT_EQ(names, (std::vector<std::string>{"r", "a", "m", "y"}));
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[1], 0.f);  // relu(-2)
}

TEST(Backend, ParametersAreTheInitializers) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  auto p = rep->parameters();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p["W"].shape(), (singa::Shape{4, 2}));
}

TEST(Backend, WrongInputsAreRefusedBeforeRunning) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  EXPECT_NE(error_of([&] { rep->run(std::vector<Tensor>{}); }).find("input 'x' is missing"), std::string::npos);
  auto i64 = Tensor::from_vector<int64_t>({1, 4}, SINGA_ONNX_INT64, {1, 2, 3, 4});
  EXPECT_NE(error_of([&] { rep->run({i64}); }).find("element type int64"), std::string::npos);
  EXPECT_NE(error_of([&] { rep->run({f32_tensor({4}, {1, 2, 3, 4})}); }).find("expects rank 2"), std::string::npos);
  EXPECT_NE(error_of([&] { rep->run({f32_tensor({1, 5}, {1, 2, 3, 4, 5})}); }).find("dimension 1"), std::string::npos);
  std::map<std::string, Tensor> named{{"x", f32_tensor({1, 4}, {1, 2, 3, 4})}, {"bogus", f32_tensor({1}, {1})}};
  EXPECT_NE(error_of([&] { rep->run(named); }).find("no input named 'bogus'"), std::string::npos);
  // still usable afterwards
  EXPECT_EQ(rep->run({f32_tensor({1, 4}, {1, 2, 3, 4})}).size(), 1u);
}

TEST(Backend, BadModelsGiveClearErrors) {
  ensure_loaded();
  EXPECT_NE(error_of([] { singa::onnx::prepare(std::string("/nonexistent/model.onnx")); }).find("no such file"), std::string::npos);
  EXPECT_NE(error_of([] { singa::onnx::prepare_bytes(""); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { singa::onnx::prepare_bytes("\x08\x96\x01 this is not a model at all"); }).find("not"), std::string::npos);
  std::string good = mlp().bytes();
  EXPECT_NE(error_of([&] { singa::onnx::prepare_bytes(good.substr(0, good.size() / 2)); }), "(no error)");

  ModelBuilder unknown;
  unknown.input("x", SINGA_ONNX_FLOAT, {2}).node("FrobnicateTheTensor", {"x"}, {"y"}, "frob").output("y", SINGA_ONNX_FLOAT, {2});
  singa::onnx::PrepareOptions nocheck;
  nocheck.check_model = false;
  std::string err = error_of([&] { singa::onnx::prepare_bytes(unknown.bytes(), nocheck); });
  EXPECT_NE(err.find("frob"), std::string::npos) << err;
  EXPECT_NE(err.find("FrobnicateTheTensor"), std::string::npos) << err;
  err = error_of([&] { singa::onnx::prepare_bytes(unknown.bytes()); });
  EXPECT_NE(err.find("FrobnicateTheTensor"), std::string::npos) << err;

  ModelBuilder dangling;
  dangling.input("x", SINGA_ONNX_FLOAT, {2}).node("Add", {"x", "ghost"}, {"y"}, "adder").output("y", SINGA_ONNX_FLOAT);
  err = error_of([&] { singa::onnx::prepare_bytes(dangling.bytes(), nocheck); });
  EXPECT_NE(err.find("'ghost'"), std::string::npos) << err;

  ModelBuilder cycle;
  cycle.input("x", SINGA_ONNX_FLOAT, {2})
      .node("Add", {"x", "b"}, {"a"}, "n1")
      .node("Relu", {"a"}, {"b"}, "n2")
      .output("b", SINGA_ONNX_FLOAT);
  err = error_of([&] { singa::onnx::prepare_bytes(cycle.bytes(), nocheck); });
  EXPECT_NE(err.find("cycle"), std::string::npos) << err;

  ModelBuilder dup;
  dup.input("x", SINGA_ONNX_FLOAT, {2}).node("Relu", {"x"}, {"y"}, "a").node("Neg", {"x"}, {"y"}, "b").output("y", SINGA_ONNX_FLOAT);
  err = error_of([&] { singa::onnx::prepare_bytes(dup.bytes(), nocheck); });
  EXPECT_NE(err.find("already produced"), std::string::npos) << err;

  ModelBuilder badinit;
  auto p = singa::onnx::to_proto(f32_tensor({4}, {1, 2, 3, 4}), "w");
  p.mutable_raw_data()->resize(10);
  badinit.input("x", SINGA_ONNX_FLOAT, {4}).node("Add", {"x", "w"}, {"y"}).output("y", SINGA_ONNX_FLOAT);
  *badinit.g->add_initializer() = p;
  err = error_of([&] { singa::onnx::prepare_bytes(badinit.bytes(), nocheck); });
  EXPECT_NE(err.find("initializer 'w'"), std::string::npos) << err;
}

TEST(Backend, NewerOpsetThanAnyKernelIsNamed) {
  ensure_loaded();
  ModelBuilder m(99);
  m.input("x", SINGA_ONNX_FLOAT, {2}).node("Relu", {"x"}, {"y"}, "r").output("y", SINGA_ONNX_FLOAT);
  singa::onnx::PrepareOptions nocheck;
  nocheck.check_model = false;
  std::string err = error_of([&] { singa::onnx::prepare_bytes(m.bytes(), nocheck); });
  // Newer than the table of op versions: refused by name, with the op's versions.
  EXPECT_NE(err.find("opset 99"), std::string::npos) << err;
  EXPECT_NE(err.find("newer than supported"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu has versions 1, 6, 13, 14"), std::string::npos) << err;
}

TEST(Backend, UnknownDeviceIsAnError) {
  ensure_loaded();
  singa::onnx::PrepareOptions opt;
  opt.device = "tpu:0";
  std::string err = error_of([&] { singa::onnx::prepare_bytes(mlp().bytes(), opt); });
  EXPECT_NE(err.find("device 'tpu'"), std::string::npos) << err;
  opt.device = "cpu:7";
  err = error_of([&] { singa::onnx::prepare_bytes(mlp().bytes(), opt); });
  EXPECT_NE(err.find("cpu:7"), std::string::npos) << err;
}

TEST(Backend, ConcurrentRunsGiveSingleThreadedResults) {
  ensure_loaded();
  auto rep = singa::onnx::prepare_bytes(mlp().bytes());
  const int kThreads = 8, kIters = 50;
  std::vector<std::vector<float>> inputs(kThreads), expect(kThreads);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3, 3);
  for (int t = 0; t < kThreads; ++t) {
    inputs[size_t(t)].resize(size_t(4 * (t + 1)));
    for (auto& v : inputs[size_t(t)]) v = u(rng);
    auto out = rep->run({f32_tensor({t + 1, 4}, inputs[size_t(t)])});
    expect[size_t(t)].assign(out[0].second.data<float>(), out[0].second.data<float>() + out[0].second.numel());
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        auto out = rep->run({f32_tensor({t + 1, 4}, inputs[size_t(t)])});
        const float* y = out[0].second.data<float>();
        for (size_t k = 0; k < expect[size_t(t)].size(); ++k)
          if (y[k] != expect[size_t(t)][k]) ++mismatches[size_t(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
}

// A device without a kernel for most ops: those nodes fall back to the CPU
// with copies at the boundary, the placement says so, and results match.
TEST(Backend, FallbackToCpuInsertsCopies) {
  ensure_loaded();
  auto& rt = singa::Runtime::instance();
  if (!rt.device("fakeaccel")) {
    auto info = rt.load_plugin(std::string(TEST_PLUGIN_DIR) + "/singa_test_fake_accel.so");
    ASSERT_TRUE(info.loaded) << info.error;
  }
  std::vector<float> x = {1, -2, 3, -4, 0.5f, 6, -7, 8};
  auto cpu = singa::onnx::prepare_bytes(mlp().bytes())->run({f32_tensor({2, 4}, x)});

  singa::onnx::PrepareOptions opt;
  opt.device = "fakeaccel";
  auto rep = singa::onnx::prepare_bytes(mlp().bytes(), opt);
  ASSERT_EQ(rep->placement().size(), 4u);
  EXPECT_EQ(rep->placement()[0].device, "fakeaccel");  // Relu
  EXPECT_EQ(rep->placement()[0].plugin, "test_fake_accel");
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(rep->placement()[i].device, "cpu") << rep->placement()[i].op_type;

  ModelBuilder probe;
  probe.model.add_opset_import()->set_domain("com.singa.test");
  probe.model.mutable_opset_import(1)->set_version(1);
  probe.node("FakeAccelCopies", {}, {"n"}).output("n", SINGA_ONNX_INT64, {});
  probe.last()->set_domain("com.singa.test");
  singa::onnx::PrepareOptions nocheck;
  nocheck.check_model = false;
  auto counter = singa::onnx::prepare_bytes(probe.bytes(), nocheck);
  auto copies = [&] { return counter->run(std::vector<Tensor>{})[0].second.data<int64_t>()[0]; };
  int64_t before = copies();
  auto out = rep->run({f32_tensor({2, 4}, x)});
  // x goes to the device, relu's output comes back for the CPU's Add.
  EXPECT_EQ(copies() - before, 2);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out[0].second.data<float>()[i], cpu[0].second.data<float>()[i]);

  opt.fallback = false;
  std::string err = error_of([&] { singa::onnx::prepare_bytes(mlp().bytes(), opt); });
  EXPECT_NE(err.find("no kernel on device 'fakeaccel'"), std::string::npos) << err;
  EXPECT_NE(err.find("fallback disabled"), std::string::npos) << err;
}

// Large initializers (>= 64 KiB) become tensors before shape inference and
// leave the proto (core/graph.cpp): shapes are still inferred through them,
// the consuming overload gives the same Rep as the copying one, and a large
// initializer whose data disagrees with its shape is still named.
TEST(Backend, LargeInitializersLeaveTheProtoEarly) {
  ensure_loaded();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Tensor w({256, 128}, SINGA_ONNX_FLOAT);  // 128 KiB
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = u(rng);
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, 256}, {"N"})
      .initializer("W", w)
      .initializer("shape", Tensor::from_vector({2}, SINGA_ONNX_INT64, std::vector<int64_t>{-1, 64}))
      .node("MatMul", {"x", "W"}, {"h"})
      .node("Reshape", {"h", "shape"}, {"y"})
      .output("y", SINGA_ONNX_FLOAT, {-1, 64}, {"M"});
  Tensor x({3, 256}, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  auto copied = singa::onnx::prepare(m.model);
  ::onnx::ModelProto moved = m.model;
  auto consumed = singa::onnx::prepare(std::move(moved));
  auto a = copied->run({x}), b = consumed->run({x});
  ASSERT_EQ(a[0].second.shape(), (singa::Shape{6, 64}));
  ASSERT_EQ(b[0].second.shape(), a[0].second.shape());
  double ref = 0;  // y[0][0] = x[0] . W[:, 0]
  for (int64_t k = 0; k < 256; ++k) ref += double(x.data<float>()[k]) * w.data<float>()[k * 128];
  EXPECT_NEAR(a[0].second.data<float>()[0], ref, 1e-4);
  for (int64_t i = 0; i < a[0].second.numel(); ++i) ASSERT_EQ(a[0].second.data<float>()[i], b[0].second.data<float>()[i]);
  EXPECT_EQ(copied->parameters().at("W").numel(), 256 * 128);
  // The matmul's output shape came from inference with W's data gone.
  const auto& info = consumed->outputs()[0];
  EXPECT_TRUE(info.rank_known);

  // A large initializer with too few bytes: the error names it.
  ::onnx::ModelProto bad = m.model;
  for (auto& t : *bad.mutable_graph()->mutable_initializer())
    if (t.name() == "W") t.mutable_raw_data()->resize(t.raw_data().size() - 4);
  singa::onnx::PrepareOptions no_check;
  no_check.check_model = false;
  try {
    singa::onnx::prepare(bad, no_check);
    FAIL() << "a short initializer was accepted";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("initializer 'W'"), std::string::npos) << e.what();
  }
}

// RoiAlign with hostile regions (found by fuzz_model): a NaN coordinate
// samples nothing (zeros, no undefined conversion), a region of 1e30 pixels
// is refused before it asks for that many samples.
// Shrink on integers computes in double; a result past the type's range
// saturates instead of being cast (undefined; found by fuzz_model).
TEST(Backend, ShrinkOnIntegersSaturates) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_INT8, {4});
  m.node("Shrink", {"x"}, {"y"}, "shrink");
  m.output("y", SINGA_ONNX_INT8, {4});
  for (const auto& [name, value] : {std::pair<const char*, float>{"bias", 4.85e33f}, {"lambd", 1.f}}) {
    auto* a = m.last()->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  auto rep = singa::onnx::prepare_bytes(m.bytes());
  Tensor x = Tensor::from_vector({4}, SINGA_ONNX_INT8, std::vector<int8_t>{-5, 0, 1, 5});
  Tensor y = rep->run({x})[0].second;
  EXPECT_EQ(y.data<int8_t>()[0], 127);   // -5 + 4.85e33
  EXPECT_EQ(y.data<int8_t>()[1], 0);     // inside [-lambd, lambd]
  EXPECT_EQ(y.data<int8_t>()[2], 0);
  EXPECT_EQ(y.data<int8_t>()[3], -128);  // 5 - 4.85e33
}

TEST(Backend, RoiAlignHostileRegions) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 1, 4, 4}).input("rois", SINGA_ONNX_FLOAT, {1, 4}).input("idx", SINGA_ONNX_INT64, {1});
  m.node("RoiAlign", {"x", "rois", "idx"}, {"y"}, "roi");
  m.output("y", SINGA_ONNX_FLOAT, {1, 1, 1, 1});
  auto* a = m.last()->add_attribute();
  a->set_name("output_height");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(1);
  auto* b = m.last()->add_attribute();
  b->set_name("output_width");
  b->set_type(::onnx::AttributeProto::INT);
  b->set_i(1);
  auto rep = singa::onnx::prepare_bytes(m.bytes());
  Tensor x({1, 1, 4, 4}, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < 16; ++i) x.data<float>()[i] = float(i);
  Tensor idx = Tensor::from_vector({1}, SINGA_ONNX_INT64, std::vector<int64_t>{0});
  auto rois = [](float a, float b, float c, float d) { return Tensor::from_vector({1, 4}, SINGA_ONNX_FLOAT, std::vector<float>{a, b, c, d}); };
  // A normal region still averages the pixels it covers.
  EXPECT_GT(rep->run({x, rois(0, 0, 3, 3), idx})[0].second.data<float>()[0], 0.f);
  EXPECT_EQ(rep->run({x, rois(std::nanf(""), 0, 3, 3), idx})[0].second.data<float>()[0], 0.f);
  try {
    rep->run({x, rois(0, 0, 1e30f, 1e30f), idx});
    FAIL() << "a region of 1e30 pixels was sampled";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("samples per bin"), std::string::npos) << e.what();
  }
  // The Rep still runs afterwards.
  EXPECT_GT(rep->run({x, rois(0, 0, 3, 3), idx})[0].second.data<float>()[0], 0.f);
}

// Resize with hostile scales and regions: an infinite scale is refused by
// name, a NaN crop region gives the extrapolation value, and neither reaches
// an undefined float-to-integer conversion.
TEST(Backend, ResizeHostileScalesAndRegions) {
  ensure_loaded();
  auto build = [](const char* coord) {
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {1, 1, 2, 2}).input("roi", SINGA_ONNX_FLOAT, {8}).input("scales", SINGA_ONNX_FLOAT, {4});
    m.node("Resize", {"x", "roi", "scales"}, {"y"}, "resize");
    auto* a = m.last()->add_attribute();
    a->set_name("coordinate_transformation_mode");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(coord);
    auto* mode = m.last()->add_attribute();
    mode->set_name("mode");
    mode->set_type(::onnx::AttributeProto::STRING);
    mode->set_s("linear");
    m.output("y", SINGA_ONNX_FLOAT, {-1, -1, -1, -1}, {"a", "b", "c", "d"});
    return singa::onnx::prepare_bytes(m.bytes());
  };
  Tensor x = Tensor::from_vector({1, 1, 2, 2}, SINGA_ONNX_FLOAT, std::vector<float>{1, 2, 3, 4});
  auto half_pixel = build("half_pixel");
  try {
    half_pixel->run({x, f32_tensor({8}, {0, 0, 0, 0, 1, 1, 1, 1}), f32_tensor({4}, {1, 1, INFINITY, 1})});
    FAIL() << "an infinite scale was accepted";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("scales give axis 2"), std::string::npos) << e.what();
  }
  auto ok = half_pixel->run({x, f32_tensor({8}, {0, 0, 0, 0, 1, 1, 1, 1}), f32_tensor({4}, {1, 1, 2, 2})});
  EXPECT_EQ(ok[0].second.shape(), (singa::Shape{1, 1, 4, 4}));
  auto crop = build("tf_crop_and_resize");
  auto out = crop->run({x, f32_tensor({8}, {0, 0, NAN, 0, 1, 1, 1, 1}), f32_tensor({4}, {1, 1, 2, 2})});
  ASSERT_EQ(out[0].second.shape(), (singa::Shape{1, 1, 4, 4}));
  EXPECT_EQ(out[0].second.data<float>()[0], 0.f);  // extrapolation_value's default
}

// A kernel that declines a node at create (UNIMPLEMENTED) makes way for the
// next candidate: here the CPU's Relu, or an error naming the decline when
// fallback is off.
TEST(Backend, DecliningKernelFallsThrough) {
  ensure_loaded();
  auto& rt = singa::Runtime::instance();
  if (!rt.device("fakeaccel")) {
    auto info = rt.load_plugin(std::string(TEST_PLUGIN_DIR) + "/singa_test_fake_accel.so");
    ASSERT_TRUE(info.loaded) << info.error;
  }
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 2, 2}).node("Relu", {"x"}, {"y"}, "relu3d").output("y", SINGA_ONNX_FLOAT, {1, 2, 2});
  singa::onnx::PrepareOptions opt;
  opt.device = "fakeaccel";
  auto rep = singa::onnx::prepare_bytes(m.bytes(), opt);
  ASSERT_EQ(rep->placement().size(), 1u);
  EXPECT_EQ(rep->placement()[0].device, "cpu");
  auto out = rep->run({f32_tensor({1, 2, 2}, {1, -2, 3, -4})});
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[1], 0.f);
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[2], 3.f);

  opt.fallback = false;
  std::string err = error_of([&] { singa::onnx::prepare_bytes(m.bytes(), opt); });
  EXPECT_NE(err.find("relu3d"), std::string::npos) << err;
  EXPECT_NE(err.find("declined"), std::string::npos) << err;
  EXPECT_NE(err.find("rank <= 2"), std::string::npos) << err;
}
