// The ABI handshake: what the host accepts from a plugin, what it refuses and
// how it says so, how minor-version skew is negotiated, and that a refused
// plugin leaves nothing behind.
#include "plugin_fixture.hpp"

#include <gmock/gmock.h>

#include <cmath>
#include <functional>
#include <string>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using plugin_test::run_unary;
using plugin_test::test_plugin;

namespace {

const std::string kMajor = std::to_string(SINGA_ABI_MAJOR);
const std::string kNextMajor = std::to_string(SINGA_ABI_MAJOR + 1);

class Abi : public plugin_test::PluginTest {};

std::string error_of(const std::function<void()>& f, singa_code* code = nullptr) {
  try {
    f();
  } catch (const singa::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(no error)";
}

TEST_F(Abi, GoodPluginLoadsAndItsKernelRuns) {
  const std::string path = test_plugin("good");
  auto info = rt().load_plugin(path);
  ASSERT_TRUE(info.loaded) << info.error;
  EXPECT_TRUE(info.error.empty());
  EXPECT_EQ(info.path, path);
  EXPECT_EQ(info.name, "test_good");
  EXPECT_EQ(info.abi_major, uint32_t(SINGA_ABI_MAJOR));
  EXPECT_EQ(info.abi_minor, uint32_t(SINGA_ABI_MINOR));
  EXPECT_EQ(info.kernel_count, 1u);

  const auto& ks = rt().kernels(plugin_test::kDomain, "TestScale");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->plugin_path, path);
  EXPECT_EQ(ks[0]->def.since_version, 1);

  // Defaults come through the definition's `user` pointer, attributes through
  // the node getters.
  EXPECT_EQ(run_unary("TestScale", {1.f, -2.f, 3.5f}), (std::vector<float>{2.f, -4.f, 7.f}));
  EXPECT_EQ(run_unary("TestScale", {1.f, -2.f, 3.5f}, {{"alpha", 0.5f}, {"beta", 1.f}}),
            (std::vector<float>{1.5f, 0.f, 2.75f}));
}

TEST_F(Abi, MajorMismatchIsRefusedNamingTheFileAndBothVersions) {
  const std::string path = test_plugin("bad_major");
  const size_t before = rt().kernel_count();
  auto info = rt().load_plugin(path);
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.error, HasSubstr(path + ": ABI major " + kNextMajor + " != host ABI major " + kMajor));
  EXPECT_EQ(info.abi_major, uint32_t(SINGA_ABI_MAJOR + 1));
  // It registered a kernel and returned success; neither may be trusted.
  EXPECT_EQ(kernels_of("BadMajorOp"), 0u);
  EXPECT_EQ(rt().kernel_count(), before);
  EXPECT_FALSE(plugin_test::is_mapped(path)) << "a refused plugin stays loaded";
  // The failure is on record for `singa plugins`.
  const auto* rec = plugin_test::find_record(path);
  ASSERT_NE(rec, nullptr);
  EXPECT_FALSE(rec->loaded);
  EXPECT_EQ(rec->error, info.error);
  expect_good_plugin_still_loads();
}

TEST_F(Abi, MissingEntryPointIsRefused) {
  const std::string path = test_plugin("no_symbol");
  auto info = rt().load_plugin(path);
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.error, StartsWith(path));
  EXPECT_THAT(info.error, HasSubstr(SINGA_PLUGIN_INIT_SYMBOL));
  expect_good_plugin_still_loads();
}

TEST_F(Abi, FailingInitIsReportedAndWhatItRegisteredIsDropped) {
  const std::string path = test_plugin("init_fails");
  auto info = rt().load_plugin(path);
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.error, StartsWith(path));
  EXPECT_THAT(info.error, HasSubstr("the accelerator driver is missing"));
  EXPECT_EQ(kernels_of("InitFailsOp"), 0u);
  EXPECT_FALSE(plugin_test::is_mapped(path));
  expect_good_plugin_still_loads();
}

TEST_F(Abi, ExceptionInRegistrationBecomesAStatus) {
  const std::string path = test_plugin("init_throws");
  auto info = rt().load_plugin(path);
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.error, StartsWith(path));
  EXPECT_THAT(info.error, HasSubstr("registration body threw on purpose"));
  EXPECT_EQ(kernels_of("ThrowsOp"), 0u);
  expect_good_plugin_still_loads();
}

TEST_F(Abi, DuplicateKernelRefusesTheWholeLaterPlugin) {
  const std::string good = test_plugin("good"), dup = test_plugin("dup_kernel");
  ASSERT_TRUE(rt().load_plugin(good).loaded);
  auto info = rt().load_plugin(dup);
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.error, StartsWith(dup));
  EXPECT_THAT(info.error, HasSubstr("TestScale"));
  EXPECT_THAT(info.error, HasSubstr(good));
  // All or nothing: the kernel that did not collide went too.
  EXPECT_EQ(kernels_of("DupOther"), 0u);
  const auto& ks = rt().kernels(plugin_test::kDomain, "TestScale");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->plugin_path, good);
  EXPECT_EQ(run_unary("TestScale", {1.f, 2.f}), (std::vector<float>{2.f, 4.f}));
}

