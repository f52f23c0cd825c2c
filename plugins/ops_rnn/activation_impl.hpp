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

template <typename T>
T Activation::derivative(T x, T y) const {
  const T a = T(alpha), b = T(beta);
  switch (kind) {
    case ActKind::Relu: return x > T(0) ? T(1) : T(0);
    case ActKind::Tanh: return T(1) - y * y;
    case ActKind::Sigmoid: return y * (T(1) - y);
    case ActKind::Affine: return a;
    case ActKind::LeakyRelu: return x >= T(0) ? T(1) : a;
    case ActKind::ThresholdedRelu: return x > a ? T(1) : T(0);
    case ActKind::ScaledTanh: {  // y = a tanh(bx)
      if (a == T(0)) return T(0);
      const T t = y / a;
      return a * b * (T(1) - t * t);
    }
    case ActKind::HardSigmoid: {
      const T v = a * x + b;
      return v > T(0) && v < T(1) ? a : T(0);
    }
    case ActKind::Elu: return x >= T(0) ? T(1) : y + a;  // a (e^x - 1) + a
    case ActKind::Softsign: {
      const T d = T(1) + std::abs(x);
      return T(1) / (d * d);
    }
    case ActKind::Softplus: {
      if (x > T(20)) return T(1);
      Activation s;
      s.kind = ActKind::Sigmoid;
      return s(x);
    }
  }
  return T(1);
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
