// grad_check.hpp - what the autograd suites share: float64 inputs and a
// central-difference check of the gradients that backward() writes.
#ifndef SINGA_TESTS_GRAD_CHECK_HPP
#define SINGA_TESTS_GRAD_CHECK_HPP

#include "test_util.hpp"

#include <singa/autograd.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace testing_util {

using GradFn = std::function<singa::autograd::Variable(const std::vector<singa::autograd::Variable>&)>;

// Uniform float64 values in [lo, hi) from a fixed seed.
inline singa::Tensor random_doubles(const singa::Shape& s, double lo = -1, double hi = 1, unsigned seed = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  singa::Tensor t(s, SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(g);
  return t;
}

// sum(y * r) over float64 tensors of equal size: the scalar whose gradient
// backward(y, r) computes.
inline double weighted_sum(const singa::Tensor& y, const singa::Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
  return s;
}

// Checks d(sum(f(x) * R))/dx, for a fixed random R, of every float64 input that
// `grad` marks (all when empty; the others are constants) against central
// differences, element by element.
inline void check_grad(const GradFn& f, const std::vector<singa::Tensor>& xs, std::vector<bool> grad = {},
                       double tol = 1e-6) {
  using namespace singa::autograd;
  ensure_loaded();
  if (grad.empty()) grad.assign(xs.size(), true);
  std::vector<Variable> vars;
  for (size_t i = 0; i < xs.size(); ++i) vars.emplace_back(xs[i].clone(), bool(grad[i]));
  Variable y = f(vars);
  ASSERT_EQ(y.dtype(), SINGA_ONNX_DOUBLE);
  singa::Tensor r = random_doubles(y.shape(), -1, 1, 7);
  backward(y, r);
  const double eps = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!grad[i]) continue;
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

// One ONNX node of `type` at `opset` as a function of its inputs.
inline GradFn onnx_op(const std::string& type, int64_t opset, singa::autograd::Attrs a = {}) {
  return [=](const std::vector<singa::autograd::Variable>& v) {
    return singa::autograd::apply(type, v, a, 1, "", opset)[0];
  };
}

}  // namespace testing_util
#endif
