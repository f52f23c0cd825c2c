// Streams and events (singa_event_ext, ABI 1.4): a run on a device with
// events queues its work on a stream of its own and orders every hand-off,
// checked against the test plugin async_device.cpp, whose streams really run
// later on worker threads and whose freed memory turns to NaNs at once. A
// missing wait shows as results that differ from the CPU-only run.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <random>
#include <thread>

using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

// The counters of async_device.cpp, per device row.
enum Counter { kRecords, kWaits, kEventSyncs, kStreamsCreated, kStreamsDestroyed, kKernelsQueued, kKernelsInline,
               kCopiesQueued, kEventsLive, kNumCounters };
enum DeviceRow { kWithEvents = 0, kWithoutEvents = 1 };

void load_async_device() {
  testing_util::ensure_loaded();
  auto& rt = singa::Runtime::instance();
  if (rt.device("asyncdev")) return;
  auto info = rt.load_plugin(std::string(TEST_PLUGIN_DIR) + "/singa_test_async_device.so");
  ASSERT_TRUE(info.loaded) << info.error;
}

Tensor random_floats(const singa::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(size_t(singa::shape_numel(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(shape, SINGA_ONNX_FLOAT, v);
}

// Device nodes (Mul, Relu, Add) around CPU fallback nodes (Sigmoid, Exp):
// values cross device -> host -> device twice per run, a device constant is
// read by two nodes, and both a device value (r) and a final one are outputs.
std::string mixed_model() {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {16, 32})
      .initializer("w", random_floats({16, 32}, 7))
      .node("Mul", {"x", "w"}, {"a"}, "scale")
      .node("Relu", {"a"}, {"r"}, "relu")
      .node("Sigmoid", {"r"}, {"s"}, "gate")
      .node("Add", {"s", "r"}, {"d"}, "skip")
      .node("Mul", {"d", "d"}, {"e"}, "square")
      .node("Exp", {"e"}, {"f"}, "exp")
      .node("Add", {"f", "w"}, {"y"}, "bias")
      .output("y", SINGA_ONNX_FLOAT, {16, 32})
      .output("r", SINGA_ONNX_FLOAT, {16, 32});
  return m.bytes();
}

std::shared_ptr<singa::onnx::Rep> prepare_on(const std::string& device) {
  singa::onnx::PrepareOptions opt;
  opt.device = device;
  opt.optimize = false;  // the nodes as written, so that placement is predictable
  return singa::onnx::prepare_bytes(mixed_model(), opt);
}

// Reads the plugin's counters through its CPU op.
class Counters {
 public:
  Counters() {
    ModelBuilder probe;
    probe.model.add_opset_import()->set_domain("com.singa.test");
    probe.model.mutable_opset_import(1)->set_version(1);
    probe.node("AsyncCounters", {}, {"n"}).output("n", SINGA_ONNX_INT64, {});
    probe.last()->set_domain("com.singa.test");
    singa::onnx::PrepareOptions nocheck;
    nocheck.check_model = false;
    rep_ = singa::onnx::prepare_bytes(probe.bytes(), nocheck);
  }
  int64_t get(DeviceRow row, Counter c) const {
    return rep_->run(std::vector<Tensor>{})[0].second.data<int64_t>()[row * kNumCounters + c];
  }

 private:
  std::shared_ptr<singa::onnx::Rep> rep_;
};

// Bitwise: the device's Add, Mul and Relu are the CPU's arithmetic, and the
// CPU nodes are the CPU's own.
void expect_same(const singa::onnx::NamedTensors& got, const singa::onnx::NamedTensors& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].second.shape(), want[k].second.shape()) << what;
    ASSERT_TRUE(got[k].second.on_host()) << what;
    const float* g = got[k].second.data<float>();
    const float* w = want[k].second.data<float>();
    int differ = 0;
    for (int64_t i = 0; i < got[k].second.numel(); ++i) differ += g[i] != w[i];
    EXPECT_EQ(differ, 0) << what << ": output '" << got[k].first << "' differs in " << differ << " elements";
  }
}

TEST(Events, DevicesReportTheirEvents) {
  load_async_device();
  auto& rt = singa::Runtime::instance();
  ASSERT_NE(rt.device("asyncdev"), nullptr);
  EXPECT_TRUE(rt.device("asyncdev")->has_events());
  EXPECT_FALSE(rt.device("asyncnoev")->has_events());  // streams, but no extension
  EXPECT_FALSE(rt.device("cpu")->has_events());
}

