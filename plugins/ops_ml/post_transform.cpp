// post_transform.cpp - softmax, logistic and probit on score rows.
#include "post_transform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace singa {
namespace ops {
namespace ml {

PostTransform read_post_transform(const sdk::Node& node) {
  const std::string s = node.attr_string("post_transform", "NONE");
  if (s == "NONE") return PostTransform::kNone;
  if (s == "SOFTMAX") return PostTransform::kSoftmax;
  if (s == "LOGISTIC") return PostTransform::kLogistic;
  if (s == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (s == "PROBIT") return PostTransform::kProbit;
  node.fail("post_transform '" + s + "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

double logistic(double x) {
  // Split by sign so that exp never overflows.
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double probit(double p) {
  if (!(p > 0.0)) return p == 0.0 ? -std::numeric_limits<double>::infinity() : std::nan("");
  if (!(p < 1.0)) return p == 1.0 ? std::numeric_limits<double>::infinity() : std::nan("");
  // probit(p) = sqrt(2) * erfinv(2p - 1). Winitzki's closed form is good to
  // ~2e-3; Newton steps on erf(y) = z bring it to double precision.
  const double z = 2.0 * p - 1.0;
  const double a = 0.147, pi = 3.14159265358979323846;
  const double ln = std::log(1.0 - z * z);
  const double t = 2.0 / (pi * a) + ln / 2.0;
  double y = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), z);
  for (int i = 0; i < 3; ++i) {
    const double err = std::erf(y) - z;
    y -= err / (2.0 / std::sqrt(pi) * std::exp(-y * y));
  }
  return std::sqrt(2.0) * y;
}

void apply_post_transform(PostTransform t, double* s, int64_t n) {
  switch (t) {
    case PostTransform::kNone: return;
    case PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) s[i] = logistic(s[i]);
      return;
    case PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) s[i] = probit(s[i]);
      return;
    case PostTransform::kSoftmax:
    case PostTransform::kSoftmaxZero: {
      const bool keep_zero = t == PostTransform::kSoftmaxZero;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i)
        if (!(keep_zero && s[i] == 0.0)) mx = std::max(mx, s[i]);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        s[i] = (keep_zero && s[i] == 0.0) ? 0.0 : std::exp(s[i] - mx);
        sum += s[i];
      }
      if (sum > 0)
        for (int64_t i = 0; i < n; ++i) s[i] /= sum;
      return;
    }
  }
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
