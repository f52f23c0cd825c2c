// The OpenCL plugin: its device API and kernels must agree with the CPU on
// small graphs and on a PyTorch-exported ResNet-18, with every heavy node
// placed on the device. Without an OpenCL device (no ICD, no platform) the
// device tests skip with the reason, and the plugin must still load and say
// why the device is unavailable.
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_float;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::add_string;

constexpr int32_t kF = SINGA_ONNX_FLOAT;

singa::Runtime& runtime() {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  return rt;
}

// Empty when an OpenCL device is usable, else why not.
std::string opencl_missing() {
  singa::Device* d = runtime().device("opencl");
  if (!d) return "the opencl plugin is not loaded (built without an OpenCL ICD loader?)";
  std::string reason;
  if (d->count(&reason) <= 0) return reason.empty() ? "no OpenCL device" : reason;
  return "";
}

#define REQUIRE_OPENCL()                                          \
  do {                                                            \
    const std::string why = opencl_missing();                     \
    if (!why.empty()) GTEST_SKIP() << "no OpenCL device: " << why; \
  } while (0)

// Random floats whose seed also depends on the size, so that inputs of
// different shapes differ.
Tensor random_tensor(const std::vector<int64_t>& dims, float lo = -1.f, float hi = 1.f, unsigned seed = 7) {
  return testing_util::random_floats(dims, seed + unsigned(singa::shape_numel(dims)), lo, hi);
}

// A graph output of known rank and unknown (symbolic) dims.
void out(ModelBuilder& m, const std::string& name, size_t rank, int32_t dtype = kF) {
  std::vector<std::string> params;
  for (size_t i = 0; i < rank; ++i) params.push_back(name + "_d" + std::to_string(i));
  m.output(name, dtype, std::vector<int64_t>(rank, -1), params);
}

std::shared_ptr<singa::onnx::Rep> prepare(const ModelBuilder& m, const std::string& device, bool fallback) {
  singa::onnx::PrepareOptions opt;
  opt.device = device;
  opt.fallback = fallback;
  return singa::onnx::prepare(m.model, opt, "opencl_test");
}

void expect_close(const singa::onnx::NamedTensors& got, const singa::onnx::NamedTensors& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + got[i].first);
    Tensor g = got[i].second.to_host(), w = want[i].second.to_host();
    ASSERT_EQ(g.shape(), w.shape());
    ASSERT_EQ(g.dtype(), w.dtype());
    for (int64_t k = 0; k < g.numel(); ++k) {
      double a = 0, b = 0;
      switch (g.dtype()) {
        case SINGA_ONNX_FLOAT: a = g.data<float>()[k]; b = w.data<float>()[k]; break;
        case SINGA_ONNX_INT64: a = double(g.data<int64_t>()[k]); b = double(w.data<int64_t>()[k]); break;
        case SINGA_ONNX_BOOL: a = g.data<uint8_t>()[k]; b = w.data<uint8_t>()[k]; break;
        default: FAIL() << "unexpected dtype " << g.dtype();
      }
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << "element " << k;
        continue;
      }
      ASSERT_NEAR(a, b, tol * (1 + std::fabs(b))) << "element " << k;
    }
  }
}

// Runs m on opencl with no fallback (every node must have an opencl kernel)
// and on the cpu, and compares.
void expect_same_as_cpu(const ModelBuilder& m, const std::vector<Tensor>& inputs, double tol = 1e-4) {
  auto cpu = prepare(m, "cpu", false);
  auto cl = prepare(m, "opencl", false);
  for (const auto& p : cl->placement()) EXPECT_EQ(p.device.substr(0, 6), "opencl") << p.node << " (" << p.op_type << ")";
  auto want = cpu->run(inputs);
  auto got = cl->run(inputs);
  expect_close(got, want, tol);
}

// ------------------------------------------------------------------ device

// The plugin is built only where the OpenCL ICD loader is (meson option
// `opencl`); elsewhere these tests have nothing to check.
bool plugin_built() {
  for (const auto& p : runtime().plugins())
    if (p.name == "opencl") return true;
  return false;
}

