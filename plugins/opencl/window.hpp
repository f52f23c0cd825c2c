// window.hpp - the sliding-window attributes of Conv and the pools
// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode) resolved
// against an input's spatial dims as ONNX defines the output size. Spatial
// dims are right-aligned in three slots (.x = D, .y = H, .z = W of the
// kernels' int4 arguments); unused leading slots are size 1, no padding.
#ifndef SINGA_OPENCL_WINDOW_HPP
#define SINGA_OPENCL_WINDOW_HPP

#include "ops_common.hpp"

#include <vector>

namespace singa {
namespace opencl {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  // Reads and validates the attributes (errors name the node).
  WindowAttrs(const sdk::Node& node, const NodeKernel& k);
};

struct Window {
  int rank = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};

  std::vector<int64_t> out_dims() const { return std::vector<int64_t>(out + 3 - rank, out + 3); }
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// Spatial dims of an [N, C, D1, ...] shape, checked to be 1 to 3.
std::vector<int64_t> spatial_dims(const sdk::Shape& s, const char* what, const NodeKernel& k);

// `kernel` comes from the weights (Conv) or kernel_shape (pooling).
Window resolve_window(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                      const NodeKernel& k);

// The int4 argument of a window field.
cl_int4 int4_of(const int64_t (&v)[3], const NodeKernel& k, const char* what);

}  // namespace opencl
}  // namespace singa

#endif
