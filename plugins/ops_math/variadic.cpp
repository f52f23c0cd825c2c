// variadic.cpp - Sum, Mean, Max, Min over any number of broadcast inputs.
#include "binary_common.hpp"
#include "binary_half.hpp"
#include "registry.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace ops {
namespace math {
namespace {

struct SumFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      using W = wide_unsigned_t<C>;
      return C(W(a) + W(b));
    } else {
      return a + b;
    }
  }
};
// NaN wins in either position, as numpy's maximum/minimum.
struct MaxFn {
  template <typename C>
  C operator()(C a, C b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct MinFn {
  template <typename C>
  C operator()(C a, C b) const {
    return (a < b || a != a) ? a : b;
  }
};

#ifdef SINGA_HAVE_F16C_PATH
struct DivCountFn {
  float operator()(float a, float b) const { return a / b; }
};

// Sum / Mean of n >= 2 half or bfloat16 inputs; false (nothing written) when
// the count of a Mean is not exact in T, for the scalar path.
template <bool kMean, typename T>
bool half_sum(sdk::Context& ctx, size_t n, const sdk::Tensor& first, sdk::Tensor& out) {
  const T count = T(float(n));
  if (kMean && float(count) != float(n)) return false;
  bool same = true;
  for (size_t i = 0; i < n; ++i) same = same && ctx.input(i).numel() == out.numel();
  if (same) {
    // Equal shapes: the whole fold per piece of 4096 elements, so the partial
    // sum stays in cache instead of a pass over memory per input.
    std::vector<const T*> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(ctx.input(i).data<T>());
    T* y = out.data<T>();
    ctx.parallel_for(out.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p += 4096) {
        const int64_t m = std::min<int64_t>(4096, e - p);
        half_binary::run<half_binary::Arith::kAdd, T, SumFn>(xs[0] + p, 1, xs[1] + p, 1, y + p, m);
        for (size_t i = 2; i < n; ++i)
          half_binary::run<half_binary::Arith::kAdd, T, SumFn>(y + p, 1, xs[i] + p, 1, y + p, m);
        if constexpr (kMean) half_binary::run<half_binary::Arith::kDiv, T, DivCountFn>(y + p, 1, &count, 0, y + p, m);
      }
    });
    return true;
  }
  half_binary_broadcast<half_binary::Arith::kAdd, T, SumFn>(ctx, first, ctx.input(1), out);
  for (size_t i = 2; i < n; ++i) half_binary_broadcast<half_binary::Arith::kAdd, T, SumFn>(ctx, out, ctx.input(i), out);
  if constexpr (kMean) {
    T* p = out.data<T>();
    ctx.parallel_for(out.numel(), 16384, [&](int64_t b, int64_t e) {
      half_binary::run<half_binary::Arith::kDiv, T, DivCountFn>(p + b, 1, &count, 0, p + b, e - b);
    });
  }
  return true;
}
#endif

// Folds the inputs pairwise into the output: out = f(in0, in1), then
// out = f(out, ink). Reading and writing the same index of `out` is safe.
template <typename Fn, uint64_t kTypes, bool kMean>
class VariadicKernel {
 public:
  explicit VariadicKernel(const sdk::Node& node) {}
  void compute(sdk::Context& ctx) const {
    size_t n = ctx.num_inputs();
    sdk::check(n >= 1, "needs at least one input");
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i) {
      SINGA_CHECK(ctx.has_input(i), "input " + std::to_string(i) + " is missing");
      if (i) same_dtype(ctx.input(0), ctx.input(i), "inputs 0 and " + std::to_string(i));
      shapes.push_back(ctx.input(i).shape());
    }
    Shape out_shape = broadcast_shapes(shapes);
    sdk::Tensor first = ctx.input(0);
    sdk::Tensor out = ctx.output(0, out_shape, first.dtype());
    sdk::dispatch(
        first.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(kTypes)) {
            if (n == 1) {
              broadcast_copy<T, T>(ctx, first, out.data<T>(), out_shape);
              return;
            }
#ifdef SINGA_HAVE_F16C_PATH
            // float16 / bfloat16 sums in 8 lanes (binary_half.hpp): each fold
            // rounds to T as the scalar one does, so the bits agree.
            if constexpr (std::is_same<Fn, SumFn>::value &&
                          (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value)) {
              if (half_binary_supported() && half_sum<kMean, T>(ctx, n, first, out)) return;
            }
#endif
            binary_broadcast<T, T, T>(ctx, first, ctx.input(1), out, Via<T, Fn>{});
            for (size_t i = 2; i < n; ++i) binary_broadcast<T, T, T>(ctx, out, ctx.input(i), out, Via<T, Fn>{});
            if constexpr (kMean) {
              using C = compute_t<T>;
              C count = C(n);
              unary_map<T, T>(ctx, out, out, 16384, [count](T v) { return T(C(v) / count); });
            }
          }
        },
        kTypes);
  }
};

}  // namespace

void register_variadic(sdk::Registrar& reg) {
  // Opsets before 8 required equal shapes; numpy broadcasting is a superset.
  using Sum = VariadicKernel<SumFn, kFloatLike, false>;
  using Mean = VariadicKernel<SumFn, kFloatLike, true>;
  using Max = VariadicKernel<MaxFn, kNumeric, false>;
  using Min = VariadicKernel<MinFn, kNumeric, false>;
  reg.kernel<Sum>("", "Sum", 1, 17, "cpu", {{"T", 0, kFloatLike}});
  reg.kernel<Mean>("", "Mean", 1, 17, "cpu", {{"T", 0, kFloatLike}});
  reg.kernel<Max>("", "Max", 1, 17, "cpu", {{"T", 0, kNumeric}});
  reg.kernel<Min>("", "Min", 1, 17, "cpu", {{"T", 0, kNumeric}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