TEST(OpenCLPlugin, RegistersTheDeviceAndItsKernels) {
  if (!plugin_built()) GTEST_SKIP() << "singa_opencl.so is not built (no OpenCL ICD loader, or -Dopencl=disabled)";
  singa::Device* d = runtime().device("opencl");
  ASSERT_NE(d, nullptr) << "singa_opencl.so was loaded but registered no opencl device";
  EXPECT_EQ(d->dl_device_type(), int32_t(kDLOpenCL));
  EXPECT_FALSE(d->host_addressable());
  std::set<std::string> ops;
  for (const char* op : {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Relu",
                         "Softmax", "ReduceMean", "Concat", "Transpose", "BatchNormalization", "Dropout"}) {
    bool found = false;
    for (const auto* k : runtime().kernels("", op)) found = found || k->device == "opencl";
    EXPECT_TRUE(found) << op;
  }
}

// Without any ICD (OCL_ICD_VENDORS pointing at an empty folder) the plugin
// still loads and `singa plugins` reports the device unavailable with a reason.
TEST(OpenCLPlugin, ReportsAMissingPlatform) {
  if (!plugin_built()) GTEST_SKIP() << "singa_opencl.so is not built (no OpenCL ICD loader, or -Dopencl=disabled)";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  std::string root(exe);
  for (int i = 0; i < 3; ++i) root = root.substr(0, root.rfind('/'));  // <build>/tests/unit/test_opencl
  const std::string singa = root + "/tools/singa";
  if (access(singa.c_str(), X_OK) != 0) GTEST_SKIP() << singa << " is not built";
  char dir[] = "/tmp/singa_no_icd_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string cmd = "OCL_ICD_VENDORS=" + std::string(dir) + " SINGA_PLUGIN_PATH= " + singa + " plugins 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t got = fread(buf, 1, sizeof(buf), p)) out.append(buf, got);
  pclose(p);  // its status also reflects other plugins; the opencl line is what matters
  rmdir(dir);
  const size_t at = out.find("opencl: unavailable");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_NE(out.find("no OpenCL platform", at), std::string::npos) << out;
}

TEST(OpenCLDevice, CopiesFillsAndCachesBuffers) {
  REQUIRE_OPENCL();
  singa::Device* d = runtime().device("opencl");
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  Tensor host = Tensor::from_vector({10, 100}, kF, v);
  Tensor dev = host.to(d, 0);
  EXPECT_FALSE(dev.on_host());
  Tensor twin = dev.clone();  // device-to-device
  Tensor back = twin.to_host();
  ASSERT_EQ(back.shape(), host.shape());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(back.data<float>()[i], v[i]);

  // memset at an offset, then read the whole buffer back.
  void* buf = d->alloc(0, 64);
  std::vector<uint8_t> ones(64, 1), got(64, 0);
  d->copy(0, buf, 0, ones.data(), 0, 64, SINGA_COPY_HOST_TO_DEVICE);
  d->memset(0, buf, 16, 0xab, 32);
  d->copy(0, got.data(), 0, buf, 0, 64, SINGA_COPY_DEVICE_TO_HOST);
  d->synchronize(0);
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], (i >= 16 && i < 48) ? 0xab : 1) << i;
  d->free(0, buf);
  // A freed buffer of the same size comes back from the pool.
  void* again = d->alloc(0, 64);
  EXPECT_EQ(again, buf);
  d->free(0, again);
  size_t free_b = 0, total_b = 0;
  const singa_device_def& def = d->def();
  ASSERT_NE(def.memory_info, nullptr);
  ASSERT_EQ(def.memory_info(def.self, 0, &free_b, &total_b), nullptr);
  EXPECT_GT(total_b, 0u);
  EXPECT_LE(free_b, total_b);
}

// ------------------------------------------------------------------ kernels

