// InstanceNormalization: each (n, c) plane normalised by its own mean and
// variance, then scaled and shifted per channel.
#include "norm_common.hpp"
#include "register.hpp"

#include <cmath>
#include <type_traits>

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
    SINGA_CHECK(xs.size() >= 3, "input must be [N, C, D1, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    SINGA_CHECK(scale.numel() == C && bias.numel() == C, "scale and B must hold " + std::to_string(C) +
                                                             " values, got " + shape_str(scale.shape()) + " and " +
                                                             shape_str(bias.shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (N * C == 0) return;
    const int64_t S = x.numel() / (N * C);
    std::vector<double> sc = real_values(scale, where()), b = real_values(bias, where());
    normalise_runs(ctx, x, y, N * C, S, where(), [&](int64_t p, const auto* xp, auto* yp, double mean, double var) {
      using T = std::remove_pointer_t<decltype(yp)>;
      using A = acc_t<T>;
      const size_t c = size_t(p % C);
      const double a = sc[c] / std::sqrt(var + double(epsilon_));
      const A ap = A(a), cp = A(b[c] - mean * a);
      for (int64_t i = 0; i < S; ++i) yp[i] = from_acc<T>(to_acc<A>(xp[i]) * ap + cp);
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
