// SoftmaxCrossEntropyLossGrad(dLoss, log_prob, labels[, weights]) -> dScores,
// for the forward op's reduction ("none", "sum", "mean") and ignore_index.
#include "register.hpp"

#include <nn_common.hpp>

#include <cmath>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

class SceGrad : public NodeKernel {
 public:
  explicit SceGrad(const sdk::Node& node)
      : NodeKernel(node), reduction_(node.attr_string("reduction", "mean")), has_ignore_(node.has_attr("ignore_index")),
        ignore_(node.attr_int("ignore_index", 0)) {
    if (reduction_ != "mean" && reduction_ != "sum" && reduction_ != "none")
      fail("attribute reduction must be none, sum or mean, got '" + reduction_ + "'");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dl = required(ctx, 0, "dLoss"), lp = required(ctx, 1, "log_prob"), lab = required(ctx, 2, "labels");
    sdk::Tensor wt = ctx.input(3);
    const Shape ls = lp.shape();
    check(ls.size() >= 2, "log_prob must be [N, C, ...]");
    const int64_t N = ls[0], C = ls[1], D = lp.numel() / std::max<int64_t>(1, N * C);
    check(lab.numel() == N * D, "labels must hold N x D values for log_prob " + nn::shape_str(ls));
    check(lab.dtype() == SINGA_ONNX_INT64 || lab.dtype() == SINGA_ONNX_INT32, "labels must be int32 or int64");
    check(reduction_ != "none" ? dl.numel() == 1 : dl.numel() == N * D, "dLoss has the wrong number of values");
    std::vector<double> w;
    if (wt.present()) {
      w = nn::real_values(wt, where());
      check(int64_t(w.size()) == C, "weights must hold one value per class");
    }
    std::vector<int64_t> labels(size_t(N * D));
    for (int64_t i = 0; i < N * D; ++i) labels[size_t(i)] = lab.int_at(i);
    double denom = 0;
    for (int64_t l : labels) {
      if (has_ignore_ && l == ignore_) continue;
      check(l >= 0 && l < C, "label " + std::to_string(l) + " outside [0, " + std::to_string(C) + ")");
      denom += w.empty() ? 1.0 : w[size_t(l)];
    }
    sdk::Tensor ds = ctx.output(0, ls, lp.dl_dtype());
    nn::dispatch_among<float, double>(lp.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = lp.data<T>();
      T* o = ds.data<T>();
      std::vector<double> gl = nn::real_values(dl, where());
      ctx.parallel_for(N, 1, [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n)
          for (int64_t d = 0; d < D; ++d) {
            const int64_t l = labels[size_t(n * D + d)];
            const bool ignored = has_ignore_ && l == ignore_;
            double g = reduction_ == "none" ? gl[size_t(n * D + d)] : gl[0];
            if (reduction_ == "mean") g = denom > 0 ? g / denom : 0.0;
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
  std::string reduction_;
  bool has_ignore_;
  int64_t ignore_;
};

}  // namespace

void register_loss_grads(sdk::Registrar& reg) {
  reg.kernel<SceGrad>(kDomain, "SoftmaxCrossEntropyLossGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
