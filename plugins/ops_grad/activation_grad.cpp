// Gradients of the activations, elementwise from (dY, Y) or (dY, X), and of
// Softmax / LogSoftmax along an axis.
#include "register.hpp"

#include <nn_common.hpp>

#include <cmath>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

enum class Act { Relu, Sigmoid, Tanh, LeakyRelu, Elu, Softplus };

template <Act K>
class ActGrad : public NodeKernel {
 public:
  explicit ActGrad(const sdk::Node& node)
      : NodeKernel(node), alpha_(node.attr_float("alpha", K == Act::LeakyRelu ? 0.01f : 1.0f)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), v = required(ctx, 1, K <= Act::Tanh ? "Y" : "X");
    check(dy.shape() == v.shape() && dy.dtype() == v.dtype(), "dY and the saved value differ in shape or type");
    sdk::Tensor dx = ctx.output(0, v.shape(), v.dl_dtype());
    nn::dispatch_among<float, double>(v.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T *g = dy.data<T>(), *p = v.data<T>();
      T* o = dx.data<T>();
      const T a = T(alpha_);
      ctx.parallel_for(v.numel(), 1 << 15, [&](int64_t b, int64_t e) { apply(g + b, p + b, o + b, e - b, a); });
    });
  }

 private:
  // A plain loop over local copies of the pointers, with Relu as a select,
  // so that the compiler vectorises it (through the captured references and
  // with Relu's data-dependent branch it did not). o may be g (in place).
  template <class T>
  static void apply(const T* g, const T* p, T* o, int64_t n, T a) {
    if (K == Act::Relu) {
      for (int64_t i = 0; i < n; ++i) {
        const T gi = g[i];  // loaded either way, or the select becomes a branch
        o[i] = p[i] > T(0) ? gi : T(0);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = g[i] * local(p[i], a);
  }

  // d(activation)/d(input) at the saved value.
  template <class T>
  static T local(T v, T a) {
    switch (K) {
      case Act::Relu: return v > T(0) ? T(1) : T(0);
      case Act::Sigmoid: return v * (T(1) - v);
      case Act::Tanh: return T(1) - v * v;
      case Act::LeakyRelu: return v >= T(0) ? T(1) : a;
      case Act::Elu: return v > T(0) ? T(1) : a * std::exp(v);
      case Act::Softplus: return T(1) / (T(1) + std::exp(-v));
    }
    return T(0);
  }
  float alpha_;
};

// Softmax (log = false) or LogSoftmax gradient from (dY, Y).
template <bool Log>
class SoftmaxGrad : public NodeKernel {
 public:
  explicit SoftmaxGrad(const sdk::Node& node)
      : NodeKernel(node), coerce_(node.attr_int("coerce_2d", 0) != 0), axis_(node.attr_int("axis", coerce_ ? 1 : -1)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), y = required(ctx, 1, "Y");
    check(dy.shape() == y.shape() && dy.dtype() == y.dtype(), "dY and Y differ in shape or type");
    const Shape s = y.shape();
    const int64_t r = int64_t(s.size());
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    check(axis >= 0 && axis < std::max<int64_t>(r, 1), "axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? outer : i == axis || coerce_ ? n : inner) *= s[size_t(i)];
    sdk::Tensor dx = ctx.output(0, s, y.dl_dtype());
    nn::dispatch_among<float, double>(y.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T *g = dy.data<T>(), *p = y.data<T>();
      T* o = dx.data<T>();
      ctx.parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) {
          const int64_t base = (q / inner) * n * inner + q % inner;
          // The gradient is linear in dY, so a row of zero dY gives zeros
          // exactly, also where Y is NaN (a fully masked row that a later
          // Where replaced): 0 * NaN must not leak into the scores.
          bool zero = true;
          for (int64_t j = 0; j < n && zero; ++j) zero = g[base + j * inner] == T(0);
          if (zero) {
            for (int64_t j = 0; j < n; ++j) o[base + j * inner] = T(0);
            continue;
          }
          double dot = 0;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = base + j * inner;
            dot += Log ? double(g[i]) : double(g[i]) * double(p[i]);
          }
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = base + j * inner;
            o[i] = Log ? T(g[i] - std::exp(p[i]) * T(dot)) : T(p[i] * (g[i] - T(dot)));
          }
        }
      });
    });
  }

 private:
  bool coerce_;
  int64_t axis_;
};

}  // namespace

void register_activation_grads(sdk::Registrar& reg) {
  reg.kernel<ActGrad<Act::Relu>>(kDomain, "ReluGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<ActGrad<Act::Sigmoid>>(kDomain, "SigmoidGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<ActGrad<Act::Tanh>>(kDomain, "TanhGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<ActGrad<Act::LeakyRelu>>(kDomain, "LeakyReluGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<ActGrad<Act::Elu>>(kDomain, "EluGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<ActGrad<Act::Softplus>>(kDomain, "SoftplusGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<SoftmaxGrad<false>>(kDomain, "SoftmaxGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}});
  reg.kernel<SoftmaxGrad<true>>(kDomain, "LogSoftmaxGrad", 1, 1, "cpu", {{"T", 0, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
