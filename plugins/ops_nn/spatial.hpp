// spatial.hpp - window geometry shared by convolution and pooling: kernel,
// strides, dilations, pads and auto_pad resolved against an input shape.
#ifndef SINGA_OPS_NN_SPATIAL_HPP
#define SINGA_OPS_NN_SPATIAL_HPP

#include "nn_common.hpp"

#include <vector>

namespace singa {
namespace nn {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// The window attributes of a node, as written (lengths checked once the
// spatial rank is known).
struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;

  WindowAttrs(const sdk::Node& node, const NodeKernel& k);
};

// Kernels here handle 1 to 3 spatial dims by viewing them all as 3-D
// (D, H, W): a 1-D or 2-D problem gets leading dims of size 1 with a
// kernel of 1, stride 1 and no padding, which costs nothing in the loops.
constexpr int kMaxSpatial = 3;

struct Geometry {
  int rank = 0;  // the real number of spatial dims
  int64_t in[kMaxSpatial], k[kMaxSpatial], s[kMaxSpatial], d[kMaxSpatial];
  int64_t pb[kMaxSpatial], pe[kMaxSpatial], out[kMaxSpatial];

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  bool no_padding() const;
  // Output spatial dims in the real rank (to append to [N, C]).
  std::vector<int64_t> out_dims() const { return std::vector<int64_t>(out + kMaxSpatial - rank, out + kMaxSpatial); }
};

// Geometry of a convolution or pooling window sliding over `in_spatial`.
// `kernel` comes from the weights (Conv) or kernel_shape (pooling).
Geometry window_geometry(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                         const std::vector<int64_t>& kernel, const NodeKernel& k);

// Geometry of a transposed convolution: `in` is its input, `out` the
// (larger) output it scatters into. output_padding and output_shape are
// ConvTranspose's attributes (empty when absent).
Geometry transpose_geometry(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                            const std::vector<int64_t>& kernel, const std::vector<int64_t>& output_padding,
                            const std::vector<int64_t>& output_shape, const NodeKernel& k);

// Spatial dims of a [N, C, ...] shape, checked to be 1 to 3.
std::vector<int64_t> spatial_dims(const Shape& s, const char* what, const NodeKernel& k);

}  // namespace nn
}  // namespace singa

#endif
