// BatchNormalizationGrad(dY, X, scale, mean, var) -> (dX, dScale, dB).
// training_mode=1: the forward pass normalised with the batch's own
// statistics (recomputed here), so dX also flows through the mean and
// variance; otherwise the running statistics were constants.
#include "register.hpp"

#include <nn_common.hpp>

#include <cmath>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

class BatchNormGrad : public NodeKernel {
 public:
  explicit BatchNormGrad(const sdk::Node& node)
      : NodeKernel(node), eps_(node.attr_float("epsilon", 1e-5f)), training_(node.attr_int("training_mode", 0) != 0) {
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), scale = required(ctx, 2, "scale");
    sdk::Tensor mean = ctx.input(3), var = ctx.input(4);
    const Shape xs = x.shape();
    check(xs.size() >= 2 && dy.shape() == xs, "dY and X must be [N, C, ...] of one shape");
    const int64_t N = xs[0], C = xs[1], S = x.numel() / std::max<int64_t>(1, N * C);
    check(scale.numel() == C, "scale must hold one value per channel");
    check(training_ || (mean.present() && var.present()), "inference mode needs the running mean and var");
    std::vector<double> sc = nn::real_values(scale, where()), mu, vr;
    if (!training_) {
      mu = nn::real_values(mean, where());
      vr = nn::real_values(var, where());
    }
    sdk::Tensor dx, ds, db;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) ds = ctx.output(1, Shape{C}, scale.dl_dtype());
    if (want_[2]) db = ctx.output(2, Shape{C}, scale.dl_dtype());
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T *g = dy.data<T>(), *px = x.data<T>();
      const double M = double(N * S);
      std::vector<double> sum_g(static_cast<size_t>(C)), sum_gx(static_cast<size_t>(C));
      ctx.parallel_for(C, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          double m = 0, v = 0;
          if (training_) {
            for (int64_t n = 0; n < N; ++n)
              for (int64_t i = 0; i < S; ++i) m += double(px[(n * C + c) * S + i]);
            m /= M;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t i = 0; i < S; ++i) {
                double d = double(px[(n * C + c) * S + i]) - m;
                v += d * d;
              }
            v /= M;
          } else {
            m = mu[size_t(c)];
            v = vr[size_t(c)];
          }
          const double inv = 1.0 / std::sqrt(v + double(eps_));
          double sg = 0, sgx = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < S; ++i) {
              const int64_t at = (n * C + c) * S + i;
              sg += double(g[at]);
              sgx += double(g[at]) * (double(px[at]) - m) * inv;
            }
          sum_g[size_t(c)] = sg;
          sum_gx[size_t(c)] = sgx;
          if (!dx.present()) continue;
          T* o = dx.data<T>();
          const double k = sc[size_t(c)] * inv;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < S; ++i) {
              const int64_t at = (n * C + c) * S + i;
              if (training_) {
                const double xhat = (double(px[at]) - m) * inv;
                o[at] = T(k * (double(g[at]) - sg / M - xhat * sgx / M));
              } else {
                o[at] = T(k * double(g[at]));
              }
            }
        }
      });
      nn::dispatch_among<float, double>(scale.dtype(), where(), [&](auto stag) {
        using U = decltype(stag);
        for (int64_t c = 0; c < C; ++c) {
          if (ds.present()) ds.data<U>()[c] = U(sum_gx[size_t(c)]);
          if (db.present()) db.data<U>()[c] = U(sum_g[size_t(c)]);
        }
      });
    });
  }

 private:
  float eps_;
  bool training_;
  bool want_[3] = {false, false, false};
};

}  // namespace

void register_batch_norm_grad(sdk::Registrar& reg) {
  reg.kernel<BatchNormGrad>(kDomain, "BatchNormalizationGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
