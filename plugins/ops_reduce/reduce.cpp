// The Reduce* family: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
#include "logsumexp_f32.hpp"
#include "minmax_f32.hpp"
#include "minmax_f64.hpp"
#include "reduce_plan.hpp"
#include "sum_f32.hpp"

namespace singa {
namespace ops {
namespace reduce {
namespace {

template <typename A> A absval(A x) {
  if constexpr (std::is_unsigned<A>::value)
    return x;
  else
    return x < A(0) ? -x : x;
}

template <typename A> A lowest() {
  return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
}
template <typename A> A highest() {
  return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
}

// Each op folds elements into an accumulator of type acc<T>: step(a, x, m)
// where m is the maximum for ops that set needs_max (LogSumExp); merge(a, b)
// joins two partial accumulators; finish(a, m, count) gives the output value.
struct SumOp {
  template <typename T> using acc = wide_t<T>;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& a, A x, A) { a += x; }
  template <typename A> static void merge(A& a, A b) { a += b; }
  template <typename A> static A finish(A a, A, int64_t) { return a; }
};

struct MeanOp : SumOp {
  template <typename A> static A finish(A a, A, int64_t n) {
    if constexpr (std::is_integral<A>::value)
      return n == 0 ? A(0) : A(a / A(n));
    else
      return a / A(n);  // NaN for an empty reduction, like numpy
  }
};

struct SumSquareOp : SumOp {
  template <typename A> static void step(A& a, A x, A) { a += x * x; }
};

struct L1Op : SumOp {
  template <typename A> static void step(A& a, A x, A) { a += absval(x); }
};

struct L2Op {
  template <typename T> using acc = double;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& a, A x, A) { a += x * x; }
  template <typename A> static void merge(A& a, A b) { a += b; }
  template <typename A> static A finish(A a, A, int64_t) { return std::sqrt(a); }
};

struct LogSumOp {
  template <typename T> using acc = double;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& a, A x, A) { a += x; }
  template <typename A> static void merge(A& a, A b) { a += b; }
  template <typename A> static A finish(A a, A, int64_t) { return std::log(a); }
};

// log(sum(exp(x))) = m + log(sum(exp(x - m))) keeps exp from overflowing.
struct LogSumExpOp {
  template <typename T> using acc = double;
  static constexpr bool needs_max = true;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& a, A x, A m) { a += std::exp(x - m); }
  template <typename A> static void merge(A& a, A b) { a += b; }
  template <typename A> static A finish(A a, A m, int64_t) { return std::isfinite(m) ? m + std::log(a) : m; }
};

struct ProdOp {
  template <typename T> using acc = wide_t<T>;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return A(1); }
  template <typename A> static void step(A& a, A x, A) { a *= x; }
  template <typename A> static void merge(A& a, A b) { a *= b; }
  template <typename A> static A finish(A a, A, int64_t) { return a; }
};

// NaN wins, as in numpy: once the accumulator is NaN no comparison replaces it.
struct MaxOp {
  template <typename T> using acc = wide_t<T>;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return lowest<A>(); }
  template <typename A> static void step(A& a, A x, A) { a = (x > a || x != x) ? x : a; }
  template <typename A> static void merge(A& a, A b) { step(a, b, b); }
  template <typename A> static A finish(A a, A, int64_t) { return a; }
};

struct MinOp {
  template <typename T> using acc = wide_t<T>;
  static constexpr bool needs_max = false;
  template <typename A> static A init() { return highest<A>(); }
  template <typename A> static void step(A& a, A x, A) { a = (x < a || x != x) ? x : a; }
  template <typename A> static void merge(A& a, A b) { step(a, b, b); }
  template <typename A> static A finish(A a, A, int64_t) { return a; }
};

// 1 for MaxOp, 2 for MinOp (the ops with an AVX-512 float32 path), else 0.
template <typename Op>
constexpr int kMinMax = std::is_same<Op, MaxOp>::value ? 1 : std::is_same<Op, MinOp>::value ? 2 : 0;

