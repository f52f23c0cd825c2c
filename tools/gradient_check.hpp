// gradient_check.hpp - checking one op's gradient on an ONNX backend test case:
// singa's backward (autograd::apply + backward) against float64 central
// differences, and the op's float64 forward against the case's reference.
#ifndef SINGA_TOOLS_GRADIENT_CHECK_HPP
#define SINGA_TOOLS_GRADIENT_CHECK_HPP

#include "conformance_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

namespace singa {
namespace cli {

struct GradCheckOptions {
  // Analytic vs numeric gradient, per element: |a - n| <= atol + rtol * |n|
  // (the defaults of torch.autograd.gradcheck) when the op runs in float64.
  double rtol = 1e-3;
  double atol = 1e-5;
  // Elements perturbed per differentiable input; larger inputs are sampled
  // (deterministically, from the case name).
  int max_points = 48;
};

// PASS: every differentiable input's gradient matches; FAIL: a mismatch, or
// the forward or backward failed; NOGRAD: the op has no gradient hook;
// SKIP: nothing to check (reason says why).
enum class GradStatus { kPass, kFail, kNoGradient, kSkip };
const char* grad_status_word(GradStatus s);  // "PASS", "FAIL", "NOGRAD", "SKIP"

struct GradResult {
  GradStatus status = GradStatus::kFail;
  std::string op;       // the case's op type ("" when the model could not be read)
  std::string reason;   // why it failed or was skipped; for PASS, notes (float32 fallback)
  double max_abs = 0;   // worst gradient element over the checked inputs
  double max_rel = 0;
  double ms = 0;
};

// How one element's analytic derivative fares against central differences
// of the checked scalar L along that element.
enum class PointVerdict {
  kMatch,      // |analytic - numeric| <= atol + rtol * |numeric|
  kMismatch,   // a derivative exists (the differences settle) and disagrees
  kKink,       // the one-sided slopes differ (Relu at 0, a tie in Max)
  kJump,       // L jumps at x0: the central difference grows like 1/step
  kNotFinite,  // x0 or L at a neighbour is infinite or NaN
};

struct PointCheck {
  PointVerdict verdict = PointVerdict::kNotFinite;
  double numeric = 0;  // the central difference at the first step
};

// L(x) for the element set to x; x is updated to the value actually stored
// (float32 rounds it).
using LossAt = std::function<long double(double& x)>;

// Judges one element at x0 (L(x0) = l0) with step h. A kink is two one-sided
// slopes that disagree. When the central difference disagrees with the
// analytic value, it is taken again at h/2 and h/4: a derivative's settles
// (the analytic value is then wrong: kMismatch), a jump's doubles with each
// halving (kJump, no derivative to compare). Anything between is a mismatch,
// so noise cannot turn a wrong gradient into a skipped element.
inline PointCheck judge_point(const LossAt& loss_at, double x0, long double l0, double h, double analytic,
                              double atol, double rtol) {
  PointCheck r;
  if (!std::isfinite(x0)) return r;
  // Central difference with step s; false when L is not finite there or the
  // step vanished in rounding. left/right get the one-sided slopes.
  auto central = [&](double s, double* num, double* left, double* right) {
    double xp = x0 + s, xm = x0 - s;
    const long double lp = loss_at(xp), lm = loss_at(xm);
    if (!std::isfinite(double(lp)) || !std::isfinite(double(lm)) || xp == xm) return false;
    *num = double((lp - lm) / (xp - xm));
    if (left) *left = double((l0 - lm) / (x0 - xm)), *right = double((lp - l0) / (xp - x0));
    return true;
  };
  double num = 0, left = 0, right = 0;
  if (!central(h, &num, &left, &right)) return r;
  r.numeric = num;
  auto near = [&](double a, double b) { return std::fabs(a - b) <= atol + rtol * std::max(std::fabs(a), std::fabs(b)); };
  if (!near(left, right)) {
    r.verdict = PointVerdict::kKink;
    return r;
  }
  if (std::fabs(analytic - num) <= atol + rtol * std::fabs(num)) {
    r.verdict = PointVerdict::kMatch;
    return r;
  }
  r.verdict = PointVerdict::kMismatch;
  double n2 = 0, n4 = 0;
  if (!central(h / 2, &n2, nullptr, nullptr) || !central(h / 4, &n4, nullptr, nullptr)) return r;
  // A jump J plus a slope s gives J / (2 step) + s: each halving adds as much
  // again as the last one did, twice over. The growth must be well past the
  // tolerance and the doubling clean (to 10%).
  const double d1 = n2 - num, d2 = n4 - n2;
  if (std::fabs(d1) > 10 * (atol + rtol * std::fabs(num)) && std::fabs(d2 - 2 * d1) <= 0.1 * std::fabs(d2))
    r.verdict = PointVerdict::kJump;
  return r;
}

// Checks the case's first data set: a single node of the default domain, or
// a function body (an `_expanded` case) whose nodes all have gradients, with
// the tags of the single-node case it expands. Never throws: errors become a
// FAIL with the message.
GradResult check_case_gradient(const TestCase& c, const GradCheckOptions& options);

// One-line encoding of a result to cross the pipe from an isolated child.
std::string encode_grad_result(const GradResult& r);
GradResult decode_grad_result(const std::string& text);

}  // namespace cli
}  // namespace singa
#endif
