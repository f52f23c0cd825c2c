// avg_pool_2d_f32.hpp - AveragePool's float path for 1-D and 2-D windows
// (any kernel, stride, dilation and pads; count_include_pad either way;
// ceil_mode), one output row at a time: the window's input rows are summed
// into a zero-padded row buffer, then the K columns of each window are added
// across the whole output row. Both loops run over contiguous floats (for
// stride 1) and vectorize; the scalar per-window loop re-derived each
// window's bounds and summed 9 taps one dependent add at a time.
#ifndef SINGA_OPS_NN_AVG_POOL_2D_F32_HPP
#define SINGA_OPS_NN_AVG_POOL_2D_F32_HPP

#include "../common/vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// The windows along one spatial axis: output o reads input positions
// o * s - pb + k * d for k in [lo[o], hi[o]) (those inside the input), and
// its average divides by div[o] (the taps counted, padding included when
// count_include_pad; 1 where none count, since the sum is then 0 too).
struct PoolAxis {
  int64_t in = 1, out = 1, k = 1, s = 1, d = 1, pb = 0;
  std::vector<int64_t> lo, hi;
  std::vector<float> div;
};

inline PoolAxis pool_axis(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                          bool include_pad) {
  PoolAxis a{in, out, k, s, d, pb, {}, {}, {}};
  // Taps k of window o with lo_pos <= start + k * d < hi_pos.
  auto clip = [&](int64_t o, int64_t lo_pos, int64_t hi_pos, int64_t& kb, int64_t& ke) {
    const int64_t start = o * s - pb;
    kb = start >= lo_pos ? 0 : (lo_pos - start + d - 1) / d;
    ke = start + (k - 1) * d < hi_pos ? k : (hi_pos > start ? (hi_pos - start + d - 1) / d : 0);
    ke = std::max(ke, kb);
  };
  for (int64_t o = 0; o < out; ++o) {
    int64_t kb, ke;
    clip(o, 0, in, kb, ke);
    a.lo.push_back(kb);
    a.hi.push_back(ke);
    int64_t n = ke - kb;
    // Padding counts, but not the part of a ceil_mode window past the end padding.
    if (include_pad) clip(o, -pb, in + pe, kb, ke), n = ke - kb;
    a.div.push_back(float(n > 0 ? n : 1));
  }
  return a;
}

// Floats of the row buffer avg_pool_row_f32 needs for the columns axis w.
inline int64_t avg_pool_buffer_size(const PoolAxis& w) {
  return std::max(w.pb + w.in, (w.out - 1) * w.s + (w.k - 1) * w.d + 1);
}

// Output row oh of one plane (h.in x w.in floats at x) into y (w.out floats).
// buf: avg_pool_buffer_size(w) floats of scratch.
SINGA_VEC_CLONES inline void avg_pool_row_f32(const float* x, const PoolAxis& h, const PoolAxis& w, int64_t oh,
                                              float* __restrict buf, float* __restrict y) {
  const int64_t W = w.in, n = avg_pool_buffer_size(w);
  const int64_t kb = h.lo[size_t(oh)], ke = h.hi[size_t(oh)], r0 = oh * h.s - h.pb;
  float* __restrict row = buf + w.pb;
  std::fill(buf, buf + n, 0.f);
  for (int64_t kh = kb; kh < ke; ++kh) {
    const float* __restrict xr = x + (r0 + kh * h.d) * W;
    for (int64_t i = 0; i < W; ++i) row[i] += xr[i];
  }
  const int64_t OW = w.out, S = w.s;
  std::fill(y, y + OW, 0.f);
  for (int64_t kw = 0; kw < w.k; ++kw) {
    const float* __restrict b = buf + kw * w.d;
    if (S == 1)
      for (int64_t ow = 0; ow < OW; ++ow) y[ow] += b[ow];
    else
      for (int64_t ow = 0; ow < OW; ++ow) y[ow] += b[ow * S];
  }
  const float dh = h.div[size_t(oh)];
  const float* __restrict dw = w.div.data();
  for (int64_t ow = 0; ow < OW; ++ow) y[ow] = y[ow] / (dh * dw[ow]);
}

// 2x2 windows at stride 2 without padding over a whole plane (W floats a
// row, OH x OW outputs): the common downsampling in one flat loop per output
// row, without avg_pool_row_f32's per-row set-up, which cost more than the
// arithmetic on 14- and 28-wide planes (DenseNet's transitions).
SINGA_VEC_CLONES inline void avg_pool_2x2_plane_f32(const float* x, int64_t W, int64_t OH, int64_t OW,
                                                    float* __restrict y) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* __restrict r0 = x + 2 * oh * W;
    const float* __restrict r1 = r0 + W;
    float* __restrict yr = y + oh * OW;
    for (int64_t ow = 0; ow < OW; ++ow)
      yr[ow] = ((r0[2 * ow] + r0[2 * ow + 1]) + (r1[2 * ow] + r1[2 * ow + 1])) * 0.25f;
  }
}

}  // namespace nn
}  // namespace singa
#endif