TEST_F(Abi, DuplicateIsDecidedByLoadOrderNotByThePluginItself) {
  const std::string good = test_plugin("good"), dup = test_plugin("dup_kernel");
  auto first = rt().load_plugin(dup);
  ASSERT_TRUE(first.loaded) << first.error;
  EXPECT_EQ(first.kernel_count, 2u);
  auto second = rt().load_plugin(good);
  EXPECT_FALSE(second.loaded);
  EXPECT_THAT(second.error, StartsWith(good));
  EXPECT_THAT(second.error, HasSubstr("TestScale"));
  EXPECT_THAT(second.error, HasSubstr(dup));
  // dup_kernel's TestScale (opsets 5-20) negates.
  EXPECT_EQ(run_unary("TestScale", {1.f, -2.f}, {}, 5), (std::vector<float>{-1.f, 2.f}));
}

TEST_F(Abi, OlderMinorIsAcceptedAndFieldsPastItsStructSizeTakeDefaults) {
  const std::string path = test_plugin("old_minor");
  auto info = rt().load_plugin(path);
  ASSERT_TRUE(info.loaded) << info.error;

  const auto& ks = rt().kernels(plugin_test::kDomain, "OldMinorOp");
  ASSERT_EQ(ks.size(), 1u);
  // The plugin filled these past its struct_size with junk; the host must not
  // have read them.
  EXPECT_EQ(ks[0]->def.infer, nullptr);
  EXPECT_EQ(ks[0]->def.gradient, nullptr);
  EXPECT_EQ(ks[0]->def.cpu_inputs_mask, 0u);
  EXPECT_EQ(ks[0]->def.struct_size, sizeof(singa_kernel_def));
  EXPECT_EQ(run_unary("OldMinorOp", {0.f, 1.5f, -3.f}), (std::vector<float>{1.f, 2.5f, -2.f}));

  singa::Device* dev = rt().device("test_old_device");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->def().stream_create, nullptr);
  EXPECT_EQ(dev->def().parallel_for, nullptr);
  EXPECT_EQ(dev->def().num_threads, nullptr);
  EXPECT_EQ(dev->num_threads(), 1);
  EXPECT_EQ(dev->count(), 1);
  int64_t value = 0x1234567890;
  void* buf = dev->alloc(0, sizeof value);
  dev->copy(0, buf, 0, &value, 0, sizeof value, SINGA_COPY_HOST_TO_DEVICE);
  int64_t back = 0;
  dev->copy(0, &back, 0, buf, 0, sizeof back, SINGA_COPY_DEVICE_TO_HOST);
  dev->free(0, buf);
  EXPECT_EQ(back, value);
}

TEST_F(Abi, NewerMinorIsAcceptedAndUnknownTrailingFieldsIgnored) {
  const std::string path = test_plugin("new_minor");
  auto info = rt().load_plugin(path);
  ASSERT_TRUE(info.loaded) << info.error;
  EXPECT_EQ(info.abi_major, uint32_t(SINGA_ABI_MAJOR));
  EXPECT_EQ(info.abi_minor, uint32_t(SINGA_ABI_MINOR + 5));

  const auto& ks = rt().kernels(plugin_test::kDomain, "NewMinorOp");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->def.struct_size, sizeof(singa_kernel_def));
  EXPECT_EQ(ks[0]->def.since_version, 1);
  EXPECT_EQ(ks[0]->def.end_version, 10);
  EXPECT_EQ(run_unary("NewMinorOp", {0.f, 1.f, -2.f}), (std::vector<float>{-1.f, 2.f, -7.f}));

  singa::Device* dev = rt().device("test_new_device");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->count(), 1);
  void* buf = dev->alloc(0, 256, 128);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf) % 128, 0u);
  dev->memset(0, buf, 0, 0x5a, 256);
  EXPECT_EQ(static_cast<unsigned char*>(buf)[255], 0x5a);
  dev->free(0, buf);
}

TEST_F(Abi, ComputeErrorReachesTheCallerWithItsCodeAndTheRepStillRuns) {
  ASSERT_TRUE(rt().load_plugin(test_plugin("kernel_error")).loaded);
  auto rep = singa::onnx::prepare(plugin_test::unary_model("CheckedSqrt", 3).model);
  auto x = [](std::vector<float> v) { return singa::Tensor::from_vector({3}, SINGA_ONNX_FLOAT, v); };

  singa_code code = SINGA_OK;
  std::string err = error_of([&] { rep->run({x({4.f, -1.f, 9.f})}); }, &code);
  EXPECT_EQ(code, SINGA_INVALID_ARGUMENT);
  EXPECT_THAT(err, HasSubstr("input element 1 is negative"));
  EXPECT_THAT(err, HasSubstr("the_CheckedSqrt"));

  auto out = rep->run({x({4.f, 1.f, 9.f})});
  const singa::Tensor y = out.at(0).second.to_host();
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 3), (std::vector<float>{2.f, 1.f, 3.f}));
}

