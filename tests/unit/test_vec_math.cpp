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

// GELU's rational erf: absolute accuracy over the whole line (saturated past
// |x| = 4), relative accuracy near 0, NaN through; gelu() against the double
// formula, absolute error scaled by |x| / 2 as the erf error is.
TEST(VecMath, GeluMatchesTheErfFormula) {
  const std::vector<float> x = sweep();
  for (float v : x) {
    const double want = std::erf(double(v));
    EXPECT_NEAR(singa::vec::erf_rational(v), want, 4e-7) << "x = " << v;
  }
  for (float v : {1e-8f, -3e-5f, 0.01f})
    EXPECT_NEAR(singa::vec::erf_rational(v), std::erf(double(v)), 1e-6 * std::fabs(std::erf(double(v))));
  EXPECT_TRUE(std::isnan(singa::vec::erf_rational(NAN)));
  std::vector<float> y(x.size());
  singa::vec::gelu(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(y[i], want, 3e-7 * (1.0 + std::fabs(v))) << "x = " << v;
  }
}
