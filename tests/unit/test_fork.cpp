// Fork safety: a process whose CPU pool has started (and run a job) forks, and
// the child runs the same model again. The child has none of the parent's
// workers; an LSTM's parallel steps wait on each other at a barrier, so a
// child that kept counting on the parent's workers never finished (singa
// conformance's isolated mode, Python's multiprocessing).
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <random>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

Tensor random_floats(const singa::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  Tensor t(shape, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// An LSTM (its steps split over the pool, meeting at a barrier, when the
// weights are large enough to be worth splitting) then a MatMul.
std::shared_ptr<singa::onnx::Rep> lstm_model() {
  const int64_t T = 6, N = 1, I = 16, H = 160;  // 10 panels of 16 units: the steps split in 2-3 parts
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {T, N, I});
  m.initializer("W", random_floats({1, 4 * H, I}, 1)).initializer("R", random_floats({1, 4 * H, H}, 2));
  m.initializer("B", random_floats({1, 8 * H}, 3)).initializer("P", random_floats({H, 8}, 4));
  m.node("LSTM", {"x", "W", "R", "B"}, {"", "yh"}, "lstm");
  auto* a = m.last()->add_attribute();
  a->set_name("hidden_size");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(H);
  m.node("MatMul", {"yh", "P"}, {"z"});
  m.output("z", SINGA_ONNX_FLOAT, {1, N, 8});
  return singa::onnx::prepare_bytes(m.bytes(), {});
}

// Runs `child` in a forked process; true when it exits 0 within `seconds`.
::testing::AssertionResult in_child(int seconds, const std::function<bool()>& child) {
  const pid_t pid = ::fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork failed";
  if (pid == 0) {
    ::alarm(unsigned(seconds) + 5);  // a hang ends the child even if the parent is gone
    ::_exit(child() ? 0 : 1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return ::testing::AssertionFailure() << "the forked child did not finish within " << seconds << " s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the forked child " << (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                                                    : "exited with " + std::to_string(WEXITSTATUS(status)));
}

bool same(const singa::onnx::NamedTensors& a, const singa::onnx::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t o = 0; o < a.size(); ++o) {
    if (a[o].second.shape() != b[o].second.shape()) return false;
    for (int64_t i = 0; i < a[o].second.numel(); ++i)
      if (a[o].second.data<float>()[i] != b[o].second.data<float>()[i]) return false;
  }
  return true;
}

}  // namespace

TEST(Fork, ChildRunsAModelAfterTheParentsPoolHasWorked) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  for (int threads : {2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    rt.cpu()->set_num_threads(threads);
    auto rep = lstm_model();
    const std::map<std::string, Tensor> feeds = {{"x", random_floats({6, 1, 16}, 7)}};
    const auto want = rep->run(feeds);
    EXPECT_TRUE(in_child(60, [&] {
      if (rt.cpu()->num_threads() != threads) return false;  // the child keeps the parent's thread count
      bool ok = true;
      for (int k = 0; k < 3 && ok; ++k) ok = same(rep->run(feeds), want);
      return ok;
    }));
    // The parent's pool still works after the fork, and a child of a child too.
    EXPECT_TRUE(same(rep->run(feeds), want));
    EXPECT_TRUE(in_child(60, [&] { return same(rep->run(feeds), want) && bool(in_child(30, [&] { return same(rep->run(feeds), want); })); }));
  }
}

TEST(Fork, ForkWhileAnotherThreadRunsTheModel) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  rt.cpu()->set_num_threads(2);
  auto rep = lstm_model();
  const std::map<std::string, Tensor> feeds = {{"x", random_floats({6, 1, 16}, 9)}};
  const auto want = rep->run(feeds);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) rep->run(feeds);
  });
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(in_child(60, [&] { return same(rep->run(feeds), want); }));
  stop.store(true);
  busy.join();
}
