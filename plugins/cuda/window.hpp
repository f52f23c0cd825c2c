// window.hpp - the sliding-window attributes of Conv and the pools
// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode) resolved
// against an input's spatial dims, as ONNX defines the output size.
#ifndef SINGA_CUDA_WINDOW_HPP
#define SINGA_CUDA_WINDOW_HPP

#include "kernels.hpp"
#include "ops_common.hpp"

#include <vector>

namespace singa {
namespace cuda {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  // Reads and validates the attributes (errors name the node).
  WindowAttrs(const sdk::Node& node, const NodeKernel& k);
};

// A window over 1 to 3 spatial dims, stored right-aligned in 3 slots (the
// leading unused slots are size 1, kernel 1, stride 1, no padding).
struct Window {
  int rank = 0;
  PoolGeometry g;

  std::vector<int64_t> out_dims() const { return {g.out + 3 - rank, g.out + 3}; }
  bool symmetric_pads() const;
  bool unit_dilations() const;
};

// Spatial dims of an [N, C, D1, ...] shape, checked to be 1 to 3.
std::vector<int64_t> spatial_dims(const sdk::Shape& s, const char* what, const NodeKernel& k);

// `kernel` comes from the weights (Conv) or kernel_shape (pooling); `planes`
// is N * C of the input.
Window resolve_window(const WindowAttrs& a, const std::vector<int64_t>& in_spatial, const std::vector<int64_t>& kernel,
                      int64_t planes, const NodeKernel& k);

}  // namespace cuda
}  // namespace singa

#endif
