// resize_f32.hpp - Resize's fast paths: float linear/cubic over the last two
// axes of [..., H, W] planes, and nearest as a typed gather. The generic
// kernel (resize.cpp) converted the whole tensor to double and ran one pass
// per axis with a memcpy per element; here each output row is one weighted
// sum of input rows followed by a gather over the width, in float as ORT does.
#ifndef SINGA_OPS_TENSOR_RESIZE_F32_HPP
#define SINGA_OPS_TENSOR_RESIZE_F32_HPP

#include "../common/vec_math.hpp"  // SINGA_VEC_CLONES

#include <cstdint>
#include <vector>

namespace singa {
namespace ops {
namespace tensor {

// One axis's taps in float: output o reads input idx[o * ntaps + k] with
// weight w[o * ntaps + k], k < ntaps (indices already clamped to the axis).
struct AxisTapsF {
  int64_t in = 0, out = 0;
  int ntaps = 1;
  std::vector<int64_t> idx;
  std::vector<float> w;
};

// Output row oh of one plane (h.in x w.in floats at x) into y (w.out floats);
// buf: w.in floats of scratch.
SINGA_VEC_CLONES inline void resize_row_f32(const float* x, const AxisTapsF& h, const AxisTapsF& w, int64_t oh,
                                            float* __restrict buf, float* __restrict y) {
  const int64_t W = w.in;
  bool first = true;
  for (int k = 0; k < h.ntaps; ++k) {
    const float c = h.w[size_t(oh * h.ntaps + k)];
    if (c == 0.f) continue;
    const float* __restrict r = x + h.idx[size_t(oh * h.ntaps + k)] * W;
    if (first)
      for (int64_t i = 0; i < W; ++i) buf[i] = c * r[i];
    else
      for (int64_t i = 0; i < W; ++i) buf[i] += c * r[i];
    first = false;
  }
  if (first)
    for (int64_t i = 0; i < W; ++i) buf[i] = 0.f;
  const int n = w.ntaps;
  const int64_t* __restrict ix = w.idx.data();
  const float* __restrict wt = w.w.data();
  if (n == 2) {
    for (int64_t o = 0; o < w.out; ++o) y[o] = wt[2 * o] * buf[ix[2 * o]] + wt[2 * o + 1] * buf[ix[2 * o + 1]];
    return;
  }
  for (int64_t o = 0; o < w.out; ++o) {
    float s = 0.f;
    for (int k = 0; k < n; ++k) s += wt[o * n + k] * buf[ix[o * n + k]];
    y[o] = s;
  }
}

// dst[o] = src[idx[o]] for o < n: nearest mode's row, one element type.
template <class T>
inline void gather_row(const T* __restrict src, const int64_t* __restrict idx, int64_t n, T* __restrict dst) {
  for (int64_t o = 0; o < n; ++o) dst[o] = src[idx[o]];
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
#endif
