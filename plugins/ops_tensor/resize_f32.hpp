// resize_f32.hpp - Resize's fast paths: float linear/cubic over the last two
// axes of [..., H, W] planes, and nearest as a typed gather (a repeat for
// upsampling by a whole factor). The generic
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

// The whole factor f when idx (one per output) is nearest upsampling by f
// (idx[o] == o / f, out == in * f, f >= 2: Upsample / Resize x2 in detectors'
// necks), else 0.
inline int64_t whole_upsample_factor(const std::vector<int64_t>& idx, int64_t in, int64_t out) {
  if (in <= 0 || out % in != 0 || out / in < 2 || int64_t(idx.size()) != out) return 0;
  const int64_t f = out / in;
  for (int64_t o = 0; o < out; ++o)
    if (idx[size_t(o)] != o / f) return 0;
  return f;
}

// dst[i * f + k] = src[i] for i < n, k < f: a gather by whole_upsample_factor's
// indices without reading them; the f == 2 loop vectorizes to unpacks.
template <class T>
inline void repeat_row(const T* __restrict src, int64_t n, int64_t f, T* __restrict dst) {
  if (f == 2) {
    for (int64_t i = 0; i < n; ++i) {
      dst[2 * i] = src[i];
      dst[2 * i + 1] = src[i];
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < f; ++k) dst[i * f + k] = src[i];
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
#endif
