#include "spatial.hpp"

#include <algorithm>
#include <string>

namespace singa {
namespace nn {

namespace {

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

void check_positive(const std::vector<int64_t>& v, const char* name, const NodeKernel& k) {
  for (int64_t x : v)
    if (x <= 0) k.fail(std::string("attribute ") + name + " must be positive, got " + list_str(v));
}

void check_len(const std::vector<int64_t>& v, size_t want, const char* name, size_t rank, const NodeKernel& k) {
  if (!v.empty() && v.size() != want)
    k.fail(std::string("attribute ") + name + " has " + std::to_string(v.size()) + " values " + list_str(v) +
           " but the input has " + std::to_string(rank) + " spatial dims (expected " + std::to_string(want) + ")");
}

}  // namespace

WindowAttrs::WindowAttrs(const sdk::Node& node, const NodeKernel& k) {
  kernel_shape = node.attr_ints("kernel_shape");
  strides = node.attr_ints("strides");
  dilations = node.attr_ints("dilations");
  pads = node.attr_ints("pads");
  ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  std::string ap = node.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap.empty())
    auto_pad = AutoPad::NotSet;
  else if (ap == "SAME_UPPER")
    auto_pad = AutoPad::SameUpper;
  else if (ap == "SAME_LOWER")
    auto_pad = AutoPad::SameLower;
  else if (ap == "VALID")
    auto_pad = AutoPad::Valid;
  else
    k.fail("attribute auto_pad has unknown value '" + ap + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  check_positive(kernel_shape, "kernel_shape", k);
  check_positive(strides, "strides", k);
  check_positive(dilations, "dilations", k);
  for (int64_t p : pads)
    if (p < 0) k.fail("attribute pads must not be negative, got " + list_str(pads));
  if (pads.size() % 2) k.fail("attribute pads must hold a begin and an end per axis, got " + list_str(pads));
}

bool Geometry::no_padding() const {
  for (int i = 0; i < kMaxSpatial; ++i)
    if (pb[i] || pe[i]) return false;
  return true;
}

std::vector<int64_t> spatial_dims(const Shape& s, const char* what, const NodeKernel& k) {
  if (s.size() < 3 || s.size() > 2 + size_t(kMaxSpatial))
    k.fail(std::string(what) + " must be [N, C, D1, ...] with 1 to 3 spatial dims, got shape " + shape_str(s));
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

namespace {

// Common setup: validates lengths and fills the unused leading dims.
Geometry start(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
               const NodeKernel& k) {
  size_t r = in.size();
  if (kernel.size() != r)
    k.fail("kernel has " + std::to_string(kernel.size()) + " dims " + list_str(kernel) + " but the input has " +
           std::to_string(r) + " spatial dims " + list_str(in));
  check_len(a.kernel_shape, r, "kernel_shape", r, k);
  check_len(a.strides, r, "strides", r, k);
  check_len(a.dilations, r, "dilations", r, k);
  check_len(a.pads, 2 * r, "pads", r, k);
  Geometry g;
  g.rank = int(r);
  int off = kMaxSpatial - int(r);
  for (int i = 0; i < kMaxSpatial; ++i) {
    g.in[i] = g.k[i] = g.s[i] = g.d[i] = g.out[i] = 1;
    g.pb[i] = g.pe[i] = 0;
  }
  for (size_t i = 0; i < r; ++i) {
    int j = off + int(i);
    if (kernel[i] < 1) k.fail("kernel spatial dims " + list_str(kernel) + " must all be at least 1");
    g.in[j] = in[i];
    g.k[j] = kernel[i];
    g.s[j] = a.strides.empty() ? 1 : a.strides[i];
    g.d[j] = a.dilations.empty() ? 1 : a.dilations[i];
    if (a.auto_pad == AutoPad::NotSet && !a.pads.empty()) {
      g.pb[j] = a.pads[i];
      g.pe[j] = a.pads[i + r];
    }
  }
  return g;
}

}  // namespace

Geometry window_geometry(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                         const NodeKernel& k) {
  Geometry g = start(a, in, kernel, k);
  for (int j = kMaxSpatial - g.rank; j < kMaxSpatial; ++j) {
    int64_t dk = (g.k[j] - 1) * g.d[j] + 1;
    if (a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower) {
      g.out[j] = (g.in[j] + g.s[j] - 1) / g.s[j];
      int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * g.s[j] + dk - g.in[j]);
      // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start.
      g.pb[j] = a.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      g.pe[j] = total - g.pb[j];
      continue;
    }
    int64_t span = g.in[j] + g.pb[j] + g.pe[j] - dk;
    if (span < 0)
      k.fail("window of " + std::to_string(dk) + " (kernel " + std::to_string(g.k[j]) + ", dilation " +
             std::to_string(g.d[j]) + ") is larger than the padded input extent " +
             std::to_string(g.in[j] + g.pb[j] + g.pe[j]) + " of spatial axis " + std::to_string(j - (kMaxSpatial - g.rank)));
    if (a.ceil_mode) {
      g.out[j] = (span + g.s[j] - 1) / g.s[j] + 1;
      // A last window that would start in the end padding is dropped.
      if ((g.out[j] - 1) * g.s[j] >= g.in[j] + g.pb[j]) --g.out[j];
    } else {
      g.out[j] = span / g.s[j] + 1;
    }
  }
  return g;
}

Geometry transpose_geometry(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                            const std::vector<int64_t>& output_padding, const std::vector<int64_t>& output_shape,
                            const NodeKernel& k) {
  Geometry g = start(a, in, kernel, k);
  size_t r = in.size();
  check_len(output_padding, r, "output_padding", r, k);
  std::vector<int64_t> shape = output_shape;
  if (shape.size() == r + 2) shape.erase(shape.begin(), shape.begin() + 2);  // some exporters include N, C
  check_len(shape, r, "output_shape", r, k);
  for (size_t i = 0; i < r; ++i) {
    int j = kMaxSpatial - int(r) + int(i);
    int64_t dk = (g.k[j] - 1) * g.d[j] + 1;
    int64_t op = output_padding.empty() ? 0 : output_padding[i];
    if (op < 0) k.fail("attribute output_padding must not be negative, got " + list_str(output_padding));
    int64_t full = g.s[j] * (g.in[j] - 1) + op + dk;
    bool same = a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower;
    if (!shape.empty() || same) {
      g.out[j] = !shape.empty() ? shape[i] : g.in[j] * g.s[j];
      if (g.out[j] <= 0) k.fail("attribute output_shape must be positive, got " + list_str(output_shape));
      // Positions past the scattered extent (total < 0) stay zero.
      int64_t total = std::max<int64_t>(0, full - g.out[j]);
      g.pb[j] = a.auto_pad == AutoPad::SameLower ? total - total / 2 : total / 2;
      g.pe[j] = total - g.pb[j];
      continue;
    }
    g.out[j] = full - g.pb[j] - g.pe[j];
    if (g.out[j] <= 0)
      k.fail("pads " + list_str(a.pads) + " leave no output along spatial axis " + std::to_string(i) + " (input " +
             std::to_string(g.in[j]) + ", stride " + std::to_string(g.s[j]) + ", kernel " + std::to_string(g.k[j]) + ")");
  }
  return g;
}

}  // namespace nn
}  // namespace singa
