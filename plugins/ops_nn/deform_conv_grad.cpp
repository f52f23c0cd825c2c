// The backward of DeformConv (deform_conv.cpp), in double whatever the type.
// The forward is, per image n, with v(c,k,p) the bilinear sample of X[n,c]
// at tap k's moved position for output p and m(og,k,p) the mask (1 without):
//   col(c,k,p) = m * v,   Y[m,p] = B[m] + sum_{(c,k) of m's group} W[m,c,k] col(c,k,p)
// so dB = sum dY, dW = dY col^T, dcol = W^T dY per group, and through the
// sample: dmask += dcol * v, dX gets dcol * m scattered with the bilinear
// weights, and d offset (h, w) = dcol * m * (d v / d y, d v / d x), the
// weights' slopes times the four taps.
#include "deform_conv.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {
namespace {

std::vector<double> as_doubles(const sdk::Tensor& t, const std::string& where) {
  return t.present() ? real_values(t, where) : std::vector<double>();
}

void store(sdk::Context& ctx, size_t i, const sdk::Tensor& like, const std::vector<double>& g,
           const std::string& where) {
  if (!like.present() || i >= ctx.num_outputs()) return;
  sdk::Tensor o = ctx.output(i, like.shape(), like.dl_dtype());
  dispatch_real(like.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    T* p = o.data<T>();
    for (size_t j = 0; j < g.size(); ++j) p[j] = from_acc<T>(g[j]);
  });
}

}  // namespace

