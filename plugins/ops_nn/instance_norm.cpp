// InstanceNormalization: each (n, c) plane normalised by its own mean and
// variance, then scaled and shifted per channel.
#include "nn_common.hpp"
#include "register.hpp"

#include <cmath>

namespace singa {
namespace nn {
namespace {

class InstanceNorm : public NodeKernel {
 public:
  explicit InstanceNorm(const sdk::Node& node) : NodeKernel(node), epsilon_(node.attr_float("epsilon", 1e-5f)) {
    if (!(epsilon_ >= 0)) fail("attribute epsilon must not be negative, got " + std::to_string(epsilon_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    sdk::Tensor scale = required(ctx, 1, "scale");
    sdk::Tensor bias = required(ctx, 2, "B");
    const Shape xs = x.shape();
    check(xs.size() >= 3, "input must be [N, C, D1, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    check(scale.numel() == C && bias.numel() == C, "scale and B must hold " + std::to_string(C) + " values, got " +
                                                       shape_str(scale.shape()) + " and " + shape_str(bias.shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (N * C == 0) return;
    const int64_t S = x.numel() / (N * C);
    std::vector<double> sc = real_values(scale, where()), b = real_values(bias, where());
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(N * C, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, S)), [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          const T* xp = px + p * S;
          T* yp = py + p * S;
          double s = 0, ss = 0;
          for (int64_t i = 0; i < S; ++i) s += to_acc<double>(xp[i]);
          const double mean = S ? s / double(S) : 0.0;
          for (int64_t i = 0; i < S; ++i) {
            const double d = to_acc<double>(xp[i]) - mean;
            ss += d * d;
          }
          const double var = S ? ss / double(S) : 0.0;
          const size_t c = size_t(p % C);
          const double a = sc[c] / std::sqrt(var + double(epsilon_));
          const A ap = A(a), cp = A(b[c] - mean * a);
          for (int64_t i = 0; i < S; ++i) yp[i] = from_acc<T>(to_acc<A>(xp[i]) * ap + cp);
        }
      });
    });
  }

 private:
  float epsilon_;
};

}  // namespace

void register_instance_norm(sdk::Registrar& reg) {
  reg.kernel<InstanceNorm>("", "InstanceNormalization", 1, 5, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<InstanceNorm>("", "InstanceNormalization", 6, SINGA_VERSION_OPEN, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<InstanceNorm>("", "InstanceNormalization", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
