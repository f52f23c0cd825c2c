// ConvGrad(dY, X, W) -> (dX, dW, dB) for Conv with groups, strides, pads,
// dilations and auto_pad (1 to 3 spatial dims). Images are spread over the
// thread pool; each worker unfolds its images (im2col), multiplies with
// OpenBLAS, folds the input gradient back (col2im) and sums its share of dW,
// which is added to the total once per worker.
#include "conv_grad_f32.hpp"
#include "register.hpp"

#include <sgemm.hpp>

#include <blas.hpp>
#include <nn_common.hpp>
#include <spatial.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace singa {
namespace grad {
namespace {

using nn::Geometry;
using nn::NodeKernel;
using nn::Shape;

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

class ConvGrad : public NodeKernel {
 public:
  explicit ConvGrad(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ < 1) fail("attribute group must be positive");
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), w = required(ctx, 2, "W");
    check(dy.dtype() == x.dtype() && w.dtype() == x.dtype(), "dY, X and W must share one element type");
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = nn::spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W must have the rank of X");
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    check(Cg * group_ == C && M % group_ == 0, "channels of X " + nn::shape_str(xs) + " and W " + nn::shape_str(ws) +
                                                   " do not fit group " + std::to_string(group_));
    Geometry g = nn::window_geometry(attrs_, in, std::vector<int64_t>(ws.begin() + 2, ws.end()), *this);
    Shape ys{N, M};
    for (int64_t d : g.out_dims()) ys.push_back(d);
    check(dy.shape() == ys, "dY has shape " + nn::shape_str(dy.shape()) + ", the convolution's output is " + nn::shape_str(ys));
    sdk::Tensor dx, dw, db;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) dw = ctx.output(1, ws, x.dl_dtype());
    if (want_[2]) db = ctx.output(2, Shape{M}, x.dl_dtype());
    if (x.dtype() == SINGA_ONNX_FLOAT && fast::avx512()) {
      conv_grad_f32(ctx, dy.data<float>(), x.data<float>(), w.data<float>(), dx.present() ? dx.data<float>() : nullptr,
                    dw.present() ? dw.data<float>() : nullptr, db.present() ? db.data<float>() : nullptr, g, N, C, M,
                    Cg, group_);
      return;
    }
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      run<T>(ctx, dy.data<T>(), x.data<T>(), w.data<T>(), dx.present() ? dx.data<T>() : nullptr,
             dw.present() ? dw.data<T>() : nullptr, db.present() ? db.data<T>() : nullptr, g, N, C, M, Cg);
    });
  }

 private:
  template <class T>
  void run(const sdk::Context& ctx, const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, const Geometry& g,
           int64_t N, int64_t C, int64_t M, int64_t Cg) const {
    const int64_t Mg = M / group_, P = g.out_size(), K = Cg * g.k_size(), in_size = g.in_size();
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
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(P, kColBudget / std::max<int64_t>(1, K)));
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
        for (int64_t gi = 0; gi < group_; ++gi) {
          const T* xg = x + (n * C + gi * Cg) * in_size;
          const T* dyg = dy + (n * M + gi * Mg) * P;
          const T* wg = w + gi * Mg * K;
          T* dxg = dx ? dx + (n * C + gi * Cg) * in_size : nullptr;
          for (int64_t p0 = 0; p0 < P; p0 += chunk) {
            const int64_t cols = std::min(chunk, P - p0);
            if (dw) {
              for_each_run(g, Cg, p0, cols, [&](int64_t r, int64_t j, int64_t at, int64_t step, int64_t len) {
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
              nn::gemm(false, true, Mg, K, cols, T(1), dyg + p0, P, col.data(), cols, T(1), local_dw.data() + gi * Mg * K, K);
            }
            if (dx) {
              // col[K x cols] = W_g^T * dY_g, then folded back onto the input.
              nn::gemm(true, false, K, cols, Mg, T(1), wg, K, dyg + p0, P, T(0), col.data(), cols);
              for_each_run(g, Cg, p0, cols, [&](int64_t r, int64_t j, int64_t at, int64_t step, int64_t len) {
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

  nn::WindowAttrs attrs_;
  int64_t group_;
  bool want_[3] = {false, false, false};
};

}  // namespace

void register_conv_grad(sdk::Registrar& reg) {
  reg.kernel<ConvGrad>(kDomain, "ConvGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
