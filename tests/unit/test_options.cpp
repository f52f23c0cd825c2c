// Named options (PrepareOptions::options, docs/options.md): they reach a
// kernel's create through host->node_option, runtime options reach a plugin's
// init through host->runtime_option and fill every prepare, SINGA_OPTIONS adds
// to them, the
// CPU kernels read their path switches from them (every path matching a plain
// reference), and the retired environment switches change nothing. The CLI's
// --option, config file [options] and environment report are checked through
// the `singa` program of this build.
#include "plugin_fixture.hpp"

#include <singa/error.hpp>
#include <singa/optimize.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <sys/wait.h>

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_ints;
using testing_util::random_floats;

// Every test sees the build's plugins plus the option probe, and an
// environment without SINGA_OPTIONS unless it sets one.
class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("SINGA_OPTIONS");
    auto& rt = singa::Runtime::instance();
    rt.reset();
    singa::LoadOptions lo;
    lo.use_env = false;
    rt.load(lo);
    auto info = rt.load_plugin(plugin_test::test_plugin("option_probe"));
    ASSERT_TRUE(info.loaded) << info.error;
  }
  void TearDown() override {
    unsetenv("SINGA_OPTIONS");
    singa::Runtime::instance().reset();
  }
};

std::vector<float> probe(const std::map<std::string, std::string>& options, const std::vector<float>& x) {
  singa::onnx::PrepareOptions o;
  o.options = options;
  auto rep = singa::onnx::prepare(plugin_test::unary_model("OptionProbe", int64_t(x.size())).model, o);
  auto out = rep->run({Tensor::from_vector({int64_t(x.size())}, SINGA_ONNX_FLOAT, x)});
  const Tensor& y = out.at(0).second;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

// The message of the singa::Error that preparing with `options` throws ("" if none).
std::string prepare_error(const ModelBuilder& m, const std::map<std::string, std::string>& options) {
  singa::onnx::PrepareOptions o;
  o.options = options;
  try {
    singa::onnx::prepare_bytes(m.bytes(), o);
  } catch (const singa::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(Options, ReachTheKernelAtCreate) {
  EXPECT_EQ(probe({}, {1.f, 2.f}), (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(probe({{"test.offset", "5"}}, {1.f, 2.f}), (std::vector<float>{6.f, 7.f}));
  EXPECT_EQ(probe({{"test.offset", "-2"}, {"test.negate", "1"}}, {1.f, 2.f}), (std::vector<float>{1.f, 0.f}));
  EXPECT_EQ(probe({{"test.negate", "0"}, {"unrelated.key", "x"}}, {3.f}), (std::vector<float>{3.f}));
}

TEST_F(Options, EachPrepareKeepsItsOwn) {
  const auto model = plugin_test::unary_model("OptionProbe", 1).model;
  singa::onnx::PrepareOptions a, b;
  a.options["test.offset"] = "1";
  b.options["test.offset"] = "10";
  auto ra = singa::onnx::prepare(model, a), rb = singa::onnx::prepare(model, b);
  const Tensor x = Tensor::from_vector({1}, SINGA_ONNX_FLOAT, std::vector<float>{0.f});
  EXPECT_EQ(ra->run({x}).at(0).second.data<float>()[0], 1.f);
  EXPECT_EQ(rb->run({x}).at(0).second.data<float>()[0], 10.f);
}

TEST_F(Options, MalformedValuesFailPrepareNamingTheKey) {
  const ModelBuilder m = plugin_test::unary_model("OptionProbe", 2);
  for (const auto& [key, value] : std::map<std::string, std::string>{
           {"test.negate", "yes"}, {"test.offset", "5x"}, {"test.offset", "99999"}, {"test.offset", ""}}) {
    SCOPED_TRACE(key + "=" + value);
    const std::string err = prepare_error(m, {{key, value}});
    EXPECT_NE(err.find("option " + key), std::string::npos) << err;
  }
}

TEST_F(Options, TheEnvironmentAddsOptionsTheProgramDoesNotSet) {
  setenv("SINGA_OPTIONS", " test.offset=3 ,, test.negate=1", 1);
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{-4.f}));
  EXPECT_EQ(probe({{"test.offset", "5"}}, {1.f}), (std::vector<float>{-6.f}));  // the program's wins
  setenv("SINGA_OPTIONS", "test.offset", 1);
  const std::string err = prepare_error(plugin_test::unary_model("OptionProbe", 1), {});
  EXPECT_NE(err.find("SINGA_OPTIONS"), std::string::npos) << err;
}

// ------------------------------------------------------ runtime options

// The runtime's state for one test: the probe plugin loaded after `options`
// were set; false (with a failure) when it did not load.
bool reload_with(const std::map<std::string, std::string>& options) {
  auto& rt = singa::Runtime::instance();
  rt.reset();
  singa::LoadOptions lo;
  lo.use_env = false;
  lo.options = options;
  rt.load(lo);
  auto info = rt.load_plugin(plugin_test::test_plugin("option_probe"));
  EXPECT_TRUE(info.loaded) << info.error;
  return info.loaded;
}

TEST_F(Options, RuntimeOptionReachesAPluginAtInit) {
  ASSERT_TRUE(reload_with({{"test.base", "5"}}));
  EXPECT_EQ(*singa::Runtime::instance().option("test.base"), "5");
  EXPECT_EQ(probe({}, {1.f, 2.f}), (std::vector<float>{6.f, 7.f}));
  EXPECT_EQ(probe({{"test.offset", "10"}}, {1.f}), (std::vector<float>{16.f}));
  // Set after the load, it no longer reaches what the plugin read at init.
  singa::Runtime::instance().set_option("test.base", "100");
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{6.f}));
  // set_option before load() counts as much as LoadOptions::options.
  auto& rt = singa::Runtime::instance();
  rt.reset();
  EXPECT_EQ(rt.option("test.base"), nullptr) << "reset() forgets the runtime options";
  rt.set_option("test.base", "-3");
  singa::LoadOptions lo;
  lo.use_env = false;
  rt.load(lo);
  ASSERT_TRUE(rt.load_plugin(plugin_test::test_plugin("option_probe")).loaded);
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{-2.f}));
}

