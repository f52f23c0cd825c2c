// optimizer.hpp - what the optimizer ops of ai.onnx.preview.training share:
// inputs R (learning rate), T (update count), then `groups` blocks of n
// tensors each (X_1..X_n, G_1..G_n, ...); outputs are the updated blocks
// (X_1_new..X_n_new, ...), one fewer since the gradients are not returned.
#ifndef SINGA_OPS_TRAINING_OPTIMIZER_HPP
#define SINGA_OPS_TRAINING_OPTIMIZER_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace training {

constexpr const char* kDomain = "ai.onnx.preview.training";

class OptimizerKernel {
 public:
  // `names` names the input blocks, e.g. {"X", "G", "H"}.
  OptimizerKernel(const sdk::Node& node, std::vector<std::string> names);
  virtual ~OptimizerKernel() = default;

  void compute(sdk::Context& ctx) const;

 protected:
  // Updates n elements of one tensor: in[k] points at input block k's
  // values, out[k] receives output block k's.
  virtual void update(double r, int64_t t, const double* const* in, double* const* out, int64_t n) const = 0;

  // Reads a float attribute that the spec makes mandatory.
  static float required_float(const sdk::Node& node, const char* name);

 private:
  std::vector<std::string> names_;
  size_t tensors_ = 0;
};

void register_adagrad(sdk::Registrar& reg);
void register_adam(sdk::Registrar& reg);
void register_momentum(sdk::Registrar& reg);

// T1 (R) and T3 (the tensors) are float or double, T2 (T) int64.
constexpr uint64_t kRealTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE);

}  // namespace training
}  // namespace singa

#endif
