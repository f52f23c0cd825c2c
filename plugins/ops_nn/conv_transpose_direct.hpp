// conv_transpose_direct.hpp - float ConvTranspose whose windows do not overlap
// (unit dilations, kernel <= stride in every spatial dim: the 2x2 stride-2
// upsampling of U-Nets and detectors). Every output element then receives at
// most one product, so each task computes the columns W_g^T X_g of a range of
// output channels with one single-threaded GEMM and writes its output planes
// once, bias included, instead of zero-filling them, running one GEMM for the
// whole image and adding the columns in with col2im.
#ifndef SINGA_OPS_NN_CONV_TRANSPOSE_DIRECT_HPP
#define SINGA_OPS_NN_CONV_TRANSPOSE_DIRECT_HPP

#include "blas.hpp"
#include "sgemm.hpp"
#include "spatial.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {

// row[iw * KW + kw] = b + src[kw * tap_step + iw] for iw < IW, b after that
// up to OW. KW == 2 (the usual upsampling) gets a loop the compiler vectorizes.
inline void interleave_taps(const float* src, int64_t tap_step, int64_t IW, int64_t KW, float b, float* row,
                            int64_t OW) {
  const int64_t n = std::min(IW, OW / KW);
  if (KW == 2) {
    const float* s0 = src;
    const float* s1 = src + tap_step;
    for (int64_t i = 0; i < n; ++i) {
      row[2 * i] = b + s0[i];
      row[2 * i + 1] = b + s1[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < KW; ++k) row[i * KW + k] = b + src[k * tap_step + i];
  }
  int64_t done = n * KW;
  // A partial window at the right edge (output_shape / output_padding cut it).
  for (int64_t k = 0; done < OW && n < IW && k < KW; ++k) row[done++] = b + src[k * tap_step + n];
  std::fill(row + done, row + OW, b);
}

// True when `g` has no overlapping windows (the path below applies).
inline bool conv_transpose_no_overlap(const Geometry& g) {
  for (int i = 0; i < window::kMaxSpatial; ++i)
    if (g.d[i] != 1 || g.k[i] > g.s[i]) return false;
  return true;
}

// y[N, M, out...] = ConvTranspose(x[N, C, in...], w[C, M/group, k...]) + bias
// for a geometry with conv_transpose_no_overlap(g). `bias` has M entries or is
// null. Returns false (nothing written) when the column workspace would
// exceed `max_bytes`.
inline bool conv_transpose_direct(const sdk::Context& ctx, const float* x, const float* w, const float* bias,
                                  float* y, const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t group,
                                  int64_t max_bytes = int64_t(1) << 26) {
  const int64_t Cg = C / group, Mg = M / group, ks = g.k_size(), Pin = g.in_size(), Pout = g.out_size();
  const int64_t R = Mg * ks;
  if (Cg == 0 || N * M * ks * Pin * int64_t(sizeof(float)) > max_bytes) return false;
  // Channel chunks per (image, group): columns of ~256 KB, and enough tasks
  // for every thread.
  const int64_t per_channel = ks * Pin * int64_t(sizeof(float));
  const int64_t threads = std::max(1, ctx.num_threads());
  int64_t chunks = std::max<int64_t>((Mg * per_channel + (int64_t(256) << 10) - 1) >> 18,
                                     (2 * threads + N * group - 1) / (N * group));
  chunks = std::min(chunks, Mg);
  if (threads == 1) chunks = std::min<int64_t>(chunks, std::max<int64_t>(1, (Mg * per_channel) >> 18));
  const int64_t per = (Mg + chunks - 1) / chunks;
  chunks = (Mg + per - 1) / per;
  float* cols = static_cast<float*>(ctx.workspace(size_t(N * M * ks * Pin) * sizeof(float)));

  // For each output index along a spatial slot: the kernel tap and input
  // index it comes from; tap -1 in a gap between windows (bias only).
  struct Src {
    int64_t tap, in;
  };
  std::vector<Src> tab[window::kMaxSpatial];
  for (int i = 0; i < window::kMaxSpatial; ++i)
    for (int64_t o = 0; o < g.out[i]; ++o) {
      const int64_t q = o + g.pb[i], ii = q / g.s[i], kk = q % g.s[i];
      tab[i].push_back(kk < g.k[i] && ii < g.in[i] ? Src{kk, ii} : Src{-1, 0});
    }
  const int64_t IH = g.in[1], IW = g.in[2], KH = g.k[1], KW = g.k[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  // Along the last slot, the offset in a channel's columns (tap kw's row is
  // kw * Pin further on), or -1.
  std::vector<int64_t> wtab(static_cast<size_t>(OW));
  for (int64_t o = 0; o < OW; ++o) {
    const Src& t = tab[2][size_t(o)];
    wtab[size_t(o)] = t.tap < 0 ? -1 : t.tap * Pin + t.in;
  }
  // The common case along the width: no padding before and stride == kernel,
  // so an output row is the KW tap rows interleaved (then bias past IW * KW).
  const bool dense_w = g.pb[2] == 0 && g.s[2] == KW;
  SingleThreadedBlas one_thread(!fast::avx512());
  ctx.parallel_for(N * group * chunks, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t c = t % chunks, gi = (t / chunks) % group, n = t / (chunks * group);
      const int64_t m0 = c * per, m1 = std::min(Mg, m0 + per);
      const float* xg = x + (n * C + gi * Cg) * Pin;
      float* col = cols + ((n * group + gi) * Mg + m0) * ks * Pin;
      fast::sgemm(true, false, (m1 - m0) * ks, Pin, Cg, w + gi * Cg * R + m0 * ks, R, xg, Pin, col, Pin);
      for (int64_t m = m0; m < m1; ++m) {
        const int64_t mo = gi * Mg + m;
        const float b = bias ? bias[mo] : 0.f;
        float* yp = y + (n * M + mo) * Pout;
        const float* cm = col + (m - m0) * ks * Pin;
        for (int64_t od = 0; od < OD; ++od) {
          const Src td = tab[0][size_t(od)];
          for (int64_t oh = 0; oh < OH; ++oh) {
            float* row = yp + (od * OH + oh) * OW;
            const Src th = tab[1][size_t(oh)];
            if (td.tap < 0 || th.tap < 0) {
              std::fill(row, row + OW, b);
              continue;
            }
            const float* src = cm + (td.tap * KH + th.tap) * KW * Pin + (td.in * IH + th.in) * IW;
            if (dense_w) {
              interleave_taps(src, Pin, IW, KW, b, row, OW);
              continue;
            }
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t s = wtab[size_t(ow)];
              row[ow] = s < 0 ? b : b + src[s];
            }
          }
        }
      }
    }
  });
  return true;
}

}  // namespace nn
}  // namespace singa
#endif
