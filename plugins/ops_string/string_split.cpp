// StringSplit (20): splits every string of X at `delimiter` (or, when it is
// empty or absent, at runs of whitespace, ignoring leading and trailing
// whitespace) at most `maxsplit` times, as Python's str.split does. Y has X's
// shape plus one axis as long as the longest split, padded with ""; Z counts
// the pieces of each string.
#include "register.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace text {
namespace {

// The byte length of the whitespace character at s[i] (0 if none): what
// Python's str.isspace() accepts, ASCII and the UTF-8 encoded Unicode spaces.
size_t space_len(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c < 0xc2) return 0;
  auto at = [&](size_t k) -> unsigned { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (c == 0xc2) return (at(1) == 0x85 || at(1) == 0xa0) ? 2 : 0;  // U+0085, U+00A0
  if (c == 0xe1) return (at(1) == 0x9a && at(2) == 0x80) ? 3 : 0;  // U+1680
  if (c == 0xe2) {
    const unsigned b = at(1), d = at(2);
    if (b == 0x80 && ((d >= 0x80 && d <= 0x8a) || d == 0xa8 || d == 0xa9 || d == 0xaf)) return 3;  // U+2000-200A, 2028, 2029, 202F
    if (b == 0x81 && d == 0x9f) return 3;  // U+205F
    return 0;
  }
  if (c == 0xe3) return (at(1) == 0x80 && at(2) == 0x80) ? 3 : 0;  // U+3000
  return 0;
}

// str.split() / str.split(None, maxsplit); maxsplit < 0 means no limit.
void split_space(const std::string& s, int64_t maxsplit, std::vector<std::string>& out) {
  size_t i = 0, n = s.size();
  auto skip = [&] {
    while (i < n) {
      const size_t k = space_len(s, i);
      if (!k) break;
      i += k;
    }
  };
  for (int64_t left = maxsplit; left != 0; --left) {
    skip();
    if (i >= n) break;
    const size_t j = i;
    while (i < n && !space_len(s, i)) ++i;
    out.emplace_back(s, j, i - j);
  }
  skip();
  if (i < n) out.emplace_back(s, i, n - i);
}

// str.split(sep, maxsplit) with a non-empty separator.
void split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, std::vector<std::string>& out) {
  size_t i = 0;
  for (int64_t left = maxsplit; left != 0; --left) {
    const size_t j = s.find(sep, i);
    if (j == std::string::npos) break;
    out.emplace_back(s, i, j - i);
    i = j + sep.size();
  }
  out.emplace_back(s, i, std::string::npos);
}

class StringSplit {
 public:
  explicit StringSplit(const sdk::Node& node)
      : delimiter_(node.attr_string("delimiter", "")), maxsplit_(node.attr_int("maxsplit", -1)) {}

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    const sdk::Tensor x = ctx.input(0);
    if (x.dtype() != SINGA_ONNX_STRING)
      sdk::fail(std::string("X must be a string tensor, got ") + sdk::dtype_name(x.dtype()));
    const int64_t n = x.numel();
    std::vector<std::vector<std::string>> parts(static_cast<size_t>(n));
    int64_t width = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::string s = sdk::Context::string_at(x, i);
      auto& p = parts[size_t(i)];
      if (delimiter_.empty()) split_space(s, maxsplit_, p);
      else split_sep(s, delimiter_, maxsplit_, p);
      width = std::max(width, int64_t(p.size()));
    }
    sdk::Shape ys = x.shape();
    ys.push_back(width);
    ctx.output(0, ys, SINGA_ONNX_STRING);
    const sdk::Tensor z = ctx.output(1, x.shape(), SINGA_ONNX_INT64);
    int64_t* pz = z.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const auto& p = parts[size_t(i)];
      pz[i] = int64_t(p.size());
      // Outputs start as empty strings, so only the pieces are written.
      for (size_t k = 0; k < p.size(); ++k)
        if (!p[k].empty()) ctx.set_string(0, i * width + int64_t(k), p[k]);
    }
  }

 private:
  std::string delimiter_;
  int64_t maxsplit_;
};

}  // namespace

void register_string_split(sdk::Registrar& reg) {
  reg.kernel<StringSplit>("", "StringSplit", 20, SINGA_VERSION_OPEN, "cpu",
                          {{"T1", 0, sdk::bit(SINGA_ONNX_STRING)}, {"T2", -1, sdk::bit(SINGA_ONNX_STRING)},
                           {"T3", -2, sdk::bit(SINGA_ONNX_INT64)}});
}

}  // namespace text
}  // namespace singa