void deform_conv_backward(sdk::Context& ctx, const DeformConvDims& d, const std::string& where) {
  const size_t nin = ctx.num_outputs();
  const sdk::Tensor x = ctx.input(0), w = ctx.input(1), off = ctx.input(2);
  const sdk::Tensor b = nin > 3 ? ctx.input(3) : sdk::Tensor(), mask = nin > 4 ? ctx.input(4) : sdk::Tensor();
  const sdk::Tensor gy = ctx.num_inputs() > nin + 1 ? ctx.input(nin + 1) : sdk::Tensor();
  const int64_t N = d.N, C = d.C, H = d.H, W = d.W, M = d.M, G = d.G, OG = d.OG;
  const int64_t K = d.taps(), P = d.positions(), Cg = C / G, Mg = M / G, Cog = C / OG, R = Cg * K;
  if (gy.present())
    SINGA_CHECK(gy.numel() == N * M * P && gy.dtype() == x.dtype(),
                "the gradient of Y must hold " + std::to_string(N * M * P) + " values of X's type, got " +
                    shape_str(gy.shape()));
  const std::vector<double> xv = as_doubles(x, where), wv = as_doubles(w, where), ov = as_doubles(off, where);
  const std::vector<double> mv = as_doubles(mask, where);
  const std::vector<double> dy = gy.present() ? as_doubles(gy, where) : std::vector<double>(size_t(N * M * P), 0.0);
  std::vector<double> dx(xv.size(), 0.0), dw(wv.size(), 0.0), doff(ov.size(), 0.0), db(size_t(M), 0.0),
      dmask(mv.size(), 0.0);
  std::vector<double> col(size_t(C * K * P)), dcol(size_t(C * K * P));

  // Tap k of channel row c for output p: where it samples, and the mask.
  auto position = [&](int64_t n, int64_t c, int64_t k, int64_t p, double* yy, double* xx, double* m) {
    const int64_t og = c / Cog, ki = k / d.KW, kj = k % d.KW, oh = p / d.OW, ow = p % d.OW;
    const double* oh_plane = ov.data() + ((n * OG + og) * K * 2 + 2 * k) * P;
    *yy = double(oh * d.SH - d.PH + ki * d.DH) + oh_plane[p];
    *xx = double(ow * d.SW - d.PW + kj * d.DW) + oh_plane[P + p];
    *m = mv.empty() ? 1.0 : mv[size_t(((n * OG + og) * K + k) * P + p)];
  };

  for (int64_t n = 0; n < N; ++n) {
    const double* dyn = dy.data() + n * M * P;
    // The columns (masked samples), as the forward built them.
    ctx.parallel_for(C * K, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, P)), [&](int64_t rb, int64_t re) {
      BilinearTaps t;
      for (int64_t row = rb; row < re; ++row) {
        const int64_t c = row / K, k = row % K;
        const double* plane = xv.data() + (n * C + c) * H * W;
        for (int64_t p = 0; p < P; ++p) {
          double yy, xx, m, v = 0;
          position(n, c, k, p, &yy, &xx, &m);
          if (bilinear_taps(H, W, yy, xx, t))
            for (int q = 0; q < 4; ++q)
              if (t.at[q] >= 0) v += t.w[q] * plane[t.at[q]];
          col[size_t(row * P + p)] = v * m;
        }
      }
    });
    // dB, dW (rows of one output channel) and dcol (rows of one group's columns).
    ctx.parallel_for(M, 1, [&](int64_t mb, int64_t me) {
      for (int64_t m = mb; m < me; ++m) {
        const double* g = dyn + m * P;
        const double* cg = col.data() + (m / Mg) * R * P;
        for (int64_t p = 0; p < P; ++p) db[size_t(m)] += g[p];
        for (int64_t r = 0; r < R; ++r) {
          double s = 0;
          for (int64_t p = 0; p < P; ++p) s += g[p] * cg[r * P + p];
          dw[size_t(m * R + r)] += s;
        }
      }
    });
    ctx.parallel_for(C * K, 1, [&](int64_t rb, int64_t re) {
      for (int64_t row = rb; row < re; ++row) {
        const int64_t gi = row / R, r = row % R;
        double* dc = dcol.data() + row * P;
        std::fill(dc, dc + P, 0.0);
        for (int64_t m = gi * Mg; m < (gi + 1) * Mg; ++m) {
          const double wmr = wv[size_t(m * R + r)];
          for (int64_t p = 0; p < P; ++p) dc[p] += wmr * dyn[m * P + p];
        }
      }
    });
    // dX: one channel plane per task (the taps of a channel land only there).
    ctx.parallel_for(C, 1, [&](int64_t cb, int64_t ce) {
      BilinearTaps t;
      for (int64_t c = cb; c < ce; ++c) {
        double* plane = dx.data() + (n * C + c) * H * W;
        for (int64_t k = 0; k < K; ++k)
          for (int64_t p = 0; p < P; ++p) {
            double yy, xx, m;
            position(n, c, k, p, &yy, &xx, &m);
            const double g = dcol[size_t((c * K + k) * P + p)] * m;
            if (g == 0 || !bilinear_taps(H, W, yy, xx, t)) continue;
            for (int q = 0; q < 4; ++q)
              if (t.at[q] >= 0) plane[t.at[q]] += g * t.w[q];
          }
      }
    });
    // The offsets and the mask: one (offset group, tap) per task, summing
    // over that group's channels.
    ctx.parallel_for(OG * K, 1, [&](int64_t lo, int64_t hi) {
      BilinearTaps t;
      for (int64_t ogk = lo; ogk < hi; ++ogk) {
        const int64_t og = ogk / K, k = ogk % K;
        double* d_oh = doff.data() + ((n * OG + og) * K * 2 + 2 * k) * P;
        double* d_ow = d_oh + P;
        double* d_m = mv.empty() ? nullptr : dmask.data() + ((n * OG + og) * K + k) * P;
        for (int64_t c = og * Cog; c < (og + 1) * Cog; ++c) {
          const double* plane = xv.data() + (n * C + c) * H * W;
          for (int64_t p = 0; p < P; ++p) {
            const double g = dcol[size_t((c * K + k) * P + p)];
            if (g == 0) continue;
            double yy, xx, m;
            position(n, c, k, p, &yy, &xx, &m);
            if (!bilinear_taps(H, W, yy, xx, t)) continue;
            double v = 0, vy = 0, vx = 0;
            for (int q = 0; q < 4; ++q) {
              if (t.at[q] < 0) continue;
              const double xq = plane[t.at[q]];
              v += t.w[q] * xq;
              vy += t.dy[q] * xq;
              vx += t.dx[q] * xq;
            }
            d_oh[p] += g * m * vy;
            d_ow[p] += g * m * vx;
            if (d_m) d_m[p] += g * v;
          }
        }
      }
    });
  }
  store(ctx, 0, x, dx, where);
  store(ctx, 1, w, dw, where);
  store(ctx, 2, off, doff, where);
  store(ctx, 3, b, db, where);
  store(ctx, 4, mask, dmask, where);
}

}  // namespace nn
}  // namespace singa
