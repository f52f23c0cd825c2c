// Clip: bounds are attributes before opset 11 and optional scalar inputs after.
#include "nn_common.hpp"
#include "register.hpp"

#include <limits>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

class Clip : public NodeKernel {
 public:
  explicit Clip(const sdk::Node& node) : NodeKernel(node) {
    bounds_from_attrs_ = node.opset() < 11;
    if (bounds_from_attrs_) {
      attr_min_ = node.attr_float("min", -std::numeric_limits<float>::infinity());
      attr_max_ = node.attr_float("max", std::numeric_limits<float>::infinity());
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    dispatch_among<float, double, half, bfloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                   uint64_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = std::conditional_t<std::is_integral<T>::value, T, acc_t<T>>;
      using L = std::numeric_limits<A>;
      // Unbounded sides stay open: infinities pass through for reals.
      A lo = L::has_infinity ? -L::infinity() : L::lowest();
      A hi = L::has_infinity ? L::infinity() : L::max();
      if (bounds_from_attrs_) {
        lo = A(attr_min_);
        hi = A(attr_max_);
      } else {
        if (ctx.has_input(1)) lo = bound<T, A>(ctx.input(1), x, "min");
        if (ctx.has_input(2)) hi = bound<T, A>(ctx.input(2), x, "max");
      }
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          A v = to_acc<A>(px[i]);
          // Two separate steps so min > max yields max (as numpy.clip) and NaN passes through.
          v = v < lo ? lo : v;
          v = v > hi ? hi : v;
          py[i] = from_acc<T>(v);
        }
      });
    });
  }

 private:
  template <class T, class A>
  A bound(const sdk::Tensor& t, const sdk::Tensor& x, const char* name) const {
    SINGA_CHECK(t.dtype() == x.dtype(), std::string(name) + " is " + sdk::dtype_name(t.dtype()) + " but input is " +
                                            sdk::dtype_name(x.dtype()));
    SINGA_CHECK(t.numel() == 1, std::string(name) + " must be a scalar, got shape " + shape_str(t.shape()));
    return to_acc<A>(t.data<T>()[0]);
  }

  bool bounds_from_attrs_ = false;
  float attr_min_ = 0, attr_max_ = 0;
};

}  // namespace

void register_clip(sdk::Registrar& reg) {
  const uint64_t bounds = 0b110;  // min, max: scalars
  reg.kernel<Clip>("", "Clip", 1, 10, "cpu", {{"T", 0, sdk::kFloatTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<Clip>("", "Clip", 11, 11, "cpu", {{"T", 0, sdk::kFloatTypes}}, SINGA_KERNEL_MAY_INPLACE, bounds);
  // Clip-12 adds integers, Clip-13 bfloat16.
  reg.kernel<Clip>("", "Clip", 12, 17, "cpu", {{"T", 0, sdk::kNumericTypes}}, SINGA_KERNEL_MAY_INPLACE, bounds);
}

}  // namespace nn
}  // namespace singa
