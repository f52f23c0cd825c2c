// ArgMax and ArgMin: int64 indices along one axis (keepdims, select_last_index).
#include "argext_f32.hpp"
#include "reduce_common.hpp"

namespace singa {
namespace ops {
namespace reduce {
namespace {

// Whether v replaces the current best. NaN counts as the extreme value, as in
// numpy, so the first NaN wins (the last one with select_last_index).
template <bool IsMax, typename C> inline bool better(C v, C best, bool last) {
  if (best != best) return last && v != v;
  if (v != v) return true;
  if (IsMax) return last ? v >= best : v > best;
  return last ? v <= best : v < best;
}

#ifdef SINGA_AVX512_BEGIN
// float32 with AVX-512 (argext_f32.hpp): whole rows when the axis is the
// innermost, else blocks of the inner run with per-lane best values and
// int32 indices (the axis length is checked to fit).
template <bool IsMax, bool Last>
void run_f32(const sdk::Context& ctx, const AxisSplit& s, const float* x, int64_t* y) {
  if (s.inner == 1) {
    ctx.parallel_for(s.outer, grain_for(s.n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = arg_extreme_row_f32<IsMax>(x + o * s.n, s.n, Last);
    });
    return;
  }
  constexpr int64_t kMaxBlock = 2048;
  const int64_t kBlock = inner_block(s.outer, s.inner, kMaxBlock);
  const int64_t nblk = (s.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(s.outer * nblk, grain_for(s.n * std::min(s.inner, kBlock)), [&](int64_t b, int64_t e) {
    alignas(64) float best[kMaxBlock];
    alignas(64) int32_t idx[kMaxBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, s.inner - k0);
      const float* xs = x + o * s.n * s.inner + k0;
      std::copy(xs, xs + kn, best);
      std::fill(idx, idx + kn, 0);
      for (int64_t j = 1; j < s.n; ++j) arg_extreme_cols_f32<IsMax, Last>(best, idx, xs + j * s.inner, int32_t(j), kn);
      std::copy(idx, idx + kn, y + o * s.inner + k0);
    }
  });
}
#endif

template <bool IsMax, typename T>
void run(const sdk::Context& ctx, const AxisSplit& s, bool last, const T* x, int64_t* y) {
  using C = cmp_t<T>;
  constexpr int64_t kBlock = 64;
  if (s.outer == 0 || s.inner == 0) return;
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<T, float>::value) {
    if (vec::unary_avx512() && (s.inner == 1 || s.n <= INT32_MAX)) {
      if (last)
        run_f32<IsMax, true>(ctx, s, x, y);
      else
        run_f32<IsMax, false>(ctx, s, x, y);
      return;
    }
  }
#endif
  const int64_t nblk = (s.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(s.outer * nblk, grain_for(s.n * std::min(s.inner, kBlock)), [&](int64_t b, int64_t e) {
    C best[kBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, s.inner - k0);
      const T* xs = x + o * s.n * s.inner + k0;
      int64_t* out = y + o * s.inner + k0;
      for (int64_t k = 0; k < kn; ++k) {
        best[k] = widen<C>(xs[k]);
        out[k] = 0;
      }
      for (int64_t j = 1; j < s.n; ++j) {
        const T* row = xs + j * s.inner;
        for (int64_t k = 0; k < kn; ++k) {
          C v = widen<C>(row[k]);
          if (better<IsMax>(v, best[k], last)) {
            best[k] = v;
            out[k] = j;
          }
        }
      }
    }
  });
}

template <bool IsMax> class ArgExtreme {
 public:
  explicit ArgExtreme(const sdk::Node& node) {
    axis_ = node.attr_int("axis", 0);
    keepdims_ = node.attr_int("keepdims", 1) != 0;
    last_ = node.attr_int("select_last_index", 0) != 0;
    singa_value_info in = node.input_info(0);
    if (in.ndim >= 0) normalize_axis(axis_, in.ndim);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    const Shape shape = x.shape();
    const int64_t axis = normalize_axis(axis_, int64_t(shape.size()));
    if (shape[size_t(axis)] == 0) sdk::fail("cannot take the index of an extreme along an empty axis");
    AxisSplit s = split_at(shape, axis);
    Shape out_shape = shape;
    if (keepdims_)
      out_shape[size_t(axis)] = 1;
    else
      out_shape.erase(out_shape.begin() + axis);
    sdk::Tensor y = ctx.output(0, out_shape, SINGA_ONNX_INT64);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          run<IsMax, T>(ctx, s, last_, x.data<T>(), y.data<int64_t>());
        },
        kAllNumeric);
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true, last_ = false;
};

template <bool IsMax> void register_one(sdk::Registrar& reg, const char* op) {
  const uint64_t types = sdk::kFloatTypes | sdk::kIntTypes;
  reg.kernel<ArgExtreme<IsMax>>("", op, 1, 12, "cpu", {{"T", 0, types}});
  reg.kernel<ArgExtreme<IsMax>>("", op, 13, 17, "cpu", {{"T", 0, types | kBf16}});
}

}  // namespace

void register_argminmax(sdk::Registrar& reg) {
  register_one<true>(reg, "ArgMax");
  register_one<false>(reg, "ArgMin");
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
