// StringNormalizer (10-17): drops stop words, then upper- or lower-cases what
// is left. Case folding covers ASCII letters; other UTF-8 text passes through
// unchanged (the `locale` attribute is accepted but only "en_US"-like ASCII
// rules apply, which is what the ONNX test data exercises).
#include "common.hpp"
#include "registry.hpp"

#include <cctype>
#include <set>

namespace singa {
namespace ops {
namespace tensor {

namespace {

using sdk::Context;
using sdk::Node;
using sdk::Tensor;

std::string fold(std::string s, bool upper) {
  for (char& c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 128) c = char(upper ? std::toupper(u) : std::tolower(u));
  }
  return s;
}

class StringNormalizer {
 public:
  explicit StringNormalizer(const Node& node) {
    std::string action = node.attr_string("case_change_action", "NONE");
    if (action == "UPPER") mode_ = kUpper;
    else if (action == "LOWER") mode_ = kLower;
    else if (action != "NONE") node.fail("case_change_action must be LOWER, UPPER or NONE, got '" + action + "'");
    case_sensitive_ = node.attr_int("is_case_sensitive", 0) != 0;
    for (const auto& w : node.attr_strings("stopwords")) stop_.insert(case_sensitive_ ? w : fold(w, false));
  }

  void compute(Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    Tensor x = ctx.input(0);
    sdk::check(x.dtype() == SINGA_ONNX_STRING, "X must be a string tensor");
    auto shape = x.shape();
    bool two_d = shape.size() == 2;
    SINGA_CHECK(shape.size() == 1 || (two_d && shape[0] == 1),
                "X must have shape [C] or [1, C], got rank " + std::to_string(shape.size()));
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.numel(); ++i) {
      std::string s = Context::string_at(x, i);
      if (!stop_.empty() && stop_.count(case_sensitive_ ? s : fold(s, false))) continue;
      kept.push_back(mode_ == kNone ? s : fold(s, mode_ == kUpper));
    }
    // Everything dropped: one empty string, keeping the input's rank.
    if (kept.empty()) kept.emplace_back();
    int64_t n = int64_t(kept.size());
    Tensor y = ctx.output(0, two_d ? singa::sdk::Shape{1, n} : singa::sdk::Shape{n}, SINGA_ONNX_STRING);
    (void)y;
    for (int64_t i = 0; i < n; ++i) ctx.set_string(0, i, kept[size_t(i)]);
  }

 private:
  enum Mode { kNone, kUpper, kLower } mode_ = kNone;
  bool case_sensitive_ = false;
  std::set<std::string> stop_;
};

}  // namespace

void register_string_normalizer(sdk::Registrar& reg) {
  reg.kernel<StringNormalizer>("", "StringNormalizer", 10, SINGA_VERSION_OPEN, "cpu", {{"X", 0, sdk::bit(SINGA_ONNX_STRING)}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
