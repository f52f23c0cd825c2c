// conv_impl.hpp - the two ways Conv runs, shared with the quantized convs.
//
// conv_direct: grouped convolutions with one input channel per group
// (depthwise), a plain loop per output plane.
// conv_unfolded: everything else, im2col (skipped for 1x1 stride-1 unpadded
// kernels) and OpenBLAS GEMM per image and group. T is the storage type,
// A the arithmetic type (float for 16-bit floats, which go through a
// scratch buffer).
#ifndef SINGA_OPS_NN_CONV_IMPL_HPP
#define SINGA_OPS_NN_CONV_IMPL_HPP

#include "blas.hpp"
#include "im2col.hpp"
#include "nn_common.hpp"
#include "spatial.hpp"

#include <algorithm>
#include <type_traits>

namespace singa {
namespace nn {

// Bounds the im2col scratch buffer (elements) for large images.
constexpr int64_t kConvColBudget = int64_t(1) << 22;

// One input channel per group: each output plane reads one input plane.
template <class T, class A>
void conv_direct(const sdk::Context& ctx, const T* x, const A* w, const A* bias, T* y, const Geometry& g, int64_t N,
                 int64_t C, int64_t M, int64_t group) {
  const int64_t Mg = M / group, in_size = g.in_size(), out_size = g.out_size(), ks = g.k_size();
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_size * ks));
  ctx.parallel_for(N * M, grain, [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      const int64_t n = p / M, oc = p % M;
      const T* xp = x + (n * C + oc / Mg) * in_size;
      const A* wk = w + oc * ks;
      T* yp = y + p * out_size;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            A sum = bias[oc];
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              if (id < 0 || id >= D) continue;
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                if (ih < 0 || ih >= H) continue;
                const T* xrow = xp + (id * H + ih) * W;
                const A* wrow = wk + (kd * g.k[1] + kh) * g.k[2];
                int64_t iw = ow * g.s[2] - g.pb[2];
                for (int64_t kw = 0; kw < g.k[2]; ++kw, iw += g.d[2])
                  if (iw >= 0 && iw < W) sum += wrow[kw] * to_acc<A>(xrow[iw]);
              }
            }
            yp[(od * g.out[1] + oh) * g.out[2] + ow] = from_acc<T>(sum);
          }
    }
  });
}

// Per image and group: Y_g[Mg x P] = W_g[Mg x K] * cols[K x P].
template <class T, class A>
void conv_unfolded(const sdk::Context& ctx, const T* x, const A* w, const A* bias, T* y, const Geometry& g,
                   int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group) {
  constexpr bool kSame = std::is_same<T, A>::value;
  const int64_t Mg = M / group, in_size = g.in_size(), P = g.out_size();
  const int64_t K = Cg * g.k_size();
  bool pointwise = kSame && g.k_size() == 1 && g.no_padding();
  for (int i = 0; i < kMaxSpatial; ++i) pointwise = pointwise && g.s[i] == 1;
  const int64_t chunk = pointwise ? P : std::max<int64_t>(1, std::min<int64_t>(P, kConvColBudget / K));
  A* col = pointwise ? nullptr : static_cast<A*>(ctx.workspace(size_t(K * chunk) * sizeof(A)));
  A* tmp = kSame ? nullptr : static_cast<A*>(ctx.workspace(size_t(Mg * chunk) * sizeof(A)));

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * Cg) * in_size;
      const A* wg = w + gi * Mg * K;
      T* yg = y + (n * M + gi * Mg) * P;
      for (int64_t p0 = 0; p0 < P; p0 += chunk) {
        const int64_t cols = std::min(chunk, P - p0);
        const A* src;
        int64_t ldb;
        if (pointwise) {
          src = reinterpret_cast<const A*>(xg) + p0;
          ldb = in_size;
        } else {
          im2col<T, A>(ctx, xg, g, Cg, p0, cols, col);
          src = col;
          ldb = cols;
        }
        if constexpr (kSame) {
          gemm(false, false, Mg, cols, K, A(1), wg, K, src, ldb, A(0), reinterpret_cast<A*>(yg) + p0, P);
        } else {
          gemm(false, false, Mg, cols, K, A(1), wg, K, src, ldb, A(0), tmp, cols);
          for (int64_t m = 0; m < Mg; ++m)
            for (int64_t j = 0; j < cols; ++j)
              yg[m * P + p0 + j] = from_acc<T>(tmp[m * cols + j] + bias[gi * Mg + m]);
        }
      }
    }
  }
  if constexpr (kSame) {
    ctx.parallel_for(N * M, std::max<int64_t>(1, 16384 / P), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const A bv = bias[p % M];
        if (bv == A(0)) continue;
        A* yp = reinterpret_cast<A*>(y) + p * P;
        for (int64_t j = 0; j < P; ++j) yp[j] += bv;
      }
    });
  }
}

}  // namespace nn
}  // namespace singa

#endif
