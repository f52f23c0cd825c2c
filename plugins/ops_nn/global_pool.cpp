// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: one value per (n, c) plane.
#include "nn_common.hpp"
#include "plane_max_f32.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

// A float plane's sum in double, in 8 independent lanes so that the loop
// vectorizes (one dependent add per element ran a ResNet/SqueezeNet head's
// GlobalAveragePool at ~2 GB/s).
SINGA_VEC_CLONES double sum_widened(const float* x, int64_t n) {
  constexpr int L = 8;
  double acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) acc[l] += double(x[i + l]);
  double s = 0;
  for (int l = 0; l < L; ++l) s += acc[l];
  for (; i < n; ++i) s += double(x[i]);
  return s;
}

}  // namespace

double plane_sum(const float* x, int64_t n) { return sum_widened(x, n); }

namespace {

enum class Reduce { Mean, Max, Lp };

template <Reduce kKind>
class GlobalPool : public NodeKernel {
 public:
  explicit GlobalPool(const sdk::Node& node) : NodeKernel(node) {
    if (kKind == Reduce::Lp) {
      // p is a float before opset 2 and an int after.
      p_ = double(node.attr_int("p", int64_t(node.attr_float("p", 2.0f))));
      if (!(p_ > 0)) fail("attribute p must be positive, got " + std::to_string(p_));
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    Shape xs = x.shape();
    SINGA_CHECK(xs.size() >= 3, "X must be [N, C, D1, ...] with at least one spatial dim, got shape " + shape_str(xs));
    Shape ys(xs.size(), 1);
    ys[0] = xs[0];
    ys[1] = xs[1];
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t planes = xs[0] * xs[1];
    const int64_t size = planes ? x.numel() / planes : 0;
    if (planes == 0) return;
    SINGA_CHECK(size > 0, "X of shape " + shape_str(xs) + " has an empty spatial extent");
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const A p = A(p_);
      ctx.parallel_for(planes, std::max<int64_t>(1, 16384 / size), [&](int64_t b, int64_t e) {
        for (int64_t pl = b; pl < e; ++pl) {
          const T* xp = px + pl * size;
          A r;
          if constexpr (kKind == Reduce::Max && std::is_same<T, float>::value) {
            r = plane_max_f32(xp, size);
          } else if (kKind == Reduce::Max) {
            r = to_acc<A>(xp[0]);
            for (int64_t i = 1; i < size; ++i) r = std::max(r, to_acc<A>(xp[i]));
          } else if (kKind == Reduce::Mean) {
            // Widened sum: float planes can be large.
            double s = 0;
            if constexpr (std::is_same<T, float>::value) {
              s = sum_widened(xp, size);
            } else {
              for (int64_t i = 0; i < size; ++i) s += double(to_acc<A>(xp[i]));
            }
            r = A(s / double(size));
          } else {
            double s = 0;
            for (int64_t i = 0; i < size; ++i) s += std::pow(std::abs(double(to_acc<A>(xp[i]))), double(p));
            r = A(std::pow(s, 1.0 / double(p)));
          }
          py[pl] = from_acc<T>(r);
        }
      });
    });
  }

 private:
  double p_ = 2;
};

}  // namespace

void register_global_pool(sdk::Registrar& reg) {
  const uint64_t f = sdk::kFloatTypes;
  reg.kernel<GlobalPool<Reduce::Mean>>("", "GlobalAveragePool", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f}});
  reg.kernel<GlobalPool<Reduce::Max>>("", "GlobalMaxPool", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f}});
  reg.kernel<GlobalPool<Reduce::Lp>>("", "GlobalLpPool", 1, 1, "cpu", {{"T", 0, f}});
  reg.kernel<GlobalPool<Reduce::Lp>>("", "GlobalLpPool", 2, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f}});
  // Opset 22 adds bfloat16.
  reg.kernel<GlobalPool<Reduce::Mean>>("", "GlobalAveragePool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
  reg.kernel<GlobalPool<Reduce::Max>>("", "GlobalMaxPool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
  reg.kernel<GlobalPool<Reduce::Lp>>("", "GlobalLpPool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