// Every prepare sees the runtime options where it sets no key itself, ahead
// of SINGA_OPTIONS.
TEST_F(Options, RuntimeOptionsFillEveryPrepare) {
  singa::Runtime::instance().set_option("test.offset", "3");
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{4.f}));
  EXPECT_EQ(probe({{"test.offset", "1"}}, {1.f}), (std::vector<float>{2.f}));  // the prepare's own wins
  setenv("SINGA_OPTIONS", "test.offset=9,test.negate=1", 1);
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{-4.f}));  // the runtime's offset, the environment's negate
  singa::Runtime::instance().set_option("test.offset", "x");
  const std::string err = prepare_error(plugin_test::unary_model("OptionProbe", 1), {});
  EXPECT_NE(err.find("option test.offset=x"), std::string::npos) << err;
}

TEST_F(Options, SingaOptionsAddsRuntimeOptionsAtLoad) {
  setenv("SINGA_OPTIONS", "test.base=2", 1);
  ASSERT_TRUE(reload_with({}));
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{3.f}));
  ASSERT_TRUE(reload_with({{"test.base", "4"}}));  // the program's wins
  EXPECT_EQ(probe({}, {1.f}), (std::vector<float>{5.f}));
}

std::string load_error(const std::map<std::string, std::string>& options) {
  auto& rt = singa::Runtime::instance();
  rt.reset();
  singa::LoadOptions lo;
  lo.use_env = false;
  lo.options = options;
  try {
    rt.load(lo);
  } catch (const singa::Error& e) {
    EXPECT_EQ(e.code(), SINGA_INVALID_ARGUMENT);
    EXPECT_FALSE(rt.loaded());
    EXPECT_TRUE(rt.plugins().empty()) << "no plugin may load with a malformed runtime option";
    return e.what();
  }
  return "";
}