TEST(OpenCLKernels, Conv) {
  REQUIRE_OPENCL();
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
    std::vector<int64_t> strides, pads, dilations;
    std::string auto_pad;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 10}, {8, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, "", true},
      {{1, 4, 11, 12}, {6, 2, 3, 2}, 2, {2, 1}, {0, 1, 2, 0}, {2, 1}, "", false},
      {{2, 16, 7, 7}, {24, 16, 1, 1}, 1, {}, {}, {}, "", true},            // pointwise: no im2col
      {{1, 8, 8, 8}, {8, 1, 3, 3}, 8, {1, 1}, {1, 1, 1, 1}, {}, "", true},  // depthwise
      {{1, 3, 10, 7}, {70, 3, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", true},  // tiled GEMM (M >= 32)
      {{2, 3, 20}, {5, 3, 4}, 1, {2}, {1, 2}, {1}, "", true},                 // 1-D
      {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, 1, {1, 2, 1}, {}, {}, "", false},    // 3-D
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("X " + singa::shape_to_string(c.x) + " W " + singa::shape_to_string(c.w));
    ModelBuilder m(11);
    m.input("x", kF, c.x);
    out(m, "y", c.x.size());
    m.initializer("w", random_tensor(c.w));
    std::vector<std::string> ins{"x", "w"};
    if (c.bias) {
      m.initializer("b", random_tensor({c.w[0]}));
      ins.push_back("b");
    }
    m.node("Conv", ins, {"y"});
    if (c.group != 1) add_int(m.last(), "group", c.group);
    if (!c.strides.empty()) add_ints(m.last(), "strides", c.strides);
    if (!c.pads.empty()) add_ints(m.last(), "pads", c.pads);
    if (!c.dilations.empty()) add_ints(m.last(), "dilations", c.dilations);
    if (!c.auto_pad.empty()) add_string(m.last(), "auto_pad", c.auto_pad);
    expect_same_as_cpu(m, {random_tensor(c.x)});
  }
}

TEST(OpenCLKernels, GemmWithTransposesAndBias) {
  REQUIRE_OPENCL();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int64_t M : {3, 70}) {
        const int64_t K = 33, N = 65;
        SCOPED_TRACE("transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " M " + std::to_string(M));
        ModelBuilder m(13);
        m.input("a", kF, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
        out(m, "y", 2);
        m.initializer("b", random_tensor(tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}));
        m.initializer("c", random_tensor({N}));
        m.node("Gemm", {"a", "b", "c"}, {"y"});
        add_int(m.last(), "transA", int64_t(ta));
        add_int(m.last(), "transB", int64_t(tb));
        add_float(m.last(), "alpha", 0.5f);
        add_float(m.last(), "beta", 2.0f);
        expect_same_as_cpu(m, {random_tensor(ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K})});
      }
}

TEST(OpenCLKernels, MatMulBroadcasting) {
  REQUIRE_OPENCL();
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 1, 5, 7}, {3, 7, 4}},   // batch broadcast both ways
      {{4, 40, 33}, {33, 50}},     // shared B: one tall product
      {{7}, {7, 3}},               // vector @ matrix
      {{2, 5, 7}, {7}},            // matrix @ vector
      {{2, 3, 2, 4, 5}, {2, 1, 2, 5, 6}},  // more batch groups than one launch takes
      {{64, 48}, {48, 80}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(singa::shape_to_string(c.first) + " @ " + singa::shape_to_string(c.second));
    ModelBuilder m(13);
    m.input("a", kF, c.first).input("b", kF, c.second);
    out(m, "y", std::max(c.first.size(), c.second.size()) - (c.first.size() == 1 || c.second.size() == 1 ? 1 : 0));
    m.node("MatMul", {"a", "b"}, {"y"});
    expect_same_as_cpu(m, {random_tensor(c.first), random_tensor(c.second, -1, 1, 99)});
  }
}

