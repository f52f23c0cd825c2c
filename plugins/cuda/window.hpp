// window.hpp - the sliding-window geometry of Conv and the pools for the CUDA
// kernels: the shared rules of plugins/common/window_geometry.hpp, resolved
// into the PoolGeometry the kernels take.
#ifndef SINGA_CUDA_WINDOW_HPP
#define SINGA_CUDA_WINDOW_HPP

#include "kernels.hpp"
#include "ops_common.hpp"

#include <window_geometry.hpp>

#include <vector>

namespace singa {
namespace cuda {

using window::AutoPad;
using WindowAttrs = window::Attrs;

// A window over 1 to 3 spatial dims, stored right-aligned in 3 slots (the
// leading unused slots are size 1, kernel 1, stride 1, no padding).
struct Window {
  int rank = 0;
  PoolGeometry g;

  std::vector<int64_t> out_dims() const { return {g.out + 3 - rank, g.out + 3}; }
  bool symmetric_pads() const {
    for (int i = 0; i < 3; ++i)
      if (g.pb[i] != g.pe[i]) return false;
    return true;
  }
  bool unit_dilations() const {
    for (int i = 0; i < 3; ++i)
      if (g.d[i] != 1) return false;
    return true;
  }
};

// Spatial dims of an [N, C, D1, ...] shape, checked to be 1 to 3.
inline std::vector<int64_t> spatial_dims(const sdk::Shape& s, const char* what, const NodeKernel& k) {
  return window::spatial_dims(s, what, k);
}

// `kernel` comes from the weights (Conv) or kernel_shape (pooling); `planes`
// is N * C of the input.
inline Window resolve_window(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                             const std::vector<int64_t>& kernel, int64_t planes, const NodeKernel& k) {
  const window::Geometry geo = window::resolve(a, in_spatial, kernel, k);
  Window w;
  w.rank = geo.rank;
  w.g.planes = planes;
  for (int i = 0; i < 3; ++i) {
    w.g.in[i] = geo.in[i], w.g.out[i] = geo.out[i], w.g.k[i] = geo.k[i], w.g.s[i] = geo.s[i], w.g.d[i] = geo.d[i];
    w.g.pb[i] = geo.pb[i], w.g.pe[i] = geo.pe[i];
  }
  return w;
}

}  // namespace cuda
}  // namespace singa

#endif
