// run_threads.hpp - runs a one-output test model at 1, 2 and 3 threads, so
// that the per-thread partitions of every kernel are checked; and a fixture
// for suites that set the CPU device's thread count themselves.
#ifndef SINGA_TESTS_RUN_THREADS_HPP
#define SINGA_TESTS_RUN_THREADS_HPP

#include "model_builder.hpp"

#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace testing_util {

// Prepares m with `options` at 1 to 3 threads, runs it on x and calls
// check(output, rep) for each.
template <class Check>
void run_threads(const ModelBuilder& m, const singa::Tensor& x, const std::map<std::string, std::string>& options,
                 Check&& check) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads, options);
    auto out = rep->run({x});
    ASSERT_EQ(out.size(), 1u);
    check(out[0].second, *rep);
  }
}

// Loads the runtime and puts the CPU device's thread count back after each
// test, so a test that sets it leaves the next one the default.
class KeepsCpuThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
    saved_ = rt.cpu()->num_threads();
  }
  void TearDown() override { singa::Runtime::instance().cpu()->set_num_threads(saved_); }
  int32_t saved_ = 1;
};

}  // namespace testing_util
#endif
