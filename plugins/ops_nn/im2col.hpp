// im2col.hpp - unfolding windows into GEMM columns and folding them back.
//
// Layout: a column matrix has one row per (input channel, kd, kh, kw) and
// one column per output position (od, oh, ow), flattened row-major. A
// caller may ask for the column range [p0, p0 + cols) so that the scratch
// buffer stays bounded for large images.
#ifndef SINGA_OPS_NN_IM2COL_HPP
#define SINGA_OPS_NN_IM2COL_HPP

#include "nn_common.hpp"
#include "spatial.hpp"

#include <algorithm>

namespace singa {
namespace nn {

// x: `channels` planes of g.in; col: (channels * k_size) x cols.
template <class T, class A>
void im2col(const sdk::Context& ctx, const T* x, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, A* col) {
  const int64_t ks = g.k_size(), rows = channels * ks, in_size = g.in_size();
  const int64_t KH = g.k[1], KW = g.k[2], OH = g.out[1], OW = g.out[2];
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  ctx.parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, cols)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const int64_t c = r / ks, rem = r % ks;
      const int64_t kd = rem / (KH * KW), kh = (rem / KW) % KH, kw = rem % KW;
      const T* xc = x + c * in_size;
      A* dst = col + r * cols;
      int64_t ow = p0 % OW, oh = (p0 / OW) % OH, od = p0 / (OW * OH);
      for (int64_t j = 0; j < cols;) {
        const int64_t run = std::min(OW - ow, cols - j);
        const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
        const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
        if (id >= 0 && id < D && ih >= 0 && ih < H) {
          const T* xrow = xc + (id * H + ih) * W;
          int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
          for (int64_t t = 0; t < run; ++t, iw += g.s[2])
            dst[j + t] = (iw >= 0 && iw < W) ? to_acc<A>(xrow[iw]) : A(0);
        } else {
          std::fill(dst + j, dst + j + run, A(0));
        }
        j += run;
        ow = 0;
        if (++oh == OH) {
          oh = 0;
          ++od;
        }
      }
    }
  });
}

// The transpose of im2col for a transposed convolution: col holds
// (channels * k_size) x cols values for input positions [p0, p0 + cols) of
// g.in; each is added into the output plane of its channel (g.out),
// where output position = input position * stride - pad + k * dilation.
// Parallel over channels, so no two threads touch the same plane.
template <class A>
void col2im_add(const sdk::Context& ctx, const A* col, const Geometry& g, int64_t channels, int64_t p0, int64_t cols,
                A* y) {
  const int64_t ks = g.k_size(), out_size = g.out_size();
  const int64_t KH = g.k[1], KW = g.k[2], IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  ctx.parallel_for(channels, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      A* yc = y + c * out_size;
      for (int64_t k = 0; k < ks; ++k) {
        const int64_t kd = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
        const A* src = col + (c * ks + k) * cols;
        int64_t iw = p0 % IW, ih = (p0 / IW) % IH, id = p0 / (IW * IH);
        for (int64_t j = 0; j < cols;) {
          const int64_t run = std::min(IW - iw, cols - j);
          const int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
          const int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
          if (od >= 0 && od < OD && oh >= 0 && oh < OH) {
            A* yrow = yc + (od * OH + oh) * OW;
            int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
            for (int64_t t = 0; t < run; ++t, ow += g.s[2])
              if (ow >= 0 && ow < OW) yrow[ow] += src[j + t];
          }
          j += run;
          iw = 0;
          if (++ih == IH) {
            ih = 0;
            ++id;
          }
        }
      }
    }
  });
}

}  // namespace nn
}  // namespace singa

#endif
