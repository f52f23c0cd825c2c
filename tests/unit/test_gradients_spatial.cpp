// Gradients of the sampling ops (RoiAlign, DeformConv) and OptionalGetElement
// against float64 central differences at random, non-integer sample
// positions (the node suites' cases sit on pixel corners, where many elements
// are kinks), and the gradient checker's verdict on one element
// (tools/gradient_check.hpp): a jump is skipped, a wrong derivative is not.
#include "test_util.hpp"
#include "../../tools/gradient_check.hpp"

#include <singa/autograd.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using singa::Shape;
using singa::Tensor;
using namespace singa::autograd;
using singa::cli::judge_point;
using singa::cli::PointVerdict;

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

Tensor doubles(const Shape& s, const std::vector<double>& v) {
  Tensor t(s, SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = v[size_t(i)];
  return t;
}

Tensor int64s(const std::vector<int64_t>& v) {
  Tensor t({int64_t(v.size())}, SINGA_ONNX_INT64);
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

double weighted_sum(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
  return s;
}

// Checks d(sum(f(x) * R))/dx for the inputs marked in `wrt` (the others are
// constants) against central differences, element by element.
void check_grad(const Fn& f, const std::vector<Tensor>& xs, const std::vector<bool>& wrt, double tol = 1e-6) {
  ensure_loaded();
  std::vector<Variable> vars;
  for (size_t i = 0; i < xs.size(); ++i) vars.emplace_back(xs[i].clone(), bool(wrt[i]));
  Variable y = f(vars);
  ASSERT_EQ(y.dtype(), SINGA_ONNX_DOUBLE);
  Tensor r = random(y.shape(), -1, 1, 7);
  backward(y, r);
  const double eps = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!wrt[i]) continue;
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

// Regions inside and partly outside a 7x6 image, at non-integer corners.
Tensor rois() {
  return doubles({3, 4}, {0.3, 0.7, 4.6, 5.2, 1.1, 0.2, 2.9, 3.3, -0.6, 2.4, 6.8, 7.9});
}

TEST(GradientsSpatial, RoiAlignAverageAndMaxBothCoordinateModes) {
  for (const char* mode : {"avg", "max"})
    for (const char* ct : {"half_pixel", "output_half_pixel"})
      for (int64_t sampling : {int64_t(0), int64_t(2)}) {
        SCOPED_TRACE(std::string(mode) + " " + ct + " sampling_ratio " + std::to_string(sampling));
        Attrs a = Attrs()
                      .set("mode", mode)
                      .set("coordinate_transformation_mode", ct)
                      .set("sampling_ratio", sampling)
                      .set("output_height", int64_t(3))
                      .set("output_width", int64_t(2))
                      .set("spatial_scale", 0.9f);
        check_grad(op("RoiAlign", 16, a), {random({2, 3, 7, 6}, -1, 1, 1), rois(), int64s({1, 0, 1})},
                   {true, false, false});
      }
}

TEST(GradientsSpatial, RoiAlignOpset10) {
  Attrs a = Attrs().set("output_height", int64_t(2)).set("output_width", int64_t(2)).set("sampling_ratio", int64_t(0));
  check_grad(op("RoiAlign", 10, a), {random({1, 2, 7, 6}, -1, 1, 2), rois(), int64s({0, 0, 0})}, {true, false, false});
}

TEST(GradientsSpatial, DeformConvWithGroupsOffsetGroupsMaskAndBias) {
  // X [2, 4, 5, 6], W [6, 2, 2, 3] (group 2), 2 offset groups, stride 2 x 1,
  // dilation 1 x 2, pads 1: output [2, 6, 3, 4].
  Attrs a = Attrs()
                .set("group", int64_t(2))
                .set("offset_group", int64_t(2))
                .set("strides", std::vector<int64_t>{2, 1})
                .set("dilations", std::vector<int64_t>{1, 2})
                .set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const int64_t K = 2 * 3;
  check_grad(op("DeformConv", 19, a),
             {random({2, 4, 5, 6}, -1, 1, 3), random({6, 2, 2, 3}, -1, 1, 4), random({2, 2 * K * 2, 3, 4}, -1.7, 1.7, 5),
              random({6}, -1, 1, 6), random({2, 2 * K, 3, 4}, 0, 1, 7)},
             {true, true, true, true, true});
}

TEST(GradientsSpatial, DeformConvWithoutMaskOrBias) {
  check_grad(op("DeformConv", 22), {random({1, 2, 4, 4}, -1, 1, 8), random({3, 2, 2, 2}, -1, 1, 9),
                                    random({1, 8, 3, 3}, -2.5, 2.5, 10)},
             {true, true, true});
}

TEST(GradientsSpatial, OptionalGetElementOfATensorPassesTheGradientOn) {
  check_grad(op("OptionalGetElement", 18), {random({2, 3}, -1, 1, 11)}, {true});
}

// L(x) for the element set to x, as the checker sees it.
using singa::cli::LossAt;
LossAt loss_of(std::function<double(double)> f) {
  return [f](double& x) { return (long double)f(x); };
}

TEST(GradientsSpatial, CheckerTellsJumpsKinksAndWrongDerivativesApart) {
  const double atol = 1e-5, rtol = 1e-3, h = 1e-6;
  auto judge = [&](std::function<double(double)> f, double x0, double analytic) {
    return judge_point(loss_of(f), x0, f(x0), h, analytic, atol, rtol).verdict;
  };
  auto smooth = [](double x) { return std::sin(3 * x); };
  EXPECT_EQ(judge(smooth, 0.4, 3 * std::cos(1.2)), PointVerdict::kMatch);
  // A wrong rule at a smooth point: the differences settle, so it fails.
  EXPECT_EQ(judge(smooth, 0.4, 2 * std::cos(1.2)), PointVerdict::kMismatch);
  EXPECT_EQ(judge(smooth, 0.4, 0.0), PointVerdict::kMismatch);
  // LpNormalization of an all-zero lane: sign(x), both one-sided slopes
  // equal and huge. No derivative: skipped whatever the analytic value.
  auto sign = [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; };
  EXPECT_EQ(judge(sign, 0.0, 0.0), PointVerdict::kJump);
  EXPECT_EQ(judge([&](double x) { return sign(x) + 2 * x; }, 0.0, 5.0), PointVerdict::kJump);
  // Relu at 0: one-sided slopes 0 and 1.
  EXPECT_EQ(judge([](double x) { return x > 0 ? x : 0.0; }, 0.0, 0.0), PointVerdict::kKink);
  EXPECT_EQ(judge(smooth, NAN, 0.0), PointVerdict::kNotFinite);
  // Float32 rounding noise in L must not pass a wrong derivative off as a
  // jump: L rounded to float, step 1e-3, tolerances 1e-2.
  auto noisy = [](double x) { return double(float(std::exp(x) * 1000.0f)) / 1000.0; };
  for (double x0 : {0.1, 0.37, 0.9}) {
    const PointVerdict v =
        judge_point(loss_of(noisy), x0, noisy(x0), 1e-3, 0.8 * std::exp(x0), 1e-2, 1e-2).verdict;
    EXPECT_EQ(v, PointVerdict::kMismatch) << "x0 " << x0;
    EXPECT_EQ(judge_point(loss_of(noisy), x0, noisy(x0), 1e-3, std::exp(x0), 1e-2, 1e-2).verdict, PointVerdict::kMatch)
        << "x0 " << x0;
  }
}

}  // namespace