#ifdef SINGA_AVX512_BEGIN
// The sums with an AVX-512 float32 path (sum_f32.hpp): 0 for none, else the
// SumTerm + 1 of the element's contribution.
template <typename Op>
constexpr int kSumKind = std::is_same<Op, SumOp>::value || std::is_same<Op, MeanOp>::value ? 1 + int(SumTerm::kPlain)
                         : std::is_same<Op, SumSquareOp>::value || std::is_same<Op, L2Op>::value
                             ? 1 + int(SumTerm::kSquare)
                         : std::is_same<Op, L1Op>::value ? 1 + int(SumTerm::kAbs)
                                                         : 0;
template <typename Op> constexpr SumTerm kTermOf = SumTerm(kSumKind<Op> - 1);

// Ops and types that run on the float32 AVX-512 kernels: float32 directly,
// float16 converted to float32 a block at a time.
template <typename Op, typename T>
constexpr bool kVecF32 = (kSumKind<Op> != 0 || kMinMax<Op> != 0) &&
                         (std::is_same<T, float>::value || std::is_same<T, sdk::half>::value ||
                          std::is_same<T, HalfOfF32>::value);

// The float32 values of x[0..n): x itself, or its float16 values converted into buf.
inline const float* as_f32(const float* x, float*, int64_t) { return x; }
inline const float* as_f32(const sdk::half* x, float* buf, int64_t n) {
  half_to_f32_avx512(reinterpret_cast<const uint16_t*>(x), buf, n);
  return buf;
}
inline const float* as_f32(const HalfOfF32* x, float* buf, int64_t n) {
  f32_round_half_avx512(reinterpret_cast<const float*>(x), buf, n);
  return buf;
}

// Op over x[0..n) on the float32 kernels, in double (sums) or exactly (max/min).
template <typename Op, typename T> double fold_vec(const T* x, int64_t n) {
  if constexpr (std::is_same<T, float>::value) {
    if constexpr (kMinMax<Op> != 0)
      return minmax_fold_f32<kMinMax<Op> == 1>(x, n);
    else
      return sum_fold_f32<kTermOf<Op>>(x, n);
  } else {
    constexpr int64_t kChunk = 1024;
    alignas(64) float buf[kChunk];
    double a = Op::template init<double>();
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t c = std::min(kChunk, n - i);
      Op::merge(a, fold_vec<Op>(as_f32(x + i, buf, c), c));
    }
    return a;
  }
}
#endif

// Folds n elements (stride apart) into one accumulator. Contiguous runs use
// kLanes independent accumulators so the loop vectorises.
template <typename Op, typename A, typename T> A fold(const T* x, int64_t n, int64_t stride, A m) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (kVecF32<Op, T>) {
    if (stride == 1 && vec::unary_avx512()) return A(fold_vec<Op>(x, n));
  }
  if constexpr (std::is_same<T, double>::value && kMinMax<Op> != 0) {
    if (stride == 1 && vec::unary_avx512()) return A(minmax_fold_f64<kMinMax<Op> == 1>(x, n));
  }
  if constexpr (std::is_same<T, float>::value && std::is_same<Op, LogSumExpOp>::value) {
    if (stride == 1 && vec::unary_avx512()) return A(sum_exp_fold_f32(x, n, float(m)));
  }
#endif
  constexpr int kLanes = 8;
  A a = Op::template init<A>();
  int64_t i = 0;
  if (stride == 1 && n >= 2 * kLanes) {
    A lane[kLanes];
    for (int l = 0; l < kLanes; ++l) lane[l] = Op::template init<A>();
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) Op::step(lane[l], widen<A>(x[i + l]), m);
    for (int l = 0; l < kLanes; ++l) Op::merge(a, lane[l]);
  }
  for (; i < n; ++i) Op::step(a, widen<A>(x[i * stride]), m);
  return a;
}

