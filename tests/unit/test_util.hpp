// test_util.hpp - what the unit suites share: the runtime loaded once, seeded tensors.
#ifndef SINGA_TESTS_TEST_UTIL_HPP
#define SINGA_TESTS_TEST_UTIL_HPP

#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <random>

namespace testing_util {

// Loads the plugins from the default folders on first use (the suites run with
// SINGA_PLUGIN_PATH empty, so only this build's plugins are seen).
inline void ensure_loaded() {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
}

// A float tensor of N(0, 1) values from a fixed seed.
inline singa::Tensor randn(const singa::Shape& s, unsigned seed = 1) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, 1);
  singa::Tensor t(s, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

}  // namespace testing_util
#endif
