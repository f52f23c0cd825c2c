// Softmax, LogSoftmax and Hardmax.
//
// Opsets 1-12 flatten the input to 2-D at `axis` (default 1) and normalise
// each row; opset 13 normalises along the one axis `axis` (default -1). Both
// are the same walk over [outer, n, inner] with inner == 1 for the 2-D form.
// The row maximum is subtracted before exp so that large inputs cannot overflow.
#include "argext_f32.hpp"
#include "fast_exp.hpp"
#include "reduce_common.hpp"
#include "softmax_f32.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <limits>

namespace singa {
namespace ops {
namespace reduce {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

// float math for float, half and bfloat16; double for double.
template <typename T> using math_t = std::conditional_t<std::is_same<T, double>::value, double, float>;

constexpr int kLanes = 16;  // independent accumulators, so the row loops vectorise (one AVX-512 register)
// exp(x - max) is summed in float lanes over blocks of this many elements, and
// the block sums in double: the inner loop stays one register wide (a double
// accumulator halved it and added conversions) while a long row keeps the
// accuracy of a double sum.
constexpr int64_t kSumBlock = 256;

// Index of the first maximum; a NaN counts as the maximum, as in numpy's argmax.
template <typename C> int64_t first_argmax(const C* x, int64_t n, int64_t stride) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<C, float>::value) {
    if (stride == 1 && vec::unary_avx512()) return arg_extreme_row_f32<true>(x, n, false);
  }
#endif
  int64_t arg = 0;
  C best = x[0];
  for (int64_t j = 1; j < n; ++j) {
    const C v = x[j * stride];
    if (v > best || (v != v && best == best)) {
      best = v;
      arg = j;
    }
  }
  return arg;
}

// Softmax or LogSoftmax of one contiguous row in the math type. InPlace
// (x == y) says so to the compiler: otherwise its overlap check fails on
// equal pointers and the loops fall back to scalar code.
// A NaN is skipped by the maximum but still makes every output NaN, as the
// reference's x - max(x) does. Cloned for AVX-512/AVX2 (the build targets
// plain x86-64): BERT's attention softmax ran 4 floats at a time before.
template <Kind K, bool InPlace, typename C> SINGA_VEC_CLONES void softmax_row_impl(const C* x, C* y, int64_t n) {
  if constexpr (InPlace) x = y;
  C lane_max[kLanes];
  for (int l = 0; l < kLanes; ++l) lane_max[l] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane_max[l] = x[i + l] > lane_max[l] ? x[i + l] : lane_max[l];
  C mx = lane_max[0];
  for (int l = 1; l < kLanes; ++l) mx = lane_max[l] > mx ? lane_max[l] : mx;
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;

  double sum = 0;
  i = 0;
  while (i + kLanes <= n) {
    C lane_sum[kLanes] = {};
    const int64_t end = std::min(n, i + kSumBlock) / kLanes * kLanes;
    for (; i < end; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const C e = fast_exp(x[i + l] - mx);
        if (K == Kind::kSoftmax) y[i + l] = e;
        lane_sum[l] += e;
      }
    C block = 0;
    for (int l = 0; l < kLanes; ++l) block += lane_sum[l];
    sum += double(block);
  }
  for (; i < n; ++i) {
    const C e = fast_exp(x[i] - mx);
    if (K == Kind::kSoftmax) y[i] = e;
    sum += e;
  }

  if (K == Kind::kSoftmax) {
    // Below the least normal value: 0, as softmax_f32.hpp says why.
    const C inv = C(1.0 / sum), least = std::numeric_limits<C>::min();
    for (i = 0; i < n; ++i) {
      const C v = y[i] * inv;
      y[i] = v < least ? C(0) : v;
    }
  } else {
    // (x - max) first: exact for the values near the maximum that matter most.
    const C log_sum = C(std::log(sum));
    for (i = 0; i < n; ++i) y[i] = (x[i] - mx) - log_sum;
  }
}

template <Kind K, typename C> void softmax_row(const C* x, C* y, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<C, float>::value) {
    if (n > 0 && vec::unary_avx512()) {
      softmax_row_avx512<K == Kind::kLogSoftmax>(x, y, n);
      return;
    }
  }
#endif
  if (x == y)
    softmax_row_impl<K, true>(x, y, n);
  else
    softmax_row_impl<K, false>(x, y, n);
}