// singa's device-level keys are checked when set, before any plugin loads;
// a plugin's own key fails that plugin's load, naming the key.
TEST_F(Options, MalformedRuntimeOptionsNameTheKey) {
  for (const auto& [key, bad] : std::map<std::string, std::string>{
           {"cpu.spin_us", "abc"}, {"cpu.cache_mb", "-1"}, {"cpu.avx512", "yes"}, {"opencl.cache", "2"},
           {"opencl.gpu_kernels", ""}, {"cuda.kernels", "true"}, {"cuda.allow_tf32", "on"}, {"cuda.cache", "00"},
           {"core.op_profile", "x"}, {"core.fuse_layers", "off"}}) {
    SCOPED_TRACE(key + "=" + bad);
    EXPECT_NE(load_error({{key, bad}}).find("option " + key + "=" + bad), std::string::npos);
    try {
      singa::Runtime::instance().set_option(key, bad);
      ADD_FAILURE() << "set_option accepted it";
    } catch (const singa::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
    EXPECT_EQ(singa::Runtime::instance().option(key), nullptr);
  }
  EXPECT_EQ(load_error({{"cpu.spin_us", "0"}, {"cpu.cache_mb", "0"}, {"cpu.avx512", "0"}}), "");
  setenv("SINGA_OPTIONS", "cpu.spin_us=1e3", 1);
  const std::string err = load_error({});
  EXPECT_NE(err.find("SINGA_OPTIONS"), std::string::npos) << err;
  EXPECT_NE(err.find("cpu.spin_us=1e3"), std::string::npos) << err;
  unsetenv("SINGA_OPTIONS");

  auto& rt = singa::Runtime::instance();
  rt.reset();
  rt.set_option("test.base", "abc");
  singa::LoadOptions lo;
  lo.use_env = false;
  rt.load(lo);
  auto info = rt.load_plugin(plugin_test::test_plugin("option_probe"));
  EXPECT_FALSE(info.loaded);
  EXPECT_NE(info.error.find("option test.base=abc"), std::string::npos) << info.error;
}

// ---------------------------------------------------- the CPU kernels' switches

struct ConvCase {
  int64_t C, M, H, K, group;
};

// y = Conv(x, W, B), stride 1, pads K/2 ("same"), `group` groups.
ModelBuilder conv_model(const ConvCase& c) {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, c.C, c.H, c.H})
      .initializer("W", random_floats({c.M, c.C / c.group, c.K, c.K}, 1))
      .initializer("B", random_floats({c.M}, 2))
      .node("Conv", {"x", "W", "B"}, {"y"}, "conv")
      .output("y", SINGA_ONNX_FLOAT, {1, c.M, c.H, c.H});
  add_ints(m.last(), "pads", {c.K / 2, c.K / 2, c.K / 2, c.K / 2});
  auto* group = m.last()->add_attribute();
  group->set_name("group");
  group->set_type(::onnx::AttributeProto::INT);
  group->set_i(c.group);
  return m;
}

// The same convolution in double, loop by loop.
std::vector<double> conv_reference(const ConvCase& c, const Tensor& x) {
  const Tensor w = random_floats({c.M, c.C / c.group, c.K, c.K}, 1), b = random_floats({c.M}, 2);
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group, p = c.K / 2;
  std::vector<double> y(size_t(c.M * c.H * c.H));
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t oy = 0; oy < c.H; ++oy)
      for (int64_t ox = 0; ox < c.H; ++ox) {
        double s = b.data<float>()[m];
        for (int64_t k = 0; k < Cg; ++k)
          for (int64_t ky = 0; ky < c.K; ++ky)
            for (int64_t kx = 0; kx < c.K; ++kx) {
              const int64_t iy = oy + ky - p, ix = ox + kx - p, ch = m / Mg * Cg + k;
              if (iy < 0 || ix < 0 || iy >= c.H || ix >= c.H) continue;
              s += double(x.data<float>()[(ch * c.H + iy) * c.H + ix]) *
                   w.data<float>()[((m * Cg + k) * c.K + ky) * c.K + kx];
            }
        y[size_t((m * c.H + oy) * c.H + ox)] = s;
      }
  return y;
}

double worst_error(const Tensor& got, const std::vector<double>& want) {
  double worst = got.numel() == int64_t(want.size()) ? 0 : INFINITY;
  for (size_t i = 0; i < want.size() && i < size_t(got.numel()); ++i)
    worst = std::max(worst, std::fabs(double(got.data<float>()[i]) - want[i]));
  return worst;
}

