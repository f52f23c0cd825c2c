// SoftmaxCrossEntropyLossGrad(dLoss, log_prob, labels[, weights]) -> dScores,
// for the forward op's reduction ("none", "sum", "mean") and ignore_index.
#include "register.hpp"
#include "sce_grad_rules.hpp"

#include <nn_common.hpp>

#include <cmath>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

class SceGrad : public NodeKernel {
 public:
  explicit SceGrad(const sdk::Node& node) : NodeKernel(node), rules_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dl = required(ctx, 0, "dLoss"), lp = required(ctx, 1, "log_prob"), lab = required(ctx, 2, "labels");
    sdk::Tensor wt = ctx.input(3);
    const std::vector<double> w = wt.present() ? nn::real_values(wt, where()) : std::vector<double>();
    const ops::SceGradRules::Plan plan = rules_.plan(dl, lp, lab, w);
    const int64_t N = plan.N, C = plan.C, D = plan.D;
    sdk::Tensor ds = ctx.output(0, lp.shape(), lp.dl_dtype());
    nn::dispatch_among<float, double>(lp.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = lp.data<T>();
      T* o = ds.data<T>();
      std::vector<double> gl = nn::real_values(dl, where());
      ctx.parallel_for(N, 1, [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n)
          for (int64_t d = 0; d < D; ++d) {
            const int64_t l = plan.labels[size_t(n * D + d)];
            const bool ignored = rules_.ignored(l);
            double g = rules_.per_item() ? gl[size_t(n * D + d)] : gl[0];
            if (rules_.mean()) g = plan.denom > 0 ? g / plan.denom : 0.0;
            if (!ignored && !w.empty()) g *= w[size_t(l)];
            for (int64_t c = 0; c < C; ++c) {
              const int64_t at = (n * C + c) * D + d;
              o[at] = ignored ? T(0) : T((std::exp(double(p[at])) - (c == l ? 1.0 : 0.0)) * g);
            }
          }
      });
    });
  }

 private:
  ops::SceGradRules rules_;
};

}  // namespace

void register_loss_grads(sdk::Registrar& reg) {
  reg.kernel<SceGrad>(kDomain, "SoftmaxCrossEntropyLossGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
