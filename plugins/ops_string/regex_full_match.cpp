// RegexFullMatch (20): whether each string of X matches `pattern` as a whole.
// ONNX names RE2 syntax, so the pattern is compiled by RE2 itself.
#include "register.hpp"

#include <re2/re2.h>

#include <cstdint>
#include <memory>
#include <string>

namespace singa {
namespace text {
namespace {

class RegexFullMatch {
 public:
  explicit RegexFullMatch(const sdk::Node& node) {
    if (!node.has_attr("pattern")) node.fail("required attribute pattern is missing");
    const std::string pattern = node.attr_string("pattern", "");
    RE2::Options opts;
    opts.set_log_errors(false);
    re_ = std::make_unique<RE2>(pattern, opts);
    if (!re_->ok()) node.fail("pattern '" + pattern + "' is not a valid RE2 expression: " + re_->error());
  }

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    const sdk::Tensor x = ctx.input(0);
    if (x.dtype() != SINGA_ONNX_STRING)
      sdk::fail(std::string("X must be a string tensor, got ") + sdk::dtype_name(x.dtype()));
    const sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_BOOL);
    bool* py = y.data<bool>();
    const int64_t n = x.numel();
    // RE2 matching is thread-safe on a const object.
    ctx.parallel_for(n, 256, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = RE2::FullMatch(sdk::Context::string_at(x, i), *re_);
    });
  }

 private:
  std::unique_ptr<RE2> re_;
};

}  // namespace

void register_regex_full_match(sdk::Registrar& reg) {
  reg.kernel<RegexFullMatch>("", "RegexFullMatch", 20, SINGA_VERSION_OPEN, "cpu",
                             {{"T1", 0, sdk::bit(SINGA_ONNX_STRING)}, {"T2", -1, sdk::bit(SINGA_ONNX_BOOL)}});
}

}  // namespace text
}  // namespace singa
