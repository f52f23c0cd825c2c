// plugins/common/vec_math.hpp against libm over the range the recurrent
// cells feed it, edges and saturation included.
#include "../../plugins/common/vec_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

std::vector<float> sweep() {
  std::vector<float> v;
  for (float x = -100.f; x <= 100.f; x += 0.0137f) v.push_back(x);
  for (float x : {0.f, -0.f, 1e-8f, -1e-8f, 0.0624f, 0.0626f, -86.f, 88.7f, 89.f, -1000.f, 1000.f}) v.push_back(x);
  return v;
}

}  // namespace

TEST(VecMath, ExpIsWithinTwoUlpOfLibm) {
  std::vector<float> x;
  for (float v : sweep())
    if (v >= -86.f && v <= 88.f) x.push_back(v);
  std::vector<float> y = x;
  singa::vec::exp_inplace(y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    EXPECT_LE(std::fabs(y[i] - want), 2.5f * (std::nextafter(want, INFINITY) - want)) << "x = " << x[i];
  }
}

TEST(VecMath, SigmoidAndTanhMatchLibm) {
  const std::vector<float> x = sweep();
  std::vector<float> s = x, t = x;
  singa::vec::sigmoid_inplace(s.data(), int64_t(s.size()));
  singa::vec::tanh_inplace(t.data(), int64_t(t.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double sig = 1.0 / (1.0 + std::exp(-double(x[i])));
    EXPECT_NEAR(s[i], sig, 2e-7 + 2e-7 * sig) << "x = " << x[i];
    EXPECT_NEAR(t[i], std::tanh(double(x[i])), 2e-7 + 1e-6 * std::fabs(std::tanh(double(x[i])))) << "x = " << x[i];
    EXPECT_TRUE(std::isfinite(s[i]) && std::isfinite(t[i])) << "x = " << x[i];
  }
}

TEST(VecMath, ErfMatchesLibm) {
  const std::vector<float> x = sweep();
  std::vector<float> e = x;
  singa::vec::erf_inplace(e.data(), int64_t(e.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::erf(double(x[i]));
    EXPECT_NEAR(e[i], want, 2.5e-7 + 2e-7 * std::fabs(want)) << "x = " << x[i];
  }
}