// The whole input into one value: split into fixed chunks (so the result does
// not depend on the thread count) whose partial accumulators merge in order.
template <typename Op, typename T, typename TOut>
void reduce_all(const sdk::Context& ctx, int64_t count, const T* x, TOut* y) {
  using A = typename Op::template acc<T>;
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<A> part(size_t(std::max<int64_t>(chunks, 1)));
  auto pass = [&](auto op, A m) {
    using P = decltype(op);
    ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c)
        part[size_t(c)] = fold<P, A>(x + c * kChunk, std::min(kChunk, count - c * kChunk), 1, m);
    });
    A a = P::template init<A>();
    for (int64_t c = 0; c < chunks; ++c) P::merge(a, part[size_t(c)]);
    return a;
  };
  const A m = Op::needs_max ? pass(MaxOp{}, A(0)) : lowest<A>();
  y[0] = narrow<TOut>(Op::finish(pass(Op{}, m), m, count));
}

#ifdef SINGA_AVX512_BEGIN
// A reduction over rows of a kept inner run on the float32 kernels: each task
// takes a block of neighbouring outputs (whole rows where there are enough,
// inner_block()) and folds whole rows into them. Sums add rows in float32 and
// move the partial sums into double every kSumRowFlush rows (sum_f32.hpp says
// why); max/min are exact in float32.
template <typename Op, typename T, typename TOut>
void run_rows_vec(const sdk::Context& ctx, const ReducePlan& p, const T* x, TOut* y) {
  constexpr int64_t kMaxBlock = 2048;
  struct Scratch {
    alignas(64) float acc[kMaxBlock];
    alignas(64) float buf[kMaxBlock];  // a float16 row as float32
    double wide[kMaxBlock];
  };
  const int64_t kBlock = inner_block(p.outer, p.inner, kMaxBlock);
  const int64_t nblk = (p.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(p.outer * nblk, grain_for(p.count * std::min(p.inner, kBlock)), [&](int64_t b, int64_t e) {
    Scratch sc;
    float* acc = sc.acc;
    float* buf = sc.buf;
    double* wide = sc.wide;
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, p.inner - k0);
      std::fill(acc, acc + kn, float(Op::template init<double>()));
      if constexpr (kSumKind<Op> != 0) std::fill(wide, wide + kn, 0.0);
      int64_t rows = 0;
      p.visit_runs(p.outer_offset(o) + k0, [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t j = 0; j < n; ++j) {
          const float* row = as_f32(x + off + j * st, buf, kn);
          if constexpr (kSumKind<Op> != 0) {
            sum_row_f32<kTermOf<Op>>(acc, row, kn);
            if (++rows == kSumRowFlush) {
              sum_flush_f32(wide, acc, kn);
              rows = 0;
            }
          } else {
            minmax_row_f32<kMinMax<Op> == 1>(acc, row, kn);
          }
        }
      });
      TOut* out = y + o * p.inner + k0;
      if constexpr (kSumKind<Op> != 0) {
        sum_flush_f32(wide, acc, kn);
        for (int64_t k = 0; k < kn; ++k) out[k] = narrow<TOut>(Op::finish(wide[k], 0.0, p.count));
      } else {
        for (int64_t k = 0; k < kn; ++k) out[k] = narrow<TOut>(acc[k]);
      }
    }
  });
}
#endif