// inner == 1: every row is contiguous. half/bfloat16 rows go through a float
// buffer so the math runs at float precision and rounds once.
template <Kind K, typename T> void run_rows(const sdk::Context& ctx, const AxisSplit& s, const T* x, T* y) {
  using C = math_t<T>;
  ctx.parallel_for(s.outer, grain_for(s.n * 8), [&](int64_t b, int64_t e) {
    std::vector<C> buf(std::is_same<T, C>::value ? 0 : size_t(s.n));
    for (int64_t o = b; o < e; ++o) {
      const T* xr = x + o * s.n;
      T* yr = y + o * s.n;
      if constexpr (K == Kind::kHardmax) {
        int64_t arg;
        if constexpr (std::is_same<T, C>::value) {
          arg = first_argmax(xr, s.n, 1);
        } else {
          for (int64_t j = 0; j < s.n; ++j) buf[size_t(j)] = widen<C>(xr[j]);
          arg = first_argmax(buf.data(), s.n, 1);
        }
        std::fill(yr, yr + s.n, narrow<T>(C(0)));
        yr[arg] = narrow<T>(C(1));
      } else if constexpr (std::is_same<T, C>::value) {
        softmax_row<K>(xr, yr, s.n);
      } else {
        for (int64_t j = 0; j < s.n; ++j) buf[size_t(j)] = widen<C>(xr[j]);
        softmax_row<K>(buf.data(), buf.data(), s.n);
        for (int64_t j = 0; j < s.n; ++j) yr[j] = narrow<T>(buf[size_t(j)]);
      }
    }
  });
}

// inner > 1: the axis is strided. Each task takes a block of up to kBlock
// neighbouring lanes of one [n, inner] slab, so every pass reads rows of
// contiguous memory. Each pass reads x before writing y, so y may alias x.
template <Kind K, typename T> void run_blocked(const sdk::Context& ctx, const AxisSplit& s, const T* x, T* y) {
  using C = math_t<T>;
  constexpr int64_t kBlock = 64;
  const int64_t nblk = (s.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(s.outer * nblk, grain_for(s.n * std::min(s.inner, kBlock) * 8), [&](int64_t b, int64_t e) {
    C mx[kBlock];
    double sum[kBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, s.inner - k0);
      const T* xs = x + o * s.n * s.inner + k0;
      T* ys = y + o * s.n * s.inner + k0;
      if constexpr (K == Kind::kHardmax) {
        for (int64_t k = 0; k < kn; ++k) {
          int64_t arg;
          if constexpr (std::is_same<T, C>::value) {
            arg = first_argmax(xs + k, s.n, s.inner);
          } else {
            C best = widen<C>(xs[k]);
            arg = 0;
            for (int64_t j = 1; j < s.n; ++j) {
              const C v = widen<C>(xs[j * s.inner + k]);
              if (v > best || (v != v && best == best)) {
                best = v;
                arg = j;
              }
            }
          }
          for (int64_t j = 0; j < s.n; ++j) ys[j * s.inner + k] = narrow<T>(C(j == arg ? 1 : 0));
        }
        continue;
      }
      for (int64_t k = 0; k < kn; ++k) mx[k] = widen<C>(xs[k]);
      for (int64_t j = 1; j < s.n; ++j) {
        const T* row = xs + j * s.inner;
        for (int64_t k = 0; k < kn; ++k) {
          const C v = widen<C>(row[k]);
          mx[k] = v > mx[k] ? v : mx[k];
        }
      }
      for (int64_t k = 0; k < kn; ++k) sum[k] = 0.0;
      for (int64_t j = 0; j < s.n; ++j) {
        const T* row = xs + j * s.inner;
        T* out = ys + j * s.inner;
        for (int64_t k = 0; k < kn; ++k) {
          const C ev = fast_exp(widen<C>(row[k]) - mx[k]);
          sum[k] += ev;
          // Where T is the math type, keep exp(x - max) to rescale below;
          // narrower types recompute it rather than round it twice.
          if constexpr (K == Kind::kSoftmax && std::is_same<T, C>::value) out[k] = ev;
        }
      }
      for (int64_t k = 0; k < kn; ++k) sum[k] = K == Kind::kSoftmax ? 1.0 / sum[k] : std::log(sum[k]);
      for (int64_t j = 0; j < s.n; ++j) {
        const T* row = xs + j * s.inner;
        T* out = ys + j * s.inner;
        for (int64_t k = 0; k < kn; ++k) {
          if constexpr (K == Kind::kLogSoftmax)
            out[k] = narrow<T>((widen<C>(row[k]) - mx[k]) - C(sum[k]));
          else if constexpr (std::is_same<T, C>::value)
            out[k] = out[k] * C(sum[k]);
          else
            out[k] = narrow<T>(fast_exp(widen<C>(row[k]) - mx[k]) * C(sum[k]));
        }
      }
    }
  });
}