TEST(OpenCLKernels, Pools) {
  REQUIRE_OPENCL();
  {
    ModelBuilder m(12);
    m.input("x", kF, {2, 3, 9, 8});
    out(m, "y", 4);
    out(m, "i", 4, SINGA_ONNX_INT64);
    m.node("MaxPool", {"x"}, {"y", "i"});
    add_ints(m.last(), "kernel_shape", {3, 2});
    add_ints(m.last(), "strides", {2, 2});
    add_ints(m.last(), "pads", {1, 0, 1, 1});
    add_int(m.last(), "ceil_mode", 1);
    expect_same_as_cpu(m, {random_tensor({2, 3, 9, 8})});
  }
  for (int64_t include_pad : {0, 1}) {
    ModelBuilder m(11);
    m.input("x", kF, {1, 2, 7, 7});
    out(m, "y", 4);
    m.node("AveragePool", {"x"}, {"y"});
    add_ints(m.last(), "kernel_shape", {3, 3});
    add_ints(m.last(), "strides", {2, 2});
    add_ints(m.last(), "pads", {1, 1, 1, 1});
    add_int(m.last(), "count_include_pad", include_pad);
    expect_same_as_cpu(m, {random_tensor({1, 2, 7, 7})});
  }
  {
    ModelBuilder m(13);
    m.input("x", kF, {2, 5, 6, 7});
    out(m, "avg", 4);
    out(m, "max", 4);
    m.node("GlobalAveragePool", {"x"}, {"avg"});
    m.node("GlobalMaxPool", {"x"}, {"max"});
    expect_same_as_cpu(m, {random_tensor({2, 5, 6, 7})});
  }
}

TEST(OpenCLKernels, BinaryOpsBroadcast) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("a", kF, {2, 3, 4}).input("b", kF, {3, 1}).input("s", kF, {}).input("p", kF, {2, 3, 4});
  for (const char* o : {"add", "sub", "mul", "div", "pow", "mid"}) out(m, o, 3);
  m.node("Add", {"a", "b"}, {"add"});
  m.node("Sub", {"a", "s"}, {"sub"});
  m.node("Mul", {"a", "p"}, {"mul"});
  m.node("Div", {"b", "a"}, {"div"});
  m.node("Pow", {"p", "a"}, {"pow"});
  m.initializer("m", random_tensor({2, 1, 4}));
  m.node("Mul", {"a", "m"}, {"mid"});
  expect_same_as_cpu(m, {random_tensor({2, 3, 4}), random_tensor({3, 1}, 0.5f, 2.f), random_tensor({}),
                         random_tensor({2, 3, 4}, 0.1f, 3.f, 5)});
}

TEST(OpenCLKernels, UnaryActivations) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("x", kF, {3, 50}).input("pos", kF, {3, 50}).input("lo", kF, {}).input("hi", kF, {});
  const std::vector<std::string> ops = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Elu", "Exp", "Neg", "Abs"};
  for (const auto& op : ops) {
    out(m, op, 2);
    m.node(op, {"x"}, {op});
  }
  add_float(m.g->mutable_node(3), "alpha", 0.2f);
  for (const char* o : {"Log", "Sqrt", "Clip", "ClipLow"}) out(m, o, 2);
  m.node("Log", {"pos"}, {"Log"});
  m.node("Sqrt", {"pos"}, {"Sqrt"});
  m.node("Clip", {"x", "lo", "hi"}, {"Clip"});
  m.node("Clip", {"x", "lo"}, {"ClipLow"});
  expect_same_as_cpu(m, {random_tensor({3, 50}, -4, 4), random_tensor({3, 50}, 0.01f, 5.f, 3),
                         Tensor::from_vector<float>({}, kF, {-0.5f}), Tensor::from_vector<float>({}, kF, {0.25f})});
}

TEST(OpenCLKernels, SoftmaxBothForms) {
  REQUIRE_OPENCL();
  for (int64_t opset : {11, 13}) {
    ModelBuilder m(opset);
    m.input("x", kF, {2, 3, 5});
    out(m, "a", 3);
    out(m, "b", 3);
    m.node("Softmax", {"x"}, {"a"});
    add_int(m.last(), "axis", 1);
    m.node("Softmax", {"x"}, {"b"});
    expect_same_as_cpu(m, {random_tensor({2, 3, 5}, -3, 3)});
  }
}

