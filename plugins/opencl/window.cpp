#include "window.hpp"

#include <algorithm>

namespace singa {
namespace opencl {

namespace {

void check_len(const std::vector<int64_t>& v, size_t want, const char* name, size_t rank, const NodeKernel& k) {
  if (!v.empty() && v.size() != want)
    k.fail(std::string("attribute ") + name + " has " + std::to_string(v.size()) + " values " + shape_str(v) +
           " but the input has " + std::to_string(rank) + " spatial dims");
}

}  // namespace

WindowAttrs::WindowAttrs(const sdk::Node& node, const NodeKernel& k) {
  kernel_shape = node.attr_ints("kernel_shape");
  strides = node.attr_ints("strides");
  dilations = node.attr_ints("dilations");
  pads = node.attr_ints("pads");
  ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  const std::string ap = node.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap.empty())
    auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER")
    auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER")
    auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID")
    auto_pad = AutoPad::kValid;
  else
    k.fail("attribute auto_pad has unknown value '" + ap + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  for (const auto* v : {&kernel_shape, &strides, &dilations})
    for (int64_t x : *v)
      if (x <= 0) k.fail("attributes kernel_shape, strides and dilations must be positive, got " + shape_str(*v));
  for (int64_t p : pads)
    if (p < 0) k.fail("attribute pads must not be negative, got " + shape_str(pads));
  if (pads.size() % 2) k.fail("attribute pads must hold a begin and an end per axis, got " + shape_str(pads));
}

std::vector<int64_t> spatial_dims(const sdk::Shape& s, const char* what, const NodeKernel& k) {
  if (s.size() < 3 || s.size() > 5)
    k.fail(std::string(what) + " must be [N, C, D1, ...] with 1 to 3 spatial dims, got shape " + shape_str(s));
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

Window resolve_window(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                      const NodeKernel& k) {
  const size_t r = in.size();
  if (kernel.size() != r)
    k.fail("kernel has " + std::to_string(kernel.size()) + " dims " + shape_str(kernel) + " but the input has " +
           std::to_string(r) + " spatial dims " + shape_str(in));
  check_len(a.kernel_shape, r, "kernel_shape", r, k);
  check_len(a.strides, r, "strides", r, k);
  check_len(a.dilations, r, "dilations", r, k);
  check_len(a.pads, 2 * r, "pads", r, k);
  Window w;
  w.rank = int(r);
  const int off = 3 - int(r);
  for (size_t i = 0; i < r; ++i) {
    const int j = off + int(i);
    if (kernel[i] < 1) k.fail("kernel spatial dims " + shape_str(kernel) + " must all be at least 1");
    w.in[j] = in[i];
    w.k[j] = kernel[i];
    w.s[j] = a.strides.empty() ? 1 : a.strides[i];
    w.d[j] = a.dilations.empty() ? 1 : a.dilations[i];
    const int64_t extent = (w.k[j] - 1) * w.d[j] + 1;
    if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
      w.out[j] = (w.in[j] + w.s[j] - 1) / w.s[j];
      const int64_t total = std::max<int64_t>(0, (w.out[j] - 1) * w.s[j] + extent - w.in[j]);
      // SAME_UPPER puts the odd unit of padding at the end, SAME_LOWER at the start.
      w.pb[j] = a.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      w.pe[j] = total - w.pb[j];
      continue;
    }
    if (a.auto_pad == AutoPad::kNotSet && !a.pads.empty()) {
      w.pb[j] = a.pads[i];
      w.pe[j] = a.pads[i + r];
    }
    const int64_t span = w.in[j] + w.pb[j] + w.pe[j] - extent;
    if (span < 0)
      k.fail("window of " + std::to_string(extent) + " (kernel " + std::to_string(w.k[j]) + ", dilation " +
             std::to_string(w.d[j]) + ") is larger than the padded input extent " +
             std::to_string(w.in[j] + w.pb[j] + w.pe[j]) + " of spatial axis " + std::to_string(i));
    if (a.ceil_mode) {
      w.out[j] = (span + w.s[j] - 1) / w.s[j] + 1;
      // A last window that would start inside the end padding is dropped.
      if ((w.out[j] - 1) * w.s[j] >= w.in[j] + w.pb[j]) --w.out[j];
    } else {
      w.out[j] = span / w.s[j] + 1;
    }
  }
  return w;
}

cl_int4 int4_of(const int64_t (&v)[3], const NodeKernel& k, const char* what) {
  cl_int4 r;
  for (int i = 0; i < 3; ++i) r.s[i] = k.to_int(v[i], what);
  r.s[3] = 0;
  return r;
}

}  // namespace opencl
}  // namespace singa