#ifdef SINGA_AVX512_BEGIN
// ReduceLogSumExp over rows of a kept inner run, float32: per block of
// outputs, the rows' maximum, then e^(x - max) summed as run_rows_vec sums
// (logsumexp_f32.hpp).
inline void run_logsumexp_rows_f32(const sdk::Context& ctx, const ReducePlan& p, const float* x, float* y) {
  constexpr int64_t kMaxBlock = 2048;
  struct Scratch {
    alignas(64) float mx[kMaxBlock];
    alignas(64) float acc[kMaxBlock];
    double wide[kMaxBlock];
  };
  const int64_t kBlock = inner_block(p.outer, p.inner, kMaxBlock);
  const int64_t nblk = (p.inner + kBlock - 1) / kBlock;
  ctx.parallel_for(p.outer * nblk, grain_for(p.count * std::min(p.inner, kBlock) * 8), [&](int64_t b, int64_t e) {
    Scratch sc;
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, p.inner - k0);
      const int64_t base = p.outer_offset(o) + k0;
      std::fill(sc.mx, sc.mx + kn, -std::numeric_limits<float>::infinity());
      std::fill(sc.acc, sc.acc + kn, 0.f);
      std::fill(sc.wide, sc.wide + kn, 0.0);
      p.visit_runs(base, [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t j = 0; j < n; ++j) minmax_row_f32<true>(sc.mx, x + off + j * st, kn);
      });
      int64_t rows = 0;
      p.visit_runs(base, [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t j = 0; j < n; ++j) {
          sum_exp_row_f32(sc.acc, x + off + j * st, sc.mx, kn);
          if (++rows == kSumRowFlush) {
            sum_flush_f32(sc.wide, sc.acc, kn);
            rows = 0;
          }
        }
      });
      sum_flush_f32(sc.wide, sc.acc, kn);
      float* out = y + o * p.inner + k0;
      for (int64_t k = 0; k < kn; ++k)
        out[k] = float(LogSumExpOp::finish(sc.wide[k], double(sc.mx[k]), p.count));
    }
  });
}
#endif

// T is the input's element type, TOut the output's (T but for HalfOfF32).
template <typename Op, typename T, typename TOut = T>
void run_reduce(const sdk::Context& ctx, const ReducePlan& p, const T* x, TOut* y) {
  using A = typename Op::template acc<T>;
  constexpr int64_t kBlock = 64;
  if (p.inner == 0 || p.outer == 0) return;
  if (p.inner == 1 && p.outer == 1 && p.red_dims.size() == 1 && p.red_strides[0] == 1) {
    reduce_all<Op>(ctx, p.count, x, y);
    return;
  }
  if (p.inner == 1) {
    // Each output folds whole runs of its reduced elements.
    ctx.parallel_for(p.outer, grain_for(p.count), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const int64_t base = p.outer_offset(o);
        A m = lowest<A>();
        if constexpr (Op::needs_max)
          p.visit_runs(
              base, [&](int64_t off, int64_t n, int64_t st) { MaxOp::merge(m, fold<MaxOp, A>(x + off, n, st, A(0))); });
        A a = Op::template init<A>();
        p.visit_runs(base, [&](int64_t off, int64_t n, int64_t st) { Op::merge(a, fold<Op, A>(x + off, n, st, m)); });
        y[o] = narrow<TOut>(Op::finish(a, m, p.count));
      }
    });
    return;
  }
  // A kept inner run: each task accumulates up to kBlock neighbouring outputs
  // at once, reading rows of contiguous memory.
  const int64_t nblk = (p.inner + kBlock - 1) / kBlock;
#ifdef SINGA_AVX512_BEGIN
  if constexpr (kVecF32<Op, T>) {
    if (vec::unary_avx512()) {
      run_rows_vec<Op>(ctx, p, x, y);
      return;
    }
  }
  if constexpr (std::is_same<T, float>::value && std::is_same<Op, LogSumExpOp>::value) {
    if (vec::unary_avx512()) {
      run_logsumexp_rows_f32(ctx, p, x, y);
      return;
    }
  }
  if constexpr (std::is_same<T, double>::value && kMinMax<Op> != 0) {
    if (vec::unary_avx512()) {
      ctx.parallel_for(p.outer * nblk, grain_for(p.count * std::min(p.inner, kBlock)), [&](int64_t b, int64_t e) {
        alignas(64) double acc[kBlock];
        for (int64_t w = b; w < e; ++w) {
          const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, p.inner - k0);
          std::fill(acc, acc + kn, Op::template init<double>());
          p.visit_runs(p.outer_offset(o) + k0, [&](int64_t off, int64_t n, int64_t st) {
            for (int64_t j = 0; j < n; ++j) minmax_row_f64<kMinMax<Op> == 1>(acc, x + off + j * st, kn);
          });
          std::copy(acc, acc + kn, y + o * p.inner + k0);
        }
      });
      return;
    }
  }
