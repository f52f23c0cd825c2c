// CumSum and CumProd (opset 26): running sums / products along the axis given
// by input 1 (exclusive, reverse).
#include "cumsum_f32.hpp"
#include "reduce_common.hpp"

namespace singa {
namespace ops {
namespace reduce {
namespace {

// Folds v into a running sum or product. Integers wrap (two's complement, done
// unsigned so that overflow is defined) as in ONNX's reference.
template <bool Prod, typename A> inline void step(A& acc, A v) {
  if constexpr (std::is_integral<A>::value) {
    using U = std::make_unsigned_t<A>;
    acc = A(Prod ? U(U(acc) * U(v)) : U(U(acc) + U(v)));
  } else {
    acc = Prod ? acc * v : acc + v;
  }
}

#ifdef SINGA_AVX512_BEGIN
// float32 CumSum over a strided axis: blocks of the inner run (whole rows
// where there are enough of them, inner_block()), one row of running sums at
// a time (cumsum_f32.hpp).
template <bool Exclusive>
void run_sum_f32(const sdk::Context& ctx, const AxisSplit& s, bool reverse, const float* x, float* y) {
  constexpr int64_t kMaxBlock = 4096;
  const int64_t kBlock = inner_block(s.outer, s.inner, kMaxBlock);
  const int64_t nblk = (s.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(s.outer * nblk, grain_for(s.n * std::min(s.inner, kBlock)), [&](int64_t b, int64_t e) {
    alignas(64) float acc[kMaxBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, s.inner - k0);
      const int64_t base = o * s.n * s.inner + k0;
      if (!Exclusive) {
        // Each row is the previous output row plus the input row.
        const int64_t first = base + (reverse ? s.n - 1 : 0) * s.inner;
        if (x != y) std::copy(x + first, x + first + kn, y + first);
        for (int64_t t = 1; t < s.n; ++t) {
          const int64_t off = base + (reverse ? s.n - 1 - t : t) * s.inner;
          cumsum_next_row_f32(y + off + (reverse ? s.inner : -s.inner), x + off, y + off, kn);
        }
        continue;
      }
      std::fill(acc, acc + kn, 0.f);
      for (int64_t t = 0; t < s.n; ++t) {
        const int64_t off = base + (reverse ? s.n - 1 - t : t) * s.inner;
        cumsum_row_f32<Exclusive>(acc, x + off, y + off, kn);
      }
    }
  });
}
#endif

// Each element is read before its output is written, so y may alias x.
// float32 sums run in float32 (as ONNX's reference and ONNX Runtime do); the
// other float types in double, rounded at each output.
template <bool Prod, typename T>
void run(const sdk::Context& ctx, const AxisSplit& s, bool exclusive, bool reverse, const T* x, T* y) {
  using A = std::conditional_t<std::is_same<T, float>::value, float, wide_t<T>>;
  constexpr int64_t kBlock = 64;
  if (s.outer == 0 || s.n == 0 || s.inner == 0) return;
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<T, float>::value && !Prod) {
    if (s.inner > 1 && vec::unary_avx512()) {
      if (exclusive)
        run_sum_f32<true>(ctx, s, reverse, x, y);
      else
        run_sum_f32<false>(ctx, s, reverse, x, y);
      return;
    }
  }
#endif
  const int64_t nblk = (s.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(s.outer * nblk, grain_for(s.n * std::min(s.inner, kBlock)), [&](int64_t b, int64_t e) {
    A acc[kBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, s.inner - k0);
      const int64_t base = o * s.n * s.inner + k0;
      for (int64_t k = 0; k < kn; ++k) acc[k] = Prod ? A(1) : A(0);
      for (int64_t t = 0; t < s.n; ++t) {
        const int64_t j = reverse ? s.n - 1 - t : t;
        const T* xr = x + base + j * s.inner;
        T* yr = y + base + j * s.inner;
        for (int64_t k = 0; k < kn; ++k) {
          A v = widen<A>(xr[k]);
          if (exclusive) {
            yr[k] = narrow<T>(acc[k]);
            step<Prod>(acc[k], v);
          } else {
            step<Prod>(acc[k], v);
            yr[k] = narrow<T>(acc[k]);
          }
        }
      }
    }
  });
}

template <bool Prod> class Cumulative {
 public:
  explicit Cumulative(const sdk::Node& node) {
    exclusive_ = node.attr_int("exclusive", 0) != 0;
    reverse_ = node.attr_int("reverse", 0) != 0;
    if (node.num_inputs() < 2 || !node.has_input(1)) sdk::fail("input 'axis' is required");
    sdk::Tensor c = node.constant(1);
    if (c.present()) {
      axis_ = read_axis(c);
      axis_known_ = true;
      singa_value_info in = node.input_info(0);
      if (in.ndim >= 0) normalize_axis(axis_, in.ndim);
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    if (!axis_known_ && !ctx.has_input(1)) sdk::fail("input 'axis' is missing");
    const int64_t raw = axis_known_ ? axis_ : read_axis(ctx.input(1));
    const Shape shape = x.shape();
    AxisSplit s = split_at(shape, normalize_axis(raw, int64_t(shape.size())));
    sdk::Tensor y = ctx.output(0, shape, x.dl_dtype());
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          run<Prod, T>(ctx, s, exclusive_, reverse_, x.data<T>(), y.data<T>());
        },
        kBaseReduceTypes | kBf16);
  }

 private:
  int64_t read_axis(const sdk::Tensor& a) const {
    if (a.dtype() != SINGA_ONNX_INT32 && a.dtype() != SINGA_ONNX_INT64)
      sdk::fail(std::string("input 'axis' must be int32 or int64, got ") + sdk::dtype_name(a.dtype()));
    if (a.numel() != 1) sdk::fail("input 'axis' must hold one value, got " + std::to_string(a.numel()));
    return a.int_at(0);
  }

  bool exclusive_ = false, reverse_ = false, axis_known_ = false;
  int64_t axis_ = 0;
};

}  // namespace

void register_cumsum(sdk::Registrar& reg) {
  using CumSum = Cumulative<false>;
  const uint64_t v11 = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE) | sdk::bit(SINGA_ONNX_INT32) |
                       sdk::bit(SINGA_ONNX_INT64) | sdk::bit(SINGA_ONNX_UINT32) | sdk::bit(SINGA_ONNX_UINT64);
  const uint64_t v14 = v11 | sdk::bit(SINGA_ONNX_FLOAT16) | kBf16;
  const uint64_t axis_types = sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);
  reg.kernel<CumSum>("", "CumSum", 11, 13, "cpu", {{"T", 0, v11}, {"T2", 1, axis_types}}, SINGA_KERNEL_MAY_INPLACE,
                     uint64_t(1) << 1);
  reg.kernel<CumSum>("", "CumSum", 14, SINGA_VERSION_OPEN, "cpu", {{"T", 0, v14}, {"T2", 1, axis_types}}, SINGA_KERNEL_MAY_INPLACE,
                     uint64_t(1) << 1);
  reg.kernel<Cumulative<true>>("", "CumProd", 26, SINGA_VERSION_OPEN, "cpu", {{"T", 0, v14}, {"T2", 1, axis_types}},
                               SINGA_KERNEL_MAY_INPLACE, uint64_t(1) << 1);
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
