// Gradients of the sampling ops (RoiAlign, DeformConv) and OptionalGetElement
// against float64 central differences at random, non-integer sample
// positions (the node suites' cases sit on pixel corners, where many elements
// are kinks), and the gradient checker's verdict on one element
// (tools/gradient_check.hpp): a jump is skipped, a wrong derivative is not.
#include "grad_check.hpp"
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

using testing_util::check_grad;
using testing_util::ensure_loaded;
using testing_util::onnx_op;
using testing_util::random_doubles;

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
        check_grad(onnx_op("RoiAlign", 16, a), {random_doubles({2, 3, 7, 6}, -1, 1, 1), rois(), int64s({1, 0, 1})},
                   {true, false, false});
      }
}

TEST(GradientsSpatial, RoiAlignOpset10) {
  Attrs a = Attrs().set("output_height", int64_t(2)).set("output_width", int64_t(2)).set("sampling_ratio", int64_t(0));
  check_grad(onnx_op("RoiAlign", 10, a), {random_doubles({1, 2, 7, 6}, -1, 1, 2), rois(), int64s({0, 0, 0})}, {true, false, false});
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
  check_grad(onnx_op("DeformConv", 19, a),
             {random_doubles({2, 4, 5, 6}, -1, 1, 3), random_doubles({6, 2, 2, 3}, -1, 1, 4),
              random_doubles({2, 2 * K * 2, 3, 4}, -1.7, 1.7, 5), random_doubles({6}, -1, 1, 6),
              random_doubles({2, 2 * K, 3, 4}, 0, 1, 7)},
             {true, true, true, true, true});
}

TEST(GradientsSpatial, DeformConvWithoutMaskOrBias) {
  check_grad(onnx_op("DeformConv", 22),
             {random_doubles({1, 2, 4, 4}, -1, 1, 8), random_doubles({3, 2, 2, 2}, -1, 1, 9),
              random_doubles({1, 8, 3, 3}, -2.5, 2.5, 10)},
             {true, true, true});
}

TEST(GradientsSpatial, OptionalGetElementOfATensorPassesTheGradientOn) {
  check_grad(onnx_op("OptionalGetElement", 18), {random_doubles({2, 3}, -1, 1, 11)}, {true});
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
