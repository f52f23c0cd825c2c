// conv_grad_generic.hpp - ConvGrad for any real element type through the
// BLAS wrapper (blas.hpp): per image, im2col then dW += dY_g col^T, and
// col = W_g^T dY_g folded back onto dX (col2im). The float path on AVX-512
// CPUs is conv_grad_f32.hpp; this is everything else, shared by ConvGrad and
// ConvReluMaxPoolGrad.
#ifndef SINGA_OPS_GRAD_CONV_GRAD_GENERIC_HPP
#define SINGA_OPS_GRAD_CONV_GRAD_GENERIC_HPP

#include <blas.hpp>
#include <nn_common.hpp>
#include <spatial.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace singa {
namespace grad {

using nn::Geometry;

namespace detail {

constexpr int64_t kColBudget = int64_t(1) << 21;  // elements of a worker's column buffer

// Walks the unfolded matrix of one group of one image, columns
// [p0, p0 + cols), one row (input channel, kd, kh, kw) at a time and, within
// a row, in runs along the output width: run(row, col, input offset of the
// first tap or -1 when the run lies in padding, stride between taps, length).
// Taps of a run that fall in the width padding are reported one by one
// with offset -1 (the rare border case).
template <class Run>
void for_each_run(const Geometry& g, int64_t channels, int64_t p0, int64_t cols, Run&& run) {
  const int64_t ks = g.k_size(), KH = g.k[1], KW = g.k[2], OH = g.out[1], OW = g.out[2];
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], in_size = g.in_size();
  for (int64_t r = 0; r < channels * ks; ++r) {
    const int64_t c = r / ks, rem = r % ks;
    const int64_t kd = rem / (KH * KW), kh = (rem / KW) % KH, kw = rem % KW;
    int64_t ow = p0 % OW, oh = (p0 / OW) % OH, od = p0 / (OW * OH);
    for (int64_t j = 0; j < cols;) {
      const int64_t len = std::min(OW - ow, cols - j);
      const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
      const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      if (id < 0 || id >= D || ih < 0 || ih >= H) {
        run(r, j, int64_t(-1), int64_t(0), len);
      } else {
        const int64_t base = c * in_size + (id * H + ih) * W;
        int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
        // Leading and trailing taps in the width padding, then one dense run.
        int64_t t = 0;
        while (t < len && iw + t * g.s[2] < 0) run(r, j + t++, int64_t(-1), int64_t(0), int64_t(1));
        int64_t end = len;
        while (end > t && iw + (end - 1) * g.s[2] >= W) --end;
        if (end > t) run(r, j + t, base + iw + t * g.s[2], g.s[2], end - t);
        for (int64_t u = end; u < len; ++u) run(r, j + u, int64_t(-1), int64_t(0), int64_t(1));
      }
      j += len;
      ow = 0;
      if (++oh == OH) {
        oh = 0;
        ++od;
      }
    }
  }
}

}  // namespace detail

// Any of dx, dw, db may be null (not wanted).
template <class T>
void conv_grad_generic(const sdk::Context& ctx, const T* dy, const T* x, const T* w, T* dx, T* dw, T* db,
                       const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group) {
  const int64_t Mg = M / group, P = g.out_size(), K = Cg * g.k_size(), in_size = g.in_size();
  if (db) {
    ctx.parallel_for(M, 1, [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* p = dy + (n * M + m) * P;
          for (int64_t j = 0; j < P; ++j) s += double(p[j]);
        }
        db[m] = T(s);
      }
    });
  }
  if (!dx && !dw) return;
  if (dw) std::fill(dw, dw + M * K, T(0));
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(P, detail::kColBudget / std::max<int64_t>(1, K)));
  std::mutex mu;
  // The images are already spread over the pool: OpenBLAS's own threads
  // (other kernels set it to --threads) would multiply the thread count
  // and spin against the pool's.
  nn::SingleThreadedBlas blas_guard(ctx.num_threads() > 1);
  ctx.parallel_for(N, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> col(size_t(K * chunk));
    std::vector<T> local_dw(dw ? size_t(M * K) : 0, T(0));
    for (int64_t n = nb; n < ne; ++n) {
      if (dx) std::fill(dx + n * C * in_size, dx + (n + 1) * C * in_size, T(0));
      for (int64_t gi = 0; gi < group; ++gi) {
        const T* xg = x + (n * C + gi * Cg) * in_size;
        const T* dyg = dy + (n * M + gi * Mg) * P;
        const T* wg = w + gi * Mg * K;
        T* dxg = dx ? dx + (n * C + gi * Cg) * in_size : nullptr;
        for (int64_t p0 = 0; p0 < P; p0 += chunk) {
          const int64_t cols = std::min(chunk, P - p0);
          if (dw) {
            detail::for_each_run(g, Cg, p0, cols, [&](int64_t r, int64_t j, int64_t at, int64_t step, int64_t len) {
              T* dst = col.data() + r * cols + j;
              if (at < 0) {
                std::fill(dst, dst + len, T(0));
              } else if (step == 1) {
                std::copy(xg + at, xg + at + len, dst);
              } else {
                for (int64_t t = 0; t < len; ++t) dst[t] = xg[at + t * step];
              }
            });
            // dW_g[Mg x K] += dY_g[Mg x cols] * col^T
            nn::gemm(false, true, Mg, K, cols, T(1), dyg + p0, P, col.data(), cols, T(1), local_dw.data() + gi * Mg * K,
                     K);
          }
          if (dx) {
            // col[K x cols] = W_g^T * dY_g, then folded back onto the input.
            nn::gemm(true, false, K, cols, Mg, T(1), wg, K, dyg + p0, P, T(0), col.data(), cols);
            detail::for_each_run(g, Cg, p0, cols, [&](int64_t r, int64_t j, int64_t at, int64_t step, int64_t len) {
              if (at < 0) return;
              const T* src = col.data() + r * cols + j;
              T* dst = dxg + at;
              for (int64_t t = 0; t < len; ++t) dst[t * step] += src[t];
            });
          }
        }
      }
    }
    if (dw) {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < local_dw.size(); ++i) dw[i] += local_dw[i];
    }
  });
}

}  // namespace grad
}  // namespace singa
#endif
