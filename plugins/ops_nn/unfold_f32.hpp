// unfold_f32.hpp - the float unfolding that feeds fast::sgemm in Conv and
// ConvGrad: serial (callers run one image per task), and copying whole runs
// along the output width instead of testing every tap.
//
// Two layouts of the unfolded windows of output positions [p0, p0 + cols):
//   columns  (im2col): one row per (channel, kd, kh, kw), one column per
//            output position, as im2col.hpp;
//   rows     (im2row): one row per output position, one column per
//            (kd, kh, kw, channel), read from a channels-last copy of the
//            input so that (kw, channel) runs are contiguous copies. ConvGrad
//            multiplies dY by it to get dW with the taps channel-minor.
#ifndef SINGA_OPS_NN_UNFOLD_F32_HPP
#define SINGA_OPS_NN_UNFOLD_F32_HPP

#include "spatial.hpp"

#include <algorithm>
#include <cstring>

namespace singa {
namespace nn {

// Taps t in [0, n) at iw0 + t * step that fall inside [0, W): [lo, hi).
inline void inside(int64_t iw0, int64_t step, int64_t n, int64_t W, int64_t& lo, int64_t& hi) {
  lo = iw0 >= 0 ? 0 : (-iw0 + step - 1) / step;
  hi = iw0 + (n - 1) * step < W ? n : (W - 1 - iw0 >= 0 ? (W - 1 - iw0) / step + 1 : 0);
  lo = std::min(lo, n);
  hi = std::max(hi, lo);
}

// Calls run(j, od, oh, ow, len) for the runs of output positions
// [p0, p0 + cols) along the output width; j counts from p0.
template <class F>
void for_each_out_run(const Geometry& g, int64_t p0, int64_t cols, F&& run) {
  const int64_t OH = g.out[1], OW = g.out[2];
  int64_t ow = p0 % OW, oh = (p0 / OW) % OH, od = p0 / (OW * OH);
  for (int64_t j = 0; j < cols;) {
    const int64_t len = std::min(OW - ow, cols - j);
    run(j, od, oh, ow, len);
    j += len;
    ow = 0;
    if (++oh == OH) {
      oh = 0;
      ++od;
    }
  }
}

// x: `channels` planes of g.in; col: (channels * k_size) x cols.
inline void im2col_f32(const float* x, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* col) {
  const int64_t ks = g.k_size(), KH = g.k[1], KW = g.k[2], D = g.in[0], H = g.in[1], W = g.in[2];
  for (int64_t r = 0; r < channels * ks; ++r) {
    const int64_t c = r / ks, rem = r % ks, kd = rem / (KH * KW), kh = (rem / KW) % KH, kw = rem % KW;
    const float* xc = x + c * g.in_size();
    float* dst = col + r * cols;
    for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow, int64_t len) {
      const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      float* out = dst + j;
      if (id < 0 || id >= D || ih < 0 || ih >= H) {
        std::fill(out, out + len, 0.f);
        return;
      }
      const int64_t iw0 = ow * g.s[2] - g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, g.s[2], len, W, lo, hi);
      const float* row = xc + (id * H + ih) * W + iw0 + lo * g.s[2];  // the first tap inside
      std::fill(out, out + lo, 0.f);
      if (g.s[2] == 1)
        std::memcpy(out + lo, row, size_t(hi - lo) * sizeof(float));
      else
        for (int64_t t = lo; t < hi; ++t) out[t] = row[(t - lo) * g.s[2]];
      std::fill(out + hi, out + len, 0.f);
    });
  }
}

// The adjoint of im2col_f32: dx (channels planes of g.in) += col folded back.
inline void col2im_add_f32(const float* col, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* dx) {
  const int64_t ks = g.k_size(), KH = g.k[1], KW = g.k[2], D = g.in[0], H = g.in[1], W = g.in[2];
  for (int64_t r = 0; r < channels * ks; ++r) {
    const int64_t c = r / ks, rem = r % ks, kd = rem / (KH * KW), kh = (rem / KW) % KH, kw = rem % KW;
    float* xc = dx + c * g.in_size();
    const float* src = col + r * cols;
    for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow, int64_t len) {
      const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      if (id < 0 || id >= D || ih < 0 || ih >= H) return;
      const int64_t iw0 = ow * g.s[2] - g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, g.s[2], len, W, lo, hi);
      float* row = xc + (id * H + ih) * W + iw0 + lo * g.s[2];
      const float* in = src + j + lo;
      if (g.s[2] == 1)
        for (int64_t t = 0; t < hi - lo; ++t) row[t] += in[t];
      else
        for (int64_t t = 0; t < hi - lo; ++t) row[t * g.s[2]] += in[t];
    });
  }
}

// planes [channels x size] -> [size x channels].
inline void to_channels_last(const float* x, int64_t channels, int64_t size, float* out) {
  constexpr int64_t kB = 16;
  for (int64_t c0 = 0; c0 < channels; c0 += kB)
    for (int64_t s0 = 0; s0 < size; s0 += kB)
      for (int64_t c = c0; c < std::min(channels, c0 + kB); ++c)
        for (int64_t s = s0; s < std::min(size, s0 + kB); ++s) out[s * channels + c] = x[c * size + s];
}

// xt: g.in positions x `channels` (channels-last); rows: cols x (k_size * channels),
// the taps ordered (kd, kh, kw, channel).
inline void im2row_f32(const float* xt, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* rows) {
  const int64_t KD = g.k[0], KH = g.k[1], KW = g.k[2], D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t width = g.k_size() * channels, kw_run = KW * channels;
  for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow0, int64_t len) {
    for (int64_t t = 0; t < len; ++t) {
      float* dst = rows + (j + t) * width;
      const int64_t iw0 = (ow0 + t) * g.s[2] - g.pb[2];
      int64_t lo, hi;  // kw taps inside the width
      inside(iw0, g.d[2], KW, W, lo, hi);
      for (int64_t kd = 0; kd < KD; ++kd)
        for (int64_t kh = 0; kh < KH; ++kh, dst += kw_run) {
          const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
          if (id < 0 || id >= D || ih < 0 || ih >= H) {
            std::fill(dst, dst + kw_run, 0.f);
            continue;
          }
          const float* src = xt + ((id * H + ih) * W + iw0 + lo * g.d[2]) * channels;  // the first tap inside
          std::fill(dst, dst + lo * channels, 0.f);
          if (g.d[2] == 1) {
            std::memcpy(dst + lo * channels, src, size_t((hi - lo) * channels) * sizeof(float));
          } else {
            for (int64_t kw = lo; kw < hi; ++kw)
              std::memcpy(dst + kw * channels, src + (kw - lo) * g.d[2] * channels, size_t(channels) * sizeof(float));
          }
          std::fill(dst + hi * channels, dst + kw_run, 0.f);
        }
    }
  });
}

}  // namespace nn
}  // namespace singa
#endif
