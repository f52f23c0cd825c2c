// StringConcat (20): element-wise concatenation of two string tensors with
// multidirectional (NumPy) broadcasting.
#include "register.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace text {
namespace {

std::string shape_str(const sdk::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

class StringConcat {
 public:
  explicit StringConcat(const sdk::Node&) {}

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0) && ctx.has_input(1), "StringConcat needs inputs X and Y");
    const sdk::Tensor x = ctx.input(0), y = ctx.input(1);
    if (x.dtype() != SINGA_ONNX_STRING || y.dtype() != SINGA_ONNX_STRING)
      sdk::fail(std::string("X and Y must be string tensors, got ") + sdk::dtype_name(x.dtype()) + " and " +
                sdk::dtype_name(y.dtype()));
    const sdk::Shape xs = x.shape(), ys = y.shape();
    const size_t rank = std::max(xs.size(), ys.size());
    // Both shapes right-aligned to `rank`, and the broadcast result.
    sdk::Shape a(rank, 1), b(rank, 1), out(rank, 1);
    std::copy(xs.begin(), xs.end(), a.begin() + (rank - xs.size()));
    std::copy(ys.begin(), ys.end(), b.begin() + (rank - ys.size()));
    for (size_t d = 0; d < rank; ++d) {
      if (a[d] != b[d] && a[d] != 1 && b[d] != 1)
        sdk::fail("X " + shape_str(xs) + " and Y " + shape_str(ys) + " cannot be broadcast together (axis " +
                  std::to_string(d) + ")");
      out[d] = a[d] == 1 ? b[d] : a[d];
    }
    ctx.output(0, out, SINGA_ONNX_STRING);
    const int64_t n = sdk::numel(out);
    if (n == 0) return;
    // Element strides of X and Y in the broadcast index space (0 on broadcast axes).
    std::vector<int64_t> sa(rank, 0), sb(rank, 0);
    for (int64_t d = int64_t(rank) - 1, ma = 1, mb = 1; d >= 0; --d) {
      sa[size_t(d)] = a[size_t(d)] == 1 ? 0 : ma;
      sb[size_t(d)] = b[size_t(d)] == 1 ? 0 : mb;
      ma *= a[size_t(d)];
      mb *= b[size_t(d)];
    }
    std::vector<int64_t> idx(rank, 0);
    int64_t ia = 0, ib = 0;
    std::string s;
    for (int64_t i = 0; i < n; ++i) {
      s.assign(sdk::Context::string_at(x, ia));
      s += sdk::Context::string_at(y, ib);
      ctx.set_string(0, i, s);
      // Odometer step over the output index, keeping ia/ib in sync.
      for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
        const size_t u = size_t(d);
        if (++idx[u] < out[u]) {
          ia += sa[u];
          ib += sb[u];
          break;
        }
        ia -= sa[u] * (out[u] - 1);
        ib -= sb[u] * (out[u] - 1);
        idx[u] = 0;
      }
    }
  }
};

}  // namespace

void register_string_concat(sdk::Registrar& reg) {
  const uint64_t str = sdk::bit(SINGA_ONNX_STRING);
  reg.kernel<StringConcat>("", "StringConcat", 20, SINGA_VERSION_OPEN, "cpu", {{"T", 0, str}, {"T", 1, str}});
}

}  // namespace text
}  // namespace singa