TEST(OpenCLKernels, Reductions) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("x", kF, {2, 3, 4, 5});
  out(m, "mean", 2);
  for (const char* o : {"sum", "max", "all"}) out(m, o, 4);
  m.node("ReduceMean", {"x"}, {"mean"});
  add_ints(m.last(), "axes", {1, -1});
  add_int(m.last(), "keepdims", 0);
  m.initializer("axes", Tensor::from_vector<int64_t>({2}, SINGA_ONNX_INT64, {0, 2}));
  m.node("ReduceSum", {"x", "axes"}, {"sum"});
  m.node("ReduceMax", {"x"}, {"max"});
  add_ints(m.last(), "axes", {2});
  m.node("ReduceMean", {"x"}, {"all"});
  expect_same_as_cpu(m, {random_tensor({2, 3, 4, 5})});
}

TEST(OpenCLKernels, ShapeOpsConcatTranspose) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("x", kF, {2, 3, 4}).input("y", kF, {2, 5, 4});
  for (const char* o : {"cat", "tr", "id", "drop"}) out(m, o, 3);
  out(m, "flat", 2);
  out(m, "sq", 2);
  m.node("Concat", {"x", "y", "x"}, {"cat"});
  add_int(m.last(), "axis", 1);
  m.node("Transpose", {"cat"}, {"tr"});
  add_ints(m.last(), "perm", {2, 0, 1});
  m.initializer("shape", Tensor::from_vector<int64_t>({3}, SINGA_ONNX_INT64, {4, 1, -1}));
  m.node("Reshape", {"tr", "shape"}, {"r"});
  m.initializer("ax", Tensor::from_vector<int64_t>({1}, SINGA_ONNX_INT64, {1}));
  m.node("Squeeze", {"r", "ax"}, {"sq"});
  m.node("Unsqueeze", {"sq", "ax"}, {"u"});
  m.node("Flatten", {"u"}, {"flat"});
  m.node("Identity", {"x"}, {"id"});
  m.node("Dropout", {"y"}, {"drop"});
  expect_same_as_cpu(m, {random_tensor({2, 3, 4}), random_tensor({2, 5, 4})});
}

TEST(OpenCLKernels, BatchNormInference) {
  REQUIRE_OPENCL();
  ModelBuilder m(15);
  m.input("x", kF, {2, 4, 3, 3});
  out(m, "y", 4);
  m.initializer("s", random_tensor({4}));
  m.initializer("b", random_tensor({4}));
  m.initializer("mu", random_tensor({4}));
  m.initializer("var", random_tensor({4}, 0.5f, 2.f));
  m.node("BatchNormalization", {"x", "s", "b", "mu", "var"}, {"y"});
  add_float(m.last(), "epsilon", 1e-3f);
  expect_same_as_cpu(m, {random_tensor({2, 4, 3, 3})});
}

// Unsupported element types fall back to the CPU instead of failing.
TEST(OpenCLKernels, OtherTypesFallBackToTheCpu) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("a", SINGA_ONNX_INT64, {4}).input("x", kF, {4});
  out(m, "s", 1, SINGA_ONNX_INT64);
  out(m, "y", 1);
  m.node("Add", {"a", "a"}, {"s"});
  m.node("Relu", {"x"}, {"y"});
  auto rep = prepare(m, "opencl", true);
  for (const auto& p : rep->placement())
    EXPECT_EQ(p.device.substr(0, p.op_type == "Add" ? 3 : 6), p.op_type == "Add" ? "cpu" : "opencl") << p.node;
  const std::vector<Tensor> inputs = {Tensor::from_vector<int64_t>({4}, SINGA_ONNX_INT64, {1, -2, 3, 4}),
                                      Tensor::from_vector<float>({4}, kF, {-1, 2, -3, 4})};
  auto out = rep->run(inputs);
  Tensor s = out[0].second.to_host(), y = out[1].second.to_host();
  EXPECT_EQ(s.data<int64_t>()[1], -4);
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[3], 4.f);
}

