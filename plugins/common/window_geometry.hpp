// window_geometry.hpp - the sliding-window attributes of Conv, ConvTranspose
// and the pools (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
// read from a node and resolved against an input's spatial dims as ONNX
// defines the output size. One copy for every device pack (CPU, CUDA,
// OpenCL): the CUDA and OpenCL plugins had renamed copies of the CPU's.
//
// Spatial dims are right-aligned in kMaxSpatial = 3 slots (D, H, W): a 1-D or
// 2-D problem gets leading slots of size 1 with a kernel of 1, stride 1 and no
// padding, which costs the kernels nothing. Errors go through `k.fail(msg)` of
// the calling kernel (each pack's NodeKernel), so they name the node as that
// pack does.
#ifndef SINGA_PLUGINS_COMMON_WINDOW_GEOMETRY_HPP
#define SINGA_PLUGINS_COMMON_WINDOW_GEOMETRY_HPP

#include "broadcast.hpp"  // shape_str

#include <singa/kernel.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace singa {
namespace window {

constexpr int kMaxSpatial = 3;

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

using ops::shape_str;

// The window attributes of a node, as written (lengths are checked once the
// spatial rank is known, in resolve()).
struct Attrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;

  Attrs() = default;
  // `prefix`: the attributes of a fused node's stage (expand_strides, ...).
  template <class K>
  Attrs(const sdk::Node& node, const K& k, const std::string& prefix = "") {
    kernel_shape = node.attr_ints((prefix + "kernel_shape").c_str());
    strides = node.attr_ints((prefix + "strides").c_str());
    dilations = node.attr_ints((prefix + "dilations").c_str());
    pads = node.attr_ints((prefix + "pads").c_str());
    ceil_mode = node.attr_int((prefix + "ceil_mode").c_str(), 0) != 0;
    const std::string ap = node.attr_string((prefix + "auto_pad").c_str(), "NOTSET");
    if (ap == "NOTSET" || ap.empty())
      auto_pad = AutoPad::NotSet;
    else if (ap == "SAME_UPPER")
      auto_pad = AutoPad::SameUpper;
    else if (ap == "SAME_LOWER")
      auto_pad = AutoPad::SameLower;
    else if (ap == "VALID")
      auto_pad = AutoPad::Valid;
    else
      k.fail("attribute " + prefix + "auto_pad has unknown value '" + ap +
             "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
    for (const auto& [v, name] : {std::pair<const std::vector<int64_t>*, const char*>{&kernel_shape, "kernel_shape"},
                                  {&strides, "strides"},
                                  {&dilations, "dilations"}})
      for (int64_t x : *v)
        if (x <= 0) k.fail("attribute " + prefix + name + " must be positive, got " + shape_str(*v));
    for (int64_t p : pads)
      if (p < 0) k.fail("attribute " + prefix + "pads must not be negative, got " + shape_str(pads));
    if (pads.size() % 2)
      k.fail("attribute " + prefix + "pads must hold a begin and an end per axis, got " + shape_str(pads));
  }
  bool same() const { return auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower; }
};

struct Geometry {
  int rank = 0;  // the real number of spatial dims
  int64_t in[kMaxSpatial] = {1, 1, 1}, k[kMaxSpatial] = {1, 1, 1}, s[kMaxSpatial] = {1, 1, 1},
          d[kMaxSpatial] = {1, 1, 1};
  int64_t pb[kMaxSpatial] = {0, 0, 0}, pe[kMaxSpatial] = {0, 0, 0}, out[kMaxSpatial] = {1, 1, 1};

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  bool no_padding() const {
    for (int i = 0; i < kMaxSpatial; ++i)
      if (pb[i] || pe[i]) return false;
    return true;
  }
  bool symmetric_pads() const {
    for (int i = 0; i < kMaxSpatial; ++i)
      if (pb[i] != pe[i]) return false;
    return true;
  }
  bool unit_dilations() const {
    for (int i = 0; i < kMaxSpatial; ++i)
      if (d[i] != 1) return false;
    return true;
  }
  // The input indices along spatial slot i that outputs [o0, o1) read,
  // clipped to the input: [first, second), empty when they read padding only.
  // For the bands of rows a kernel computes and keeps between steps.
  std::pair<int64_t, int64_t> in_range(int i, int64_t o0, int64_t o1) const {
    const int64_t lo = std::clamp<int64_t>(o0 * s[i] - pb[i], 0, in[i]);
    return {lo, std::clamp<int64_t>((o1 - 1) * s[i] - pb[i] + (k[i] - 1) * d[i] + 1, lo, in[i])};
  }
  // Output spatial dims in the real rank (to append to [N, C]).
  std::vector<int64_t> out_dims() const { return std::vector<int64_t>(out + kMaxSpatial - rank, out + kMaxSpatial); }
};

// Spatial dims of an [N, C, D1, ...] shape, checked to be 1 to 3.
template <class K>
std::vector<int64_t> spatial_dims(const std::vector<int64_t>& s, const char* what, const K& k) {
  if (s.size() < 3 || s.size() > 2 + size_t(kMaxSpatial))
    k.fail(std::string(what) + " must be [N, C, D1, ...] with 1 to 3 spatial dims, got shape " + shape_str(s));
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

namespace detail {

template <class K>
void check_len(const std::vector<int64_t>& v, size_t want, const char* name, size_t rank, const K& k) {
  if (!v.empty() && v.size() != want)
    k.fail(std::string("attribute ") + name + " has " + std::to_string(v.size()) + " values " + shape_str(v) +
           " but the input has " + std::to_string(rank) + " spatial dims (expected " + std::to_string(want) + ")");
}

// Lengths checked, unused leading slots filled, explicit pads copied.
template <class K>
Geometry start(const Attrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, const K& k) {
  const size_t r = in.size();
  if (kernel.size() != r)
    k.fail("kernel has " + std::to_string(kernel.size()) + " dims " + shape_str(kernel) + " but the input has " +
           std::to_string(r) + " spatial dims " + shape_str(in));
  check_len(a.kernel_shape, r, "kernel_shape", r, k);
  check_len(a.strides, r, "strides", r, k);
  check_len(a.dilations, r, "dilations", r, k);
  check_len(a.pads, 2 * r, "pads", r, k);
  Geometry g;
  g.rank = int(r);
  const int off = kMaxSpatial - int(r);
  for (size_t i = 0; i < r; ++i) {
    const int j = off + int(i);
    if (kernel[i] < 1) k.fail("kernel spatial dims " + shape_str(kernel) + " must all be at least 1");
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

}  // namespace detail

// A convolution or pooling window sliding over `in`. `kernel` comes from the
// weights (Conv) or kernel_shape (pooling).
template <class K>
Geometry resolve(const Attrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, const K& k) {
  Geometry g = detail::start(a, in, kernel, k);
  for (int j = kMaxSpatial - g.rank; j < kMaxSpatial; ++j) {
    const int64_t extent = (g.k[j] - 1) * g.d[j] + 1;
    if (a.same()) {
      g.out[j] = (g.in[j] + g.s[j] - 1) / g.s[j];
      const int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * g.s[j] + extent - g.in[j]);
      // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start.
      g.pb[j] = a.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      g.pe[j] = total - g.pb[j];
      continue;
    }
    const int64_t span = g.in[j] + g.pb[j] + g.pe[j] - extent;
    if (span < 0)
      k.fail("window of " + std::to_string(extent) + " (kernel " + std::to_string(g.k[j]) + ", dilation " +
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

// A transposed convolution: `in` is its input, `out` the (larger) output it
// scatters into. output_padding and output_shape are ConvTranspose's
// attributes (empty when absent; output_shape may include N and C).
template <class K>
Geometry resolve_transpose(const Attrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                           const std::vector<int64_t>& output_padding, const std::vector<int64_t>& output_shape,
                           const K& k) {
  Geometry g = detail::start(a, in, kernel, k);
  const size_t r = in.size();
  detail::check_len(output_padding, r, "output_padding", r, k);
  std::vector<int64_t> shape = output_shape;
  if (shape.size() == r + 2) shape.erase(shape.begin(), shape.begin() + 2);
  detail::check_len(shape, r, "output_shape", r, k);
  for (size_t i = 0; i < r; ++i) {
    const int j = kMaxSpatial - int(r) + int(i);
    const int64_t extent = (g.k[j] - 1) * g.d[j] + 1;
    const int64_t op = output_padding.empty() ? 0 : output_padding[i];
    if (op < 0) k.fail("attribute output_padding must not be negative, got " + shape_str(output_padding));
    const int64_t full = g.s[j] * (g.in[j] - 1) + op + extent;
    if (!shape.empty() || a.same()) {
      g.out[j] = !shape.empty() ? shape[i] : g.in[j] * g.s[j];
      if (g.out[j] <= 0) k.fail("attribute output_shape must be positive, got " + shape_str(output_shape));
      // Positions past the scattered extent (total < 0) stay zero.
      const int64_t total = std::max<int64_t>(0, full - g.out[j]);
      g.pb[j] = a.auto_pad == AutoPad::SameLower ? total - total / 2 : total / 2;
      g.pe[j] = total - g.pb[j];
      continue;
    }
    g.out[j] = full - g.pb[j] - g.pe[j];
    if (g.out[j] <= 0)
      k.fail("pads " + shape_str(a.pads) + " leave no output along spatial axis " + std::to_string(i) + " (input " +
             std::to_string(g.in[j]) + ", stride " + std::to_string(g.s[j]) + ", kernel " + std::to_string(g.k[j]) + ")");
  }
  return g;
}

}  // namespace window
}  // namespace singa
#endif
