// activation.hpp - the named activation functions that RNN, GRU and LSTM
// take through their `activations` attribute.
#ifndef SINGA_OPS_RNN_ACTIVATION_HPP
#define SINGA_OPS_RNN_ACTIVATION_HPP

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace rnn {

enum class ActKind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct Activation {
  ActKind kind = ActKind::Tanh;
  float alpha = 0.f, beta = 0.f;

  template <typename T>
  T operator()(T x) const;
  // d/dx of the function at x, given y = f(x): the common functions' slopes
  // come from y without another exp or tanh (the backward kernels' chain rule).
  template <typename T>
  T derivative(T x, T y) const;
};

// Resolves the node's `activations` (with `activation_alpha`/`activation_beta`
// handed out in order to the functions that take them) into
// num_directions * per_direction functions; `defaults` is one direction's list.
std::vector<Activation> read_activations(const sdk::Node& node, const std::vector<std::string>& defaults,
                                         int num_directions);

}  // namespace rnn
}  // namespace ops
}  // namespace singa

#include "activation_impl.hpp"
#endif
