// window.hpp - the sliding-window geometry of Conv and the pools for the
// OpenCL kernels: the shared rules of plugins/common/window_geometry.hpp.
// Spatial dims are right-aligned in three slots (.x = D, .y = H, .z = W of the
// kernels' int4 arguments); unused leading slots are size 1, no padding.
#ifndef SINGA_OPENCL_WINDOW_HPP
#define SINGA_OPENCL_WINDOW_HPP

#include "ops_common.hpp"

#include <window_geometry.hpp>

#include <vector>

namespace singa {
namespace opencl {

using window::AutoPad;
using WindowAttrs = window::Attrs;
using Window = window::Geometry;

// Spatial dims of an [N, C, D1, ...] shape, checked to be 1 to 3.
inline std::vector<int64_t> spatial_dims(const sdk::Shape& s, const char* what, const NodeKernel& k) {
  return window::spatial_dims(s, what, k);
}

// `kernel` comes from the weights (Conv) or kernel_shape (pooling).
inline Window resolve_window(const WindowAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                             const NodeKernel& k) {
  return window::resolve(a, in, kernel, k);
}

// The int4 argument of a window field.
inline cl_int4 int4_of(const int64_t (&v)[3], const NodeKernel& k, const char* what) {
  cl_int4 r;
  for (int i = 0; i < 3; ++i) r.s[i] = k.to_int(v[i], what);
  r.s[3] = 0;
  return r;
}

}  // namespace opencl
}  // namespace singa

#endif
