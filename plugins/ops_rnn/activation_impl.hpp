// activation_impl.hpp - inline bodies of the activations (hot in the step loop).
#ifndef SINGA_OPS_RNN_ACTIVATION_IMPL_HPP
#define SINGA_OPS_RNN_ACTIVATION_IMPL_HPP

#include <cmath>

namespace singa {
namespace ops {
namespace rnn {

template <typename T>
T Activation::operator()(T x) const {
  const T a = T(alpha), b = T(beta);
  switch (kind) {
    case ActKind::Relu: return x > T(0) ? x : T(0);
    case ActKind::Tanh: return std::tanh(x);
    case ActKind::Sigmoid:
      // Split by sign so exp never overflows.
      if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
      else {
        T e = std::exp(x);
        return e / (T(1) + e);
      }
    case ActKind::Affine: return a * x + b;
    case ActKind::LeakyRelu: return x >= T(0) ? x : a * x;
    case ActKind::ThresholdedRelu: return x > a ? x : T(0);
    case ActKind::ScaledTanh: return a * std::tanh(b * x);
    case ActKind::HardSigmoid: {
      T v = a * x + b;
      return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
    }
    case ActKind::Elu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
    case ActKind::Softsign: return x / (T(1) + std::abs(x));
    case ActKind::Softplus: return x > T(20) ? x : std::log1p(std::exp(x));
  }
  return x;
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