// The Conv kernel's switches: every value that turns a path off still gives
// the reference's result, and a malformed value fails prepare naming the key
// (which shows the kernel reads it).
TEST_F(Options, ConvPathsMatchTheReference) {
  const std::vector<ConvCase> cases = {
      {16, 32, 12, 3, 1},   // 3x3: Winograd, oneDNN
      {32, 64, 10, 1, 1},   // pointwise: the direct tile, sgemm
      {32, 32, 10, 3, 32},  // depthwise: 16-channel blocks, planes
      {3, 32, 16, 3, 1},    // a thin stem
  };
  const std::vector<std::pair<std::string, std::string>> switches = {
      {"cpu.dnnl", "0"},          {"cpu.conv_thin", "0"},         {"cpu.conv_nchw", "0"},
      {"cpu.pointwise_direct", "0"}, {"cpu.depthwise_blocked", "0"}, {"cpu.winograd", "0"},
      {"cpu.winograd_tile", "2"}, {"cpu.winograd_tile", "4"},     {"cpu.dnnl_winograd", "0"},
      {"cpu.dnnl_unblock16", "0"}, {"cpu.dnnl_winograd_part_mib", "1"},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " K " + std::to_string(c.K));
    const ModelBuilder m = conv_model(c);
    const Tensor x = random_floats({1, c.C, c.H, c.H}, 3);
    const std::vector<double> want = conv_reference(c, x);
    EXPECT_LE(worst_error(singa::onnx::prepare_bytes(m.bytes())->run({x}).at(0).second, want), 1e-4);
    for (const auto& [key, value] : switches) {
      SCOPED_TRACE(key + "=" + value);
      singa::onnx::PrepareOptions o;
      o.options[key] = value;
      EXPECT_LE(worst_error(singa::onnx::prepare_bytes(m.bytes(), o)->run({x}).at(0).second, want), 1e-4);
    }
  }
  const ModelBuilder m = conv_model(cases[0]);
  for (const auto& [key, bad] : std::map<std::string, std::string>{
           {"cpu.dnnl", "off"}, {"cpu.conv_thin", "2"}, {"cpu.conv_nchw", "no"}, {"cpu.pointwise_direct", "false"},
           {"cpu.depthwise_blocked", "00"}, {"cpu.winograd", "x"}, {"cpu.winograd_tile", "3"},
           {"cpu.dnnl_winograd", "-1"}, {"cpu.dnnl_unblock16", "on"}, {"cpu.dnnl_winograd_part_mib", "0"}}) {
    SCOPED_TRACE(key + "=" + bad);
    const std::string err = prepare_error(m, {{key, bad}});
    EXPECT_NE(err.find(key), std::string::npos) << err;
  }
}

TEST_F(Options, MatMulPrimitiveSwitch) {
  ModelBuilder m;
  m.input("a", SINGA_ONNX_FLOAT, {4, 24}).initializer("B", random_floats({24, 40}, 5));
  m.node("MatMul", {"a", "B"}, {"y"}).output("y", SINGA_ONNX_FLOAT, {4, 40});
  const Tensor a = random_floats({4, 24}, 6), b = random_floats({24, 40}, 5);
  std::vector<double> want(4 * 40, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 40; ++j)
      for (int k = 0; k < 24; ++k) want[size_t(i * 40 + j)] += double(a.data<float>()[i * 24 + k]) * b.data<float>()[k * 40 + j];
  for (const char* v : {"0", "1"}) {
    singa::onnx::PrepareOptions o;
    o.options["cpu.matmul_primitive"] = v;
    EXPECT_LE(worst_error(singa::onnx::prepare_bytes(m.bytes(), o)->run({a}).at(0).second, want), 1e-4) << v;
  }
  const std::string err = prepare_error(m, {{"cpu.matmul_primitive", "maybe"}});
  EXPECT_NE(err.find("cpu.matmul_primitive"), std::string::npos) << err;
}

// A layout pass is switched off by its option, and no longer by the retired
// variable: optimized_model() shows what the passes did.
TEST_F(Options, LayoutPassFollowsItsOptionNotTheEnvironment) {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 16, 20, 20})
      .initializer("W1", random_floats({32, 16, 3, 3}, 1))
      .initializer("W2", random_floats({32, 32, 3, 3}, 2))
      .node("Conv", {"x", "W1"}, {"h"}, "c1")
      .node("Conv", {"h", "W2"}, {"y"}, "c2")
      .output("y", SINGA_ONNX_FLOAT, {1, 32, 20, 20});
  add_ints(m.g->mutable_node(0), "pads", {1, 1, 1, 1});
  add_ints(m.g->mutable_node(1), "pads", {1, 1, 1, 1});
  auto optimized = [&](const std::map<std::string, std::string>& options) {
    singa::onnx::PrepareOptions o;
    o.options = options;
    return singa::onnx::optimized_model(m.model, o, "test").SerializeAsString();
  };
  const std::string plain = optimized({});
  const std::string off = optimized({{"pass.cpu.blocked_layout", "0"}});
  EXPECT_NE(plain, off) << "the model no longer takes the blocked layout: pick another";
  setenv("SINGA_BLOCKED_LAYOUT", "0", 1);
  EXPECT_EQ(optimized({}), plain);
  unsetenv("SINGA_BLOCKED_LAYOUT");
  setenv("SINGA_OPTIONS", "pass.cpu.blocked_layout=0", 1);
  EXPECT_EQ(optimized({}), off);
}

// ------------------------------------------------------------------ the CLI

