// Momentum: SGD with a running velocity V, in standard or Nesterov form.
#include "optimizer.hpp"

#include <string>

namespace singa {
namespace training {
namespace {

class Momentum : public OptimizerKernel {
 public:
  explicit Momentum(const sdk::Node& node)
      : OptimizerKernel(node, {"X", "G", "V"}),
        alpha_(required_float(node, "alpha")),
        beta_(required_float(node, "beta")),
        norm_(required_float(node, "norm_coefficient")) {
    if (!node.has_attr("mode")) node.fail("required attribute mode is missing");
    std::string mode = node.attr_string("mode", "");
    if (mode == "nesterov")
      nesterov_ = true;
    else if (mode != "standard")
      node.fail("attribute mode must be 'standard' or 'nesterov', got '" + mode + "'");
  }

 protected:
  void update(double r, int64_t t, const double* const* in, double* const* out, int64_t n) const override {
    const double* x = in[0];
    const double* g = in[1];
    const double* v = in[2];
    // The first step has no history to scale against, so beta starts at 1.
    double beta = t > 0 ? beta_ : 1.0;
    for (int64_t i = 0; i < n; ++i) {
      double gr = norm_ * x[i] + g[i];
      double vn = alpha_ * v[i] + beta * gr;
      out[0][i] = nesterov_ ? x[i] - r * (gr + alpha_ * vn) : x[i] - r * vn;
      out[1][i] = vn;
    }
  }

 private:
  double alpha_, beta_, norm_;
  bool nesterov_ = false;
};

}  // namespace

void register_momentum(sdk::Registrar& reg) {
  reg.kernel<Momentum>(kDomain, "Momentum", 1, 1, "cpu",
                       {{"T1", 0, kRealTypes}, {"T2", 1, sdk::bit(SINGA_ONNX_INT64)}, {"T3", 2, kRealTypes}});
}

}  // namespace training
}  // namespace singa