template <Kind K, typename T> void run(const sdk::Context& ctx, const AxisSplit& s, const T* x, T* y) {
  if (s.outer == 0 || s.n == 0 || s.inner == 0) return;
  if (s.inner == 1)
    run_rows<K>(ctx, s, x, y);
  else
    run_blocked<K>(ctx, s, x, y);
}

template <Kind K, bool Coerce2D> class SoftmaxLike {
 public:
  explicit SoftmaxLike(const sdk::Node& node) {
    axis_ = node.attr_int("axis", Coerce2D ? 1 : -1);
    singa_value_info in = node.input_info(0);
    if (in.ndim >= 0) split(Shape(size_t(in.ndim), 1));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    const Shape shape = x.shape();
    AxisSplit s = split(shape);
    sdk::Tensor y = ctx.output(0, shape, x.dl_dtype());
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          run<K, T>(ctx, s, x.data<T>(), y.data<T>());
        },
        sdk::kFloatTypes | kBf16);
  }

 private:
  AxisSplit split(const Shape& shape) const {
    const int64_t rank = int64_t(shape.size());
    if (!Coerce2D) return split_at(shape, normalize_axis(axis_, rank));
    // The 2-D view [prod(dims[:axis]), prod(dims[axis:])]; axis == rank is a
    // valid (if degenerate) split there.
    int64_t a = axis_ < 0 ? axis_ + rank : axis_;
    if (a < 0 || a > rank)
      sdk::fail("axis " + std::to_string(axis_) + " is out of range for an input of rank " + std::to_string(rank));
    AxisSplit r;
    r.n = 1;
    for (int64_t i = 0; i < rank; ++i) (i < a ? r.outer : r.n) *= shape[size_t(i)];
    return r;
  }

  int64_t axis_ = -1;
};

template <Kind K> void register_kind(sdk::Registrar& reg, const char* op) {
  reg.kernel<SoftmaxLike<K, true>>("", op, 1, 12, "cpu", {{"T", 0, sdk::kFloatTypes}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<SoftmaxLike<K, false>>("", op, 13, 17, "cpu", {{"T", 0, sdk::kFloatTypes | kBf16}},
                                    SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace

void register_softmax(sdk::Registrar& reg) {
  register_kind<Kind::kSoftmax>(reg, "Softmax");
  register_kind<Kind::kLogSoftmax>(reg, "LogSoftmax");
  register_kind<Kind::kHardmax>(reg, "Hardmax");
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
