// Adagrad: per-coordinate learning rates from the accumulated squared
// gradient H, with a learning rate decaying over the update count T.
#include "optimizer.hpp"

#include <cmath>

namespace singa {
namespace training {
namespace {

class Adagrad : public OptimizerKernel {
 public:
  explicit Adagrad(const sdk::Node& node)
      : OptimizerKernel(node, {"X", "G", "H"}),
        decay_(node.attr_float("decay_factor", 0.0f)),
        epsilon_(node.attr_float("epsilon", 1e-6f)),
        norm_(node.attr_float("norm_coefficient", 0.0f)) {
    if (!(decay_ >= 0.0)) node.fail("attribute decay_factor must be >= 0, got " + std::to_string(decay_));
    if (!(epsilon_ >= 0.0)) node.fail("attribute epsilon must be >= 0, got " + std::to_string(epsilon_));
  }

 protected:
  void update(double r, int64_t t, const double* const* in, double* const* out, int64_t n) const override {
    const double* x = in[0];
    const double* g = in[1];
    const double* h = in[2];
    double rate = r / (1.0 + double(t) * decay_);
    for (int64_t i = 0; i < n; ++i) {
      double gr = norm_ * x[i] + g[i];
      double hn = h[i] + gr * gr;
      out[0][i] = x[i] - rate * gr / (std::sqrt(hn) + epsilon_);
      out[1][i] = hn;
    }
  }

 private:
  double decay_, epsilon_, norm_;
};

}  // namespace

void register_adagrad(sdk::Registrar& reg) {
  reg.kernel<Adagrad>(kDomain, "Adagrad", 1, 1, "cpu",
                      {{"T1", 0, kRealTypes}, {"T2", 1, sdk::bit(SINGA_ONNX_INT64)}, {"T3", 2, kRealTypes}});
}

}  // namespace training
}  // namespace singa
