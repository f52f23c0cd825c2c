#include "compare.hpp"
#include "tensor_values.hpp"

#include <singa/kernel.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace singa {
namespace cli {

namespace {

std::string index_text(const Shape& shape, int64_t flat) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = std::max<int64_t>(shape[d], 1);
    idx[d] = flat % extent;
    flat /= extent;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string compare_floats(const Tensor& expected, const Tensor& got, const Tolerance& tol) {
  std::vector<double> e = to_doubles(expected), g = to_doubles(got);
  const double inf = std::numeric_limits<double>::infinity();
  int64_t bad = 0, worst = -1;
  double worst_excess = -1, max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    double a = g[i], b = e[i];
    bool ok;
    double abs_err, excess;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
      abs_err = excess = ok ? 0 : inf;
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
      abs_err = excess = ok ? 0 : inf;
    } else {
      abs_err = std::fabs(a - b);
      excess = abs_err - (tol.atol + tol.rtol * std::fabs(b));
      ok = excess <= 0;
    }
    if (ok) continue;
    ++bad;
    double rel = b != 0 && std::isfinite(abs_err) ? abs_err / std::fabs(b) : inf;
    max_abs = std::max(max_abs, abs_err);
    max_rel = std::max(max_rel, rel);
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = int64_t(i);
    }
  }
  if (!bad) return "";
  double a = g[size_t(worst)], b = e[size_t(worst)];
  double abs_err = std::fabs(a - b);
  double rel = b != 0 ? abs_err / std::fabs(b) : inf;
  return std::to_string(bad) + " of " + std::to_string(e.size()) + " values differ; worst at " +
         index_text(expected.shape(), worst) + ": got " + format_value(a) + ", expected " + format_value(b) +
         " (abs error " + format_value(abs_err) + ", rel error " + format_value(rel) + ")" +
         (bad > 1 ? "; max abs error " + format_value(max_abs) + ", max rel error " + format_value(max_rel) : "") +
         " (rtol " + format_value(tol.rtol) + ", atol " + format_value(tol.atol) + ")";
}

std::string compare_exact(const Tensor& expected, const Tensor& got) {
  const size_t width = dtype_size(expected.dtype());
  const int bits = dtype_bits(expected.dtype());
  const auto* e = static_cast<const unsigned char*>(expected.raw_data());
  const auto* g = static_cast<const unsigned char*>(got.raw_data());
  const bool is_bool = expected.dtype() == SINGA_ONNX_BOOL;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool same;
    if (bits > 0 && bits < 8) {
      // Packed (4-bit, 2-bit): compare element codes; the last byte's unused bits are padding.
      same = sdk::packed_get(e, i, bits) == sdk::packed_get(g, i, bits);
    } else {
      const unsigned char* ei = e + size_t(i) * width;
      const unsigned char* gi = g + size_t(i) * width;
      same = is_bool ? (*ei != 0) == (*gi != 0) : std::memcmp(ei, gi, width) == 0;
    }
    if (same) continue;
    if (first < 0) first = i;
    ++bad;
  }
  if (!bad) return "";
  std::string values;
  if (is_numeric_dtype(expected.dtype())) {
    // Widening is only for the message; the comparison above is exact.
    double gv = to_doubles(got)[size_t(first)], ev = to_doubles(expected)[size_t(first)];
    values = ": got " + format_value(gv) + ", expected " + format_value(ev) + " (abs error " +
             format_value(std::fabs(gv - ev)) + ")";
  }
  return std::to_string(bad) + " of " + std::to_string(expected.numel()) + " values differ; first at " +
         index_text(expected.shape(), first) + values;
}

std::string compare_strings(const Tensor& expected, const Tensor& got) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < expected.numel(); ++i)
    if (expected.strings()[size_t(i)] != got.strings()[size_t(i)]) {
      if (first < 0) first = i;
      ++bad;
    }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(expected.numel()) + " strings differ; first at " +
         index_text(expected.shape(), first) + ": got \"" + got.strings()[size_t(first)] + "\", expected \"" +
         expected.strings()[size_t(first)] + "\"";
}

}  // namespace

std::string compare_tensors(const Tensor& expected_any, const Tensor& got_any, const Tolerance& tol) {
  Tensor expected = expected_any.to_host(), got = got_any.to_host();
  if (expected.dtype() != got.dtype())
    return std::string("element type ") + dtype_name(got.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (expected.shape() != got.shape())
    return "shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(expected.shape());
  if (expected.numel() == 0) return "";
  if (expected.dtype() == SINGA_ONNX_STRING) return compare_strings(expected, got);
  if (is_float_dtype(expected.dtype())) return compare_floats(expected, got, tol);
  return compare_exact(expected, got);
}

}  // namespace cli
}  // namespace singa
