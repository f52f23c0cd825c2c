// Gradients written through the plugins' gradient hooks (gradient.hpp) for
// the normalisations and Gelu, against float64 central differences.
#include "test_util.hpp"
#include <singa/autograd.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using singa::Shape;
using singa::Tensor;
using namespace singa::autograd;

namespace {

using Fn = std::function<Variable(const std::vector<Variable>&)>;
using testing_util::ensure_loaded;

Tensor random(const Shape& s, double lo, double hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(s, SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(g);
  return t;
}

double weighted_sum(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
  return s;
}

// Checks d(sum(f(x) * R))/dx for every input against central differences.
void check_grad(const Fn& f, const std::vector<Tensor>& xs, double tol = 1e-6) {
  ensure_loaded();
  std::vector<Variable> vars;
  for (const Tensor& x : xs) vars.emplace_back(x.clone(), true);
  Variable y = f(vars);
  ASSERT_EQ(y.dtype(), SINGA_ONNX_DOUBLE);
  Tensor r = random(y.shape(), -1, 1, 7);
  backward(y, r);
  const double eps = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(vars[i].grad().defined()) << "no gradient for input " << i;
    ASSERT_EQ(vars[i].grad().shape(), xs[i].shape()) << "input " << i;
    double* p = vars[i].data().data<double>();
    for (int64_t j = 0; j < xs[i].numel(); ++j) {
      const double keep = p[j];
      NoGradGuard ng;
      p[j] = keep + eps;
      const double up = weighted_sum(f(vars).data(), r);
      p[j] = keep - eps;
      const double down = weighted_sum(f(vars).data(), r);
      p[j] = keep;
      const double numeric = (up - down) / (2 * eps);
      ASSERT_NEAR(vars[i].grad().data<double>()[j], numeric, tol * std::max(1.0, std::abs(numeric)))
          << "input " << i << " element " << j;
    }
  }
}

Fn op(const std::string& type, int64_t opset, Attrs a = {}) {
  return [=](const std::vector<Variable>& v) { return apply(type, v, a, 1, "", opset)[0]; };
}

TEST(GradientsNorm, LayerNormalizationOverTheLastAxes) {
  check_grad(op("LayerNormalization", 17), {random({2, 3, 4}, -1, 1, 1), random({4}, 0.5, 1.5, 2), random({4}, -1, 1, 3)});
  check_grad(op("LayerNormalization", 17, Attrs().set("axis", int64_t(1)).set("epsilon", 1e-3f)),
             {random({2, 3, 4}, -1, 1, 4), random({3, 4}, 0.5, 1.5, 5)});
}

TEST(GradientsNorm, RMSNormalization) {
  check_grad(op("RMSNormalization", 23), {random({3, 5}, -1, 1, 6), random({5}, 0.5, 1.5, 7)});
  check_grad(op("RMSNormalization", 23, Attrs().set("axis", int64_t(-2))),
             {random({2, 3, 4}, -1, 1, 8), random({3, 4}, 0.5, 1.5, 9)});
}

TEST(GradientsNorm, GroupNormalizationPerChannelAndPerGroup) {
  check_grad(op("GroupNormalization", 21, Attrs().set("num_groups", int64_t(2))),
             {random({2, 4, 3}, -1, 1, 10), random({4}, 0.5, 1.5, 11), random({4}, -1, 1, 12)});
  check_grad(op("GroupNormalization", 18, Attrs().set("num_groups", int64_t(2))),
             {random({2, 4, 2, 2}, -1, 1, 13), random({2}, 0.5, 1.5, 14), random({2}, -1, 1, 15)});
}

TEST(GradientsNorm, GeluExactAndTanh) {
  check_grad(op("Gelu", 20), {random({3, 4}, -3, 3, 16)});
  check_grad(op("Gelu", 20, Attrs().set("approximate", "tanh")), {random({3, 4}, -3, 3, 17)});
}

// The gradients are found on the forward kernels' hooks, and an op without
// one is named when backward reaches it.
TEST(GradientsNorm, HooksAreWhereGradientsComeFrom) {
  ensure_loaded();
  EXPECT_TRUE(has_gradient("LayerNormalization"));
  EXPECT_TRUE(has_gradient("Gelu"));
  EXPECT_TRUE(has_gradient("ConvReluMaxPool", "ai.singa"));
  EXPECT_FALSE(has_gradient("Bernoulli"));
  EXPECT_FALSE(has_gradient("NoSuchOp"));
  Variable x(random({3}, -1, 1, 1), true);
  try {
    backward(reduce_sum(apply1("Bernoulli", {apply1("Sigmoid", {x})}), {}));
    FAIL() << "backward through Bernoulli succeeded";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Bernoulli'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no gradient"), std::string::npos) << e.what();
  }
}

}  // namespace
