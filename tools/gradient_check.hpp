// gradient_check.hpp - checking one op's gradient on an ONNX backend test case:
// singa's backward (autograd::apply + backward) against float64 central
// differences, and the op's float64 forward against the case's reference.
#ifndef SINGA_TOOLS_GRADIENT_CHECK_HPP
#define SINGA_TOOLS_GRADIENT_CHECK_HPP

#include "conformance_case.hpp"

#include <cstdint>
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

// Checks the case's first data set. Single-node models of the default domain
// only. Never throws: errors become a FAIL with the message.
GradResult check_case_gradient(const TestCase& c, const GradCheckOptions& options);

// One-line encoding of a result to cross the pipe from an isolated child.
std::string encode_grad_result(const GradResult& r);
GradResult decode_grad_result(const std::string& text);

}  // namespace cli
}  // namespace singa
#endif
