// plugin_fixture.hpp - shared helpers of the ABI and loader tests: where the
// test plugins are, a runtime that starts with only the CPU device, and a
// one-node model in the test plugins' domain.
#ifndef SINGA_TESTS_PLUGIN_FIXTURE_HPP
#define SINGA_TESTS_PLUGIN_FIXTURE_HPP

#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <map>
#include <string>
#include <vector>

namespace plugin_test {

constexpr const char* kDomain = "com.singa.test";

// The test plugin file for a case name ("good", "bad_major", ...).
inline std::string test_plugin(const std::string& name) {
  return std::string(TEST_PLUGIN_DIR) + "/singa_test_" + name + ".so";
}

inline std::string cpu_plugin() { return std::string(SINGA_TEST_BUILD_PLUGIN_DIR) + "/cpu/singa_cpu.so"; }

// True while the dynamic linker still has `path` mapped in this process.
inline bool is_mapped(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return false;
  dlclose(h);  // RTLD_NOLOAD still took a reference
  return true;
}

inline const singa::PluginInfo* find_record(const std::string& path) {
  for (const auto& p : singa::Runtime::instance().plugins())
    if (p.path == path) return &p;
  return nullptr;
}

// Every test starts from a runtime that knows the CPU device and nothing
// else, so that no op pack of the build can interfere, and leaves it empty.
class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    rt.reset();
    singa::LoadOptions only_cpu;
    only_cpu.use_default_dirs = false;
    only_cpu.use_env = false;
    only_cpu.plugins = {cpu_plugin()};
    rt.load(only_cpu);
    const auto* cpu = find_record(cpu_plugin());
    ASSERT_TRUE(cpu && cpu->loaded) << "the CPU device plugin did not load: " << (cpu ? cpu->error : "no record");
  }
  void TearDown() override { singa::Runtime::instance().reset(); }

  static singa::Runtime& rt() { return singa::Runtime::instance(); }

  static size_t kernels_of(const std::string& op) { return rt().kernels(kDomain, op).size(); }

  // The last thing a failure test checks: the runtime still accepts a good
  // plugin and runs its kernel.
  static void expect_good_plugin_still_loads() {
    auto info = rt().load_plugin(test_plugin("good"));
    EXPECT_TRUE(info.loaded) << info.error;
    EXPECT_EQ(kernels_of("TestScale"), 1u);
  }
};

// y = op(x) with one node of the test domain, whose opset the model imports
// as `domain_opset`.
inline testing_util::ModelBuilder unary_model(const std::string& op, int64_t n,
                                              const std::map<std::string, float>& float_attrs = {},
                                              const std::map<std::string, std::string>& string_attrs = {},
                                              int64_t domain_opset = 1) {
  testing_util::ModelBuilder m;
  auto* custom = m.model.add_opset_import();
  custom->set_domain(kDomain);
  custom->set_version(domain_opset);
  m.input("x", SINGA_ONNX_FLOAT, {n}).node(op, {"x"}, {"y"}, "the_" + op).output("y", SINGA_ONNX_FLOAT, {n});
  auto* node = m.last();
  node->set_domain(kDomain);
  for (const auto& a : float_attrs) {
    auto* attr = node->add_attribute();
    attr->set_name(a.first);
    attr->set_type(::onnx::AttributeProto::FLOAT);
    attr->set_f(a.second);
  }
  for (const auto& a : string_attrs) {
    auto* attr = node->add_attribute();
    attr->set_name(a.first);
    attr->set_type(::onnx::AttributeProto::STRING);
    attr->set_s(a.second);
  }
  return m;
}

inline std::vector<float> run_unary(const std::string& op, const std::vector<float>& x,
                                    const std::map<std::string, float>& attrs = {}, int64_t domain_opset = 1) {
  auto rep = singa::onnx::prepare(unary_model(op, int64_t(x.size()), attrs, {}, domain_opset).model);
  auto out = rep->run({singa::Tensor::from_vector({int64_t(x.size())}, SINGA_ONNX_FLOAT, x)});
  const singa::Tensor y = out.at(0).second.to_host();
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

}  // namespace plugin_test

#endif