#endif
  ctx.parallel_for(p.outer * nblk, grain_for(p.count * std::min(p.inner, kBlock)), [&](int64_t b, int64_t e) {
    A acc[kBlock], mx[kBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nblk, k0 = (w % nblk) * kBlock, kn = std::min(kBlock, p.inner - k0);
      const int64_t base = p.outer_offset(o) + k0;
      for (int64_t k = 0; k < kn; ++k) mx[k] = lowest<A>();
      if constexpr (Op::needs_max) {
        p.visit_runs(base, [&](int64_t off, int64_t n, int64_t st) {
          for (int64_t j = 0; j < n; ++j) {
            const T* row = x + off + j * st;
            for (int64_t k = 0; k < kn; ++k) MaxOp::step(mx[k], widen<A>(row[k]), A(0));
          }
        });
      }
      for (int64_t k = 0; k < kn; ++k) acc[k] = Op::template init<A>();
      p.visit_runs(base, [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t j = 0; j < n; ++j) {
          const T* row = x + off + j * st;
          for (int64_t k = 0; k < kn; ++k) Op::step(acc[k], widen<A>(row[k]), mx[k]);
        }
      });
      TOut* out = y + o * p.inner + k0;
      for (int64_t k = 0; k < kn; ++k) out[k] = narrow<TOut>(Op::finish(acc[k], mx[k], p.count));
    }
  });
}

// AxesFromInput: ReduceSum from opset 13 reads `axes` from input 1 and knows
// noop_with_empty_axes; the other forms read the `axes` attribute.
// OfHalf: the "ai.singa" CastHalfReduce* form: a float32 input whose elements
// count as their float16 rounding, a float16 output (Reduce*(Cast(X, to=
// float16)) without the half tensor; the attribute form's axes).
template <typename Op, bool AxesFromInput, bool OfHalf = false> class Reduce {
 public:
  explicit Reduce(const sdk::Node& node) {
    keepdims_ = node.attr_int("keepdims", 1) != 0;
    if (AxesFromInput) {
      noop_ = node.attr_int("noop_with_empty_axes", 0) != 0;
      sdk::Tensor c = node.num_inputs() > 1 ? node.constant(1) : sdk::Tensor();
      if (c.present()) {
        check_axes_tensor(c);
        axes_ = c.to_int_vector();
        axes_known_ = true;
      }
    } else {
      axes_ = node.attr_ints("axes");
      axes_known_ = true;
    }
    singa_value_info in = node.input_info(0);
    if (axes_known_ && in.ndim >= 0) axes_mask(axes_, in.ndim);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    std::vector<int64_t> axes = axes_;
    if (!axes_known_ && ctx.has_input(1)) {
      sdk::Tensor a = ctx.input(1);
      check_axes_tensor(a);
      axes = a.to_int_vector();
    }
    const Shape shape = x.shape();
    std::vector<bool> mask =
        (noop_ && axes.empty()) ? std::vector<bool>(shape.size(), false) : axes_mask(axes, int64_t(shape.size()));
    ReducePlan plan = make_plan(shape, mask, keepdims_);
    if constexpr (OfHalf) {
      if (x.dtype() != SINGA_ONNX_FLOAT)
        sdk::fail(std::string("input must be float32, got ") + sdk::dtype_name(x.dtype()));
      sdk::Tensor y = ctx.output(0, plan.out_shape, SINGA_ONNX_FLOAT16);
      run_reduce<Op>(ctx, plan, reinterpret_cast<const HalfOfF32*>(x.data<float>()), y.data<sdk::half>());
      return;
    }
    sdk::Tensor y = ctx.output(0, plan.out_shape, x.dl_dtype());
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (!std::is_same<T, bool>::value || kBoolOk)
            run_reduce<Op, T>(ctx, plan, x.data<T>(), y.data<T>());
        },
        kAllNumeric | (kBoolOk ? kBool : 0));
  }

 private:
  // Only ReduceMax and ReduceMin accept bool (opset 20: any / all).
  static constexpr bool kBoolOk = std::is_same<Op, MaxOp>::value || std::is_same<Op, MinOp>::value;

  void check_axes_tensor(const sdk::Tensor& a) const {
    if (a.dtype() != SINGA_ONNX_INT64)
      sdk::fail(std::string("input 'axes' must be int64, got ") + sdk::dtype_name(a.dtype()));
    if (a.ndim() > 1) sdk::fail("input 'axes' must be 1-D, got rank " + std::to_string(a.ndim()));
  }

  bool keepdims_ = true, noop_ = false, axes_known_ = false;
  std::vector<int64_t> axes_;
};

