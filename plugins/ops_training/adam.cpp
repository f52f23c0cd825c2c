// Adam: moves X along the bias-corrected ratio of the running mean V of the
// gradient to the root of its running second moment H.
#include "optimizer.hpp"

#include <cmath>

namespace singa {
namespace training {
namespace {

class Adam : public OptimizerKernel {
 public:
  explicit Adam(const sdk::Node& node)
      : OptimizerKernel(node, {"X", "G", "V", "H"}),
        alpha_(node.attr_float("alpha", 0.9f)),
        beta_(node.attr_float("beta", 0.999f)),
        epsilon_(node.attr_float("epsilon", 1e-6f)),
        norm_(node.attr_float("norm_coefficient", 0.0f)),
        norm_post_(node.attr_float("norm_coefficient_post", 0.0f)) {
    if (!(alpha_ >= 0.0 && alpha_ < 1.0)) node.fail("attribute alpha must be in [0, 1), got " + std::to_string(alpha_));
    if (!(beta_ >= 0.0 && beta_ < 1.0)) node.fail("attribute beta must be in [0, 1), got " + std::to_string(beta_));
    if (!(epsilon_ >= 0.0)) node.fail("attribute epsilon must be >= 0, got " + std::to_string(epsilon_));
  }

 protected:
  void update(double r, int64_t t, const double* const* in, double* const* out, int64_t n) const override {
    const double* x = in[0];
    const double* g = in[1];
    const double* v = in[2];
    const double* h = in[3];
    double rate = t > 0 ? r * std::sqrt(1.0 - std::pow(beta_, double(t))) / (1.0 - std::pow(alpha_, double(t))) : r;
    for (int64_t i = 0; i < n; ++i) {
      double gr = norm_ * x[i] + g[i];
      double vn = alpha_ * v[i] + (1.0 - alpha_) * gr;
      double hn = beta_ * h[i] + (1.0 - beta_) * gr * gr;
      double xn = x[i] - rate * vn / (std::sqrt(hn) + epsilon_);
      out[0][i] = (1.0 - norm_post_) * xn;
      out[1][i] = vn;
      out[2][i] = hn;
    }
  }

 private:
  double alpha_, beta_, epsilon_, norm_, norm_post_;
};

}  // namespace

void register_adam(sdk::Registrar& reg) {
  reg.kernel<Adam>(kDomain, "Adam", 1, 1, "cpu",
                   {{"T1", 0, kRealTypes}, {"T2", 1, sdk::bit(SINGA_ONNX_INT64)}, {"T3", 2, kRealTypes}});
}

}  // namespace training
}  // namespace singa