// One Rep, eight threads at once: the shared queue, program cache, kernel
// pool and buffer pool must keep every run's results apart.
TEST(OpenCLKernels, ConcurrentRunsOfOneRep) {
  REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("x", kF, {1, 4, 12, 12});
  out(m, "y", 2);
  m.initializer("w", random_tensor({16, 4, 3, 3}));
  m.initializer("fw", random_tensor({10, 16 * 36}));
  m.node("Conv", {"x", "w"}, {"c"});
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  m.node("MaxPool", {"r"}, {"p"});
  add_ints(m.last(), "kernel_shape", {2, 2});
  add_ints(m.last(), "strides", {2, 2});
  m.node("Flatten", {"p"}, {"f"});
  m.node("Gemm", {"f", "fw"}, {"y"});
  add_int(m.last(), "transB", 1);
  auto cpu = prepare(m, "cpu", false);
  auto cl = prepare(m, "opencl", false);
  std::vector<Tensor> inputs;
  std::vector<singa::onnx::NamedTensors> want, got(8);
  for (int t = 0; t < 8; ++t) {
    inputs.push_back(random_tensor({1, 4, 12, 12}, -1, 1, unsigned(100 + t)));
    want.push_back(cpu->run({inputs.back()}));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) got[size_t(t)] = cl->run({inputs[size_t(t)]});
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    expect_close(got[size_t(t)], want[size_t(t)]);
  }
}

// ------------------------------------------------------------------ ResNet-18

// The source tree, from this file's path as the compiler saw it (relative
// to the build folder, which holds this test at tests/unit/).
std::string source_file(const std::string& rel) {
  std::string self = __FILE__;
  if (self.empty() || self[0] != '/') {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return "";
    exe[n] = 0;
    std::string build(exe);
    for (int i = 0; i < 3; ++i) build = build.substr(0, build.rfind('/'));
    self = build + "/" + self;
  }
  return self.substr(0, self.rfind("/tests/unit/")) + "/" + rel;
}

TEST(OpenCLModels, ResNet18MatchesTheCpu) {
  REQUIRE_OPENCL();
  const std::string script = source_file("tests/models/make_models.py");
  if (access(script.c_str(), R_OK) != 0) GTEST_SKIP() << "model generator not found at " << script;
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 (with torch) is missing";
  char dir[] = "/tmp/singa_opencl_resnet_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string cmd = "/usr/bin/python3 " + script + " " + dir + "/cases --only resnet18_opset13 > " + dir +
                          "/log.txt 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(std::string(dir) + "/log.txt");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    std::system(("rm -rf " + std::string(dir)).c_str());
    if (text.find("No module named") != std::string::npos) GTEST_SKIP() << "torch/torchvision missing: " << text;
    FAIL() << "generating resnet18 failed: " << text;
  }
  const std::string model = std::string(dir) + "/cases/resnet18_opset13/model.onnx";
  Tensor x = singa::onnx::load_tensor_file(std::string(dir) + "/cases/resnet18_opset13/test_data_set_0/input_0.pb");
  singa::onnx::PrepareOptions opt;
  opt.device = "opencl";
  auto cl = singa::onnx::prepare(model, opt);
  opt.device = "cpu";
  auto cpu = singa::onnx::prepare(model, opt);
  std::system(("rm -rf " + std::string(dir)).c_str());
  const std::set<std::string> heavy = {"Conv", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Relu"};
  int on_device = 0;
  for (const auto& p : cl->placement()) {
    if (!heavy.count(p.op_type)) continue;
    EXPECT_EQ(p.device.substr(0, 6), "opencl") << p.node << " (" << p.op_type << ")";
    ++on_device;
  }
  EXPECT_GE(on_device, 40);  // 20 Conv, 17 Relu, 8 Add, MaxPool, GlobalAveragePool, Gemm
  expect_close(cl->run({x}), cpu->run({x}), 1e-4);
}

}  // namespace
