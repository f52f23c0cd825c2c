// window_taps.cuh - which taps of a pooling window fall inside the input,
// shared by the pooling kernels (kernels.cu) and their gradients
// (kernels_nn.cu) so that both count a window alike.
#ifndef SINGA_CUDA_WINDOW_TAPS_CUH
#define SINGA_CUDA_WINDOW_TAPS_CUH

#include "device_common.cuh"

namespace singa {
namespace cuda {
namespace dev {

// Taps k in [kb, ke) of a window whose positions start + k * d fall in [lo, hi).
struct Taps {
  int64_t start, d, kb, ke;
  __device__ int64_t count() const { return ke > kb ? ke - kb : 0; }
  __device__ int64_t at(int64_t k) const { return start + k * d; }
};

__device__ inline Taps window_taps(int64_t o, int64_t s, int64_t pb, int64_t d, int64_t k, int64_t lo, int64_t hi) {
  Taps t{o * s - pb, d, 0, k};
  if (t.start < lo) t.kb = ceil_div(lo - t.start, d);
  const int64_t past = hi > t.start ? ceil_div(hi - t.start, d) : 0;  // first tap at or past hi
  if (past < t.ke) t.ke = past;
  if (t.ke < t.kb) t.ke = t.kb;
  return t;
}

}  // namespace dev
}  // namespace cuda
}  // namespace singa

#endif
