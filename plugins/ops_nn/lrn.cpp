// LRN: local response normalisation across neighbouring channels.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

class LRN : public NodeKernel {
 public:
  explicit LRN(const sdk::Node& node)
      : NodeKernel(node),
        size_(node.attr_int("size", 0)),
        alpha_(node.attr_float("alpha", 1e-4f)),
        beta_(node.attr_float("beta", 0.75f)),
        bias_(node.attr_float("bias", 1.0f)) {
    if (size_ <= 0) fail("attribute size is required and must be positive, got " + std::to_string(size_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (N * C == 0) return;
    const int64_t S = x.numel() / (N * C);
    // The window spans channels [c - before, c + after].
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const A scale = A(alpha_) / A(size_), bias = A(bias_), beta = A(beta_);
      ctx.parallel_for(N * C, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, S * size_)), [&](int64_t pb, int64_t pe) {
        std::vector<A> sq(static_cast<size_t>(S));
        for (int64_t p = pb; p < pe; ++p) {
          const int64_t n = p / C, c = p % C;
          std::fill(sq.begin(), sq.end(), A(0));
          for (int64_t cc = std::max<int64_t>(0, c - before); cc <= std::min(C - 1, c + after); ++cc) {
            const T* xc = px + (n * C + cc) * S;
            for (int64_t i = 0; i < S; ++i) {
              const A v = to_acc<A>(xc[i]);
              sq[size_t(i)] += v * v;
            }
          }
          const T* xp = px + p * S;
          T* yp = py + p * S;
          for (int64_t i = 0; i < S; ++i)
            yp[i] = from_acc<T>(to_acc<A>(xp[i]) / std::pow(bias + scale * sq[size_t(i)], beta));
        }
      });
    });
  }

 private:
  int64_t size_;
  float alpha_, beta_, bias_;
};

}  // namespace

void register_lrn(sdk::Registrar& reg) {
  reg.kernel<LRN>("", "LRN", 1, 12, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<LRN>("", "LRN", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