TEST(Events, RunsOnAStreamAndOrdersHandOffs) {
  load_async_device();
  Counters c;
  auto cpu = prepare_on("cpu");
  auto rep = prepare_on("asyncdev");
  const auto& placement = rep->placement();
  ASSERT_EQ(placement.size(), 7u);
  EXPECT_EQ(placement[0].device, "asyncdev");
  EXPECT_EQ(placement[2].device, "cpu");  // Sigmoid: no asyncdev kernel
  EXPECT_EQ(placement[3].device, "asyncdev");

  const int64_t syncs0 = c.get(kWithEvents, kEventSyncs), inline0 = c.get(kWithEvents, kKernelsInline);
  const int64_t queued0 = c.get(kWithEvents, kKernelsQueued), records0 = c.get(kWithEvents, kRecords);
  const int kRuns = 20;
  for (int i = 0; i < kRuns; ++i) {
    Tensor x = random_floats({16, 32}, 100 + unsigned(i));
    expect_same(rep->run({x}), cpu->run({x}), "run " + std::to_string(i));
  }
  // Five device kernels a run, all queued; three host hand-offs a run (the
  // Sigmoid's and the Exp's inputs, the outputs) with a record each.
  EXPECT_EQ(c.get(kWithEvents, kKernelsInline) - inline0, 0);
  EXPECT_EQ(c.get(kWithEvents, kKernelsQueued) - queued0, 5 * kRuns);
  EXPECT_GE(c.get(kWithEvents, kEventSyncs) - syncs0, 3 * kRuns);
  EXPECT_EQ(c.get(kWithEvents, kRecords) - records0, c.get(kWithEvents, kEventSyncs) - syncs0);

  // Every output and every intermediate, and a profiled run.
  Tensor x = random_floats({16, 32}, 99);
  singa::onnx::RunOptions all;
  all.all_outputs = true;
  expect_same(rep->run({x}, all), cpu->run({x}, all), "all_outputs");
  std::vector<singa::onnx::NodeTiming> timings;
  singa::onnx::RunOptions profiled;
  profiled.profile = &timings;
  expect_same(rep->run({x}, profiled), cpu->run({x}), "profiled");
  EXPECT_EQ(timings.size(), 7u);
}

TEST(Events, ConcurrentRunsEachHaveAStream) {
  load_async_device();
  Counters c;
  const int64_t created0 = c.get(kWithEvents, kStreamsCreated), destroyed0 = c.get(kWithEvents, kStreamsDestroyed);
  const int64_t waits0 = c.get(kWithEvents, kWaits), live0 = c.get(kWithEvents, kEventsLive);
  auto cpu = prepare_on("cpu");
  {
    auto rep = prepare_on("asyncdev");
    std::vector<std::vector<Tensor>> inputs(2), wants(2);
    for (int t = 0; t < 2; ++t)
      for (int i = 0; i < 15; ++i) {
        inputs[size_t(t)].push_back(random_floats({16, 32}, unsigned(1000 * t + i)));
        auto want = cpu->run({inputs[size_t(t)].back()});
        wants[size_t(t)].push_back(want[0].second);
      }
    std::vector<int> wrong(2, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        for (size_t i = 0; i < inputs[size_t(t)].size(); ++i) {
          auto got = rep->run({inputs[size_t(t)][i]});
          const Tensor& w = wants[size_t(t)][i];
          for (int64_t k = 0; k < w.numel(); ++k)
            if (got[0].second.data<float>()[k] != w.data<float>()[k]) {
              ++wrong[size_t(t)];
              break;
            }
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong[0] + wrong[1], 0) << "runs with results that differ from the CPU's";
    // The first stream uploaded the constants; any further one waited for
    // them (a cross-stream hand-off) before its first kernel.
    const int64_t created = c.get(kWithEvents, kStreamsCreated) - created0;
    EXPECT_GE(created, 1);
    EXPECT_LE(created, 2);
    EXPECT_EQ(c.get(kWithEvents, kWaits) - waits0, created - 1);
  }
  // The Rep is gone: its streams and events with it.
  EXPECT_EQ(c.get(kWithEvents, kStreamsDestroyed) - destroyed0, c.get(kWithEvents, kStreamsCreated) - created0);
  EXPECT_EQ(c.get(kWithEvents, kEventsLive), live0);
}

TEST(Events, WithoutEventsEverythingStaysOnTheNullStream) {
  load_async_device();
  Counters c;
  auto cpu = prepare_on("cpu");
  auto rep = prepare_on("asyncnoev");
  EXPECT_EQ(rep->placement()[0].device, "asyncnoev");
  const int64_t inline0 = c.get(kWithoutEvents, kKernelsInline);
  for (int i = 0; i < 5; ++i) {
    Tensor x = random_floats({16, 32}, 200 + unsigned(i));
    expect_same(rep->run({x}), cpu->run({x}), "asyncnoev run " + std::to_string(i));
  }
  EXPECT_EQ(c.get(kWithoutEvents, kKernelsInline) - inline0, 5 * 5);
  EXPECT_EQ(c.get(kWithoutEvents, kStreamsCreated), 0);
  EXPECT_EQ(c.get(kWithoutEvents, kKernelsQueued), 0);
  EXPECT_EQ(c.get(kWithoutEvents, kCopiesQueued), 0);
  EXPECT_EQ(c.get(kWithoutEvents, kRecords), 0);
}

}  // namespace
