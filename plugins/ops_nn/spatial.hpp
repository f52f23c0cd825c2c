// spatial.hpp - window geometry for the CPU convolution and pooling kernels:
// the shared rules of plugins/common/window_geometry.hpp under the names
// these kernels use.
#ifndef SINGA_OPS_NN_SPATIAL_HPP
#define SINGA_OPS_NN_SPATIAL_HPP

#include "nn_common.hpp"

#include <window_geometry.hpp>

#include <vector>

namespace singa {
namespace nn {

using window::AutoPad;
using window::kMaxSpatial;
using WindowAttrs = window::Attrs;
using Geometry = window::Geometry;

// Geometry of a convolution or pooling window sliding over `in_spatial`.
inline Geometry window_geometry(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                                const std::vector<int64_t>& kernel, const NodeKernel& k) {
  return window::resolve(a, in_spatial, kernel, k);
}

// Geometry of a transposed convolution (see window::resolve_transpose).
inline Geometry transpose_geometry(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                                   const std::vector<int64_t>& kernel, const std::vector<int64_t>& output_padding,
                                   const std::vector<int64_t>& output_shape, const NodeKernel& k) {
  return window::resolve_transpose(a, in_spatial, kernel, output_padding, output_shape, k);
}

// Spatial dims of a [N, C, ...] shape, checked to be 1 to 3.
inline std::vector<int64_t> spatial_dims(const Shape& s, const char* what, const NodeKernel& k) {
  return window::spatial_dims(s, what, k);
}

}  // namespace nn
}  // namespace singa

#endif