// The singa program of this build (beside the plugin folder), or "".
std::string singa_program() {
  const std::string p = std::string(SINGA_TEST_BUILD_PLUGIN_DIR) + "/../tools/singa";
  return std::ifstream(p).good() ? p : "";
}

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Ran run_cli(const std::string& env, const std::string& args) {
  const std::string cmd = env + " SINGA_PLUGIN_PATH= " + singa_program() + " " + args + " 2>&1";
  Ran r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (singa_program().empty()) GTEST_SKIP() << "the singa program is not built";
    dir_ = ::testing::TempDir() + "singa_options_cli";
    std::system(("mkdir -p " + dir_).c_str());
    // The probe model: x [2] -> OptionProbe -> y.
    std::ofstream(dir_ + "/probe.onnx", std::ios::binary) << plugin_test::unary_model("OptionProbe", 2).bytes();
    std::ofstream(dir_ + "/x.pb", std::ios::binary)
        << singa::onnx::to_proto(Tensor::from_vector({2}, SINGA_ONNX_FLOAT, std::vector<float>{1.f, 2.f}), "x")
               .SerializeAsString();
    probe_ = " --plugin " + plugin_test::test_plugin("option_probe") + " " + dir_ + "/probe.onnx --input x=" + dir_ +
             "/x.pb ";
  }
  std::string dir_, probe_;
};

TEST_F(Cli, OptionFlagsReachTheKernel) {
  Ran r = run_cli("", "run" + probe_ + "--option test.offset=10 --option test.negate=1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("-11"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-12"), std::string::npos) << r.out;
}

TEST_F(Cli, ConfigFileOptionsAndFlagsOverThem) {
  std::ofstream(dir_ + "/singa.ini") << "device = cpu\noption = test.negate=1\n[options]\ntest.offset = 100\n";
  Ran r = run_cli("", "run --config " + dir_ + "/singa.ini" + probe_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("-101"), std::string::npos) << r.out;
  r = run_cli("", "run --config " + dir_ + "/singa.ini" + probe_ + "--option test.offset=200");
  EXPECT_NE(r.out.find("-201"), std::string::npos) << r.out;
  std::ofstream(dir_ + "/bad.ini") << "devise = cpu\n";
  r = run_cli("", "run --config " + dir_ + "/bad.ini" + probe_);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("devise"), std::string::npos) << r.out;
}

TEST_F(Cli, MalformedOptionIsAUsageError) {
  Ran r = run_cli("", "run" + probe_ + "--option test.offset");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("KEY=VALUE"), std::string::npos) << r.out;
  r = run_cli("", "run" + probe_ + "--option test.offset=abc");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("option test.offset=abc"), std::string::npos) << r.out;
}

// Named options are runtime options too: device-level keys reach the CPU
// device as it loads, and a malformed one stops the command naming the key.
TEST_F(Cli, RuntimeOptionFlags) {
  Ran r = run_cli("", "run" + probe_ + "--option cpu.spin_us=0 --option test.base=20");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("21"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("22"), std::string::npos) << r.out;
  r = run_cli("", "run" + probe_ + "--option cpu.spin_us=soon");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("option cpu.spin_us=soon: expected a whole number"), std::string::npos) << r.out;
  std::ofstream(dir_ + "/spin.ini") << "[options]\ncpu.cache_mb = lots\n";
  r = run_cli("", "run --config " + dir_ + "/spin.ini" + probe_);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("option cpu.cache_mb=lots"), std::string::npos) << r.out;
  r = run_cli("SINGA_SPIN_US=5", "run" + probe_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SINGA_SPIN_US=5 is ignored: use --option cpu.spin_us=N"), std::string::npos) << r.out;
}

TEST_F(Cli, VerboseReportsTheEnvironmentAndRetiredVariablesWarn) {
  Ran r = run_cli("SINGA_NO_DNNL=1 SINGA_OPTIONS=test.offset=1 SINGA_MADE_UP=2", "run -v" + probe_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SINGA_NO_DNNL=1 is ignored: use --option cpu.dnnl=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("environment: SINGA_OPTIONS=test.offset=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SINGA_MADE_UP=2 (not read by singa)"), std::string::npos) << r.out;
  r = run_cli("SINGA_NO_DNNL=1 SINGA_MADE_UP=2", "run" + probe_);
  EXPECT_NE(r.out.find("SINGA_NO_DNNL=1 is ignored"), std::string::npos) << r.out;  // warned without -v too
  EXPECT_EQ(r.out.find("SINGA_MADE_UP"), std::string::npos) << r.out;
}

}  // namespace
