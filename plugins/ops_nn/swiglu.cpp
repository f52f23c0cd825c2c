// SwiGLU (opset 28): Y = A * sigmoid(alpha * A) * B, A and B of one shape
// (no broadcasting).
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"

#include <cmath>

namespace singa {
namespace nn {
namespace {

SINGA_VEC_CLONES void swiglu_f32(const float* a, const float* b, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] / (1.f + vec::exp_one(-alpha * a[i])) * b[i];
}

class SwiGlu : public NodeKernel {
 public:
  explicit SwiGlu(const sdk::Node& node) : NodeKernel(node), alpha_(node.attr_float("alpha", 1.f)) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check(a.dtype() == b.dtype(), "A and B must have one element type");
    SINGA_CHECK(a.shape() == b.shape(), "A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) +
                                            " must have one shape (no broadcasting)");
    sdk::Tensor y = ctx.output(0, a.shape(), a.dl_dtype());
    const int64_t n = a.numel();
    if (n == 0) return;
    if (a.dtype() == SINGA_ONNX_FLOAT) {
      const float* pa = a.data<float>();
      const float* pb = b.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(n, 16384, [&](int64_t lo, int64_t hi) { swiglu_f32(pa + lo, pb + lo, py + lo, hi - lo, alpha_); });
      return;
    }
    dispatch_real(a.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(n, 16384, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const A x = to_acc<A>(pa[i]);
          py[i] = from_acc<T>(A(x / (A(1) + std::exp(-A(alpha_) * x)) * to_acc<A>(pb[i])));
        }
      });
    });
  }

 private:
  float alpha_;
};

}  // namespace

void register_swiglu(sdk::Registrar& reg) {
  reg.kernel<SwiGlu>("", "SwiGLU", 28, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