TEST_F(Abi, CreateErrorFailsPrepareNamingTheNode) {
  ASSERT_TRUE(rt().load_plugin(test_plugin("kernel_error")).loaded);
  auto model = plugin_test::unary_model("CheckedSqrt", 2, {}, {{"mode", "loose"}}).model;
  std::string err = error_of([&] { singa::onnx::prepare(model)->run({singa::Tensor::zeros({2}, SINGA_ONNX_FLOAT)}); });
  EXPECT_THAT(err, HasSubstr("the_CheckedSqrt"));
  EXPECT_THAT(err, HasSubstr("\"loose\""));

  auto nan_model = plugin_test::unary_model("CheckedSqrt", 2, {}, {{"mode", "nan"}}).model;
  auto out = singa::onnx::prepare(nan_model)->run({singa::Tensor::from_vector({2}, SINGA_ONNX_FLOAT, std::vector<float>{-4.f, 16.f})});
  const singa::Tensor y = out.at(0).second.to_host();
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 4.f);
}

TEST_F(Abi, ResetUnloadsPluginsAndTheyLoadAgain) {
  const std::string path = test_plugin("good");
  ASSERT_TRUE(rt().load_plugin(path).loaded);
  EXPECT_TRUE(plugin_test::is_mapped(path));
  rt().reset();
  EXPECT_FALSE(plugin_test::is_mapped(path));
  EXPECT_TRUE(rt().plugins().empty());
  EXPECT_EQ(kernels_of("TestScale"), 0u);
  EXPECT_TRUE(rt().load_plugin(path).loaded);
  EXPECT_EQ(kernels_of("TestScale"), 1u);
}

}  // namespace

// The layout is the ABI: fields are only ever appended. These offsets (LP64)
// fail the build when a field moves, and the STRUCT_SIZE constants stay the
// size up to each struct's last field.
#if defined(__LP64__)
static_assert(offsetof(singa_kernel_def, create) == 72, "singa_kernel_def layout changed");
static_assert(offsetof(singa_kernel_def, gradient) == 104, "singa_kernel_def layout changed");
static_assert(offsetof(singa_kernel_def, cpu_inputs_mask) == 112, "singa_kernel_def layout changed");
static_assert(offsetof(singa_kernel_def, extensions) == 120, "singa_kernel_def layout changed (ABI 1.3)");
static_assert(SINGA_KERNEL_DEF_STRUCT_SIZE == 128, "singa_kernel_def size");
static_assert(offsetof(singa_plugin, shutdown) == 48 && offsetof(singa_plugin, extensions) == 56,
              "singa_plugin layout changed");
static_assert(offsetof(singa_host_api, ctx_set_string) + sizeof(void*) == offsetof(singa_host_api, node_input_name),
              "ABI 1.3's host calls follow ctx_set_string");
static_assert(offsetof(singa_extension, type) == 8 && offsetof(singa_extension, next) == 16, "singa_extension layout");
static_assert(offsetof(singa_graph_pass_ext, name) == sizeof(singa_extension), "extensions embed the header first");
static_assert(offsetof(singa_gradient_ext, user) == sizeof(singa_extension), "extensions embed the header first");
static_assert(SINGA_VALUE_INFO_STRUCT_SIZE == 16 + 8 * SINGA_MAX_DIMS, "singa_value_info size");
static_assert(offsetof(singa_device_def, set_num_threads) + sizeof(void*) == offsetof(singa_device_def, extensions),
              "ABI 1.4's device extensions follow set_num_threads");
static_assert(SINGA_DEVICE_DEF_STRUCT_SIZE == sizeof(singa_device_def), "singa_device_def size");
static_assert(offsetof(singa_host_api, grad_set_input_grad) + sizeof(void*) ==
                  offsetof(singa_host_api, node_input_layout),
              "ABI 1.4's host calls follow grad_set_input_grad");
static_assert(offsetof(singa_layout_ext, accepts) == sizeof(singa_extension), "extensions embed the header first");
static_assert(offsetof(singa_event_ext, event_create) == sizeof(singa_extension), "extensions embed the header first");
static_assert(SINGA_LAYOUT_EXT_STRUCT_SIZE == sizeof(singa_layout_ext), "singa_layout_ext size");
static_assert(SINGA_EVENT_EXT_STRUCT_SIZE == sizeof(singa_event_ext), "singa_event_ext size");
static_assert(sizeof(singa_layout_accept) == 16, "singa_layout_accept layout");
#endif
static_assert(SINGA_HOST_API_STRUCT_SIZE == sizeof(singa_host_api), "no padding after the host table's last call");