// Opset 18 moved `axes` from an attribute to the optional input 1 (read on
// the host) and added noop_with_empty_axes for every Reduce* but ReduceSum
// (which did so at 13); ReduceMax and ReduceMin take bool from opset 20.
template <typename Op> void register_attr_reduce(sdk::Registrar& reg, const char* op, bool int8_from_12) {
  using K = Reduce<Op, false>;
  using K18 = Reduce<Op, true>;
  const uint64_t axes_on_host = uint64_t(1) << 1;
  if (int8_from_12) {
    reg.kernel<K>("", op, 1, 11, "cpu", {{"T", 0, kBaseReduceTypes}});
    reg.kernel<K>("", op, 12, 12, "cpu", {{"T", 0, kBaseReduceTypes | kInt8Pair}});
    reg.kernel<K>("", op, 13, 17, "cpu", {{"T", 0, kBaseReduceTypes | kInt8Pair | kBf16}});
    reg.kernel<K18>("", op, 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kBaseReduceTypes | kInt8Pair | kBf16}}, 0, axes_on_host);
    reg.kernel<K18>("", op, 20, SINGA_VERSION_OPEN, "cpu",
                    {{"T", 0, kBaseReduceTypes | kInt8Pair | kBf16 | kBool}}, 0, axes_on_host);
  } else {
    reg.kernel<K>("", op, 1, 12, "cpu", {{"T", 0, kBaseReduceTypes}});
    reg.kernel<K>("", op, 13, 17, "cpu", {{"T", 0, kBaseReduceTypes | kBf16}});
    reg.kernel<K18>("", op, 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kBaseReduceTypes | kBf16}}, 0, axes_on_host);
  }
}

}  // namespace

void register_reductions(sdk::Registrar& reg) {
  reg.kernel<Reduce<SumOp, false>>("", "ReduceSum", 1, 12, "cpu", {{"T", 0, kBaseReduceTypes}});
  reg.kernel<Reduce<SumOp, true>>("", "ReduceSum", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kBaseReduceTypes | kBf16}}, 0,
                                  uint64_t(1) << 1);
  register_attr_reduce<MeanOp>(reg, "ReduceMean", false);
  register_attr_reduce<ProdOp>(reg, "ReduceProd", false);
  register_attr_reduce<SumSquareOp>(reg, "ReduceSumSquare", false);
  register_attr_reduce<L1Op>(reg, "ReduceL1", false);
  register_attr_reduce<L2Op>(reg, "ReduceL2", false);
  register_attr_reduce<LogSumOp>(reg, "ReduceLogSum", false);
  register_attr_reduce<LogSumExpOp>(reg, "ReduceLogSumExp", false);
  register_attr_reduce<MaxOp>(reg, "ReduceMax", true);
  register_attr_reduce<MinOp>(reg, "ReduceMin", true);
  const uint64_t f32 = sdk::bit(SINGA_ONNX_FLOAT);
  reg.kernel<Reduce<SumOp, false, true>>("ai.singa", "CastHalfReduceSum", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}});
  reg.kernel<Reduce<MeanOp, false, true>>("ai.singa", "CastHalfReduceMean", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}});
  reg.kernel<Reduce<SumSquareOp, false, true>>("ai.singa", "CastHalfReduceSumSquare", 1, SINGA_VERSION_OPEN, "cpu",
                                               {{"T", 0, f32}});
  reg.kernel<Reduce<L1Op, false, true>>("ai.singa", "CastHalfReduceL1", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}});
  reg.kernel<Reduce<L2Op, false, true>>("ai.singa", "CastHalfReduceL2", 1, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f32}});
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
