// Elementwise math, comparisons, logic, Where, Cast and the reductions.
// Formulas, accumulation types and NaN rules follow the CPU packs
// (ops_math, ops_nn/activations.cpp, ops_logical, ops_tensor/cast.cpp,
// ops_reduce) so that a node gives the same answer on either device. The op
// is a run-time switch inside one kernel per element type: the branch is
// uniform across a launch, and it keeps nvcc's instantiation count small.
#include "device_common.cuh"
#include "kernels_math.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace singa {
namespace cuda {

using namespace dev;

namespace {

// Calls f(T{}) for the element type t among float, double, int32, int64;
// cudaErrorInvalidValue for any other.
template <class F>
cudaError_t real_or_int(DType t, F&& f) {
  switch (t) {
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    case kInt32: return f(int32_t{});
    case kInt64: return f(int64_t{});
    default: return cudaErrorInvalidValue;
  }
}

template <class T>
constexpr bool is_real = std::is_floating_point<T>::value;

// Two's-complement negation without relying on signed overflow (INT_MIN stays INT_MIN).
template <class T>
__device__ __forceinline__ T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return T(U(0) - U(x));
}

// std::max / std::min exactly: the first argument unless the second is
// strictly beyond it (so max(0, NaN) is 0, as on the CPU).
template <class T>
__device__ __forceinline__ T std_max(T a, T b) { return a < b ? b : a; }
template <class T>
__device__ __forceinline__ T std_min(T a, T b) { return b < a ? b : a; }

// ------------------------------------------------------------ unary math

template <class T>
__device__ T real_math(MathOp op, T x, T alpha, T beta) {
  switch (op) {
    case MathOp::kAbs: return fabs(x);
    case MathOp::kNeg: return -x;
    case MathOp::kSign: return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;  // NaN and -0 pass through
    case MathOp::kExp: return exp(x);
    case MathOp::kLog: return log(x);
    case MathOp::kSqrt: return sqrt(x);
    case MathOp::kReciprocal: return T(1) / x;
    case MathOp::kFloor: return floor(x);
    case MathOp::kCeil: return ceil(x);
    case MathOp::kRound: return rint(x);  // halves to even, like numpy's round
    case MathOp::kErf: return erf(x);
    case MathOp::kSin: return sin(x);
    case MathOp::kCos: return cos(x);
    case MathOp::kTan: return tan(x);
    case MathOp::kAsin: return asin(x);
    case MathOp::kAcos: return acos(x);
    case MathOp::kAtan: return atan(x);
    case MathOp::kSinh: return sinh(x);
    case MathOp::kCosh: return cosh(x);
    case MathOp::kAsinh: return asinh(x);
    case MathOp::kAcosh: return acosh(x);
    case MathOp::kAtanh: return atanh(x);
    // log(1 + e^x) without overflow for large x.
    case MathOp::kSoftplus: return x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
    case MathOp::kSoftsign: return x / (T(1) + fabs(x));
    case MathOp::kLeakyRelu: return x < T(0) ? alpha * x : x;
    case MathOp::kElu: return x < T(0) ? alpha * expm1(x) : x;
    case MathOp::kSelu: return x > T(0) ? beta * x : beta * alpha * expm1(x);
    case MathOp::kCelu: return x > T(0) ? x : alpha * expm1(x / alpha);
    case MathOp::kHardSigmoid: return std_min(T(1), std_max(T(0), alpha * x + beta));
    case MathOp::kHardSwish: return x * std_min(T(1), std_max(T(0), x / T(6) + T(0.5)));
    case MathOp::kThresholdedRelu: return x > alpha ? x : T(0);
    case MathOp::kDivBy: return x / alpha;
  }
  return x;
}

template <class T>
__device__ T int_math(MathOp op, T x) {
  switch (op) {
    case MathOp::kAbs: return x < T(0) ? wrap_neg(x) : x;
    case MathOp::kNeg: return wrap_neg(x);
    case MathOp::kSign: return T((x > T(0)) - (x < T(0)));
    default: return x;
  }
}

template <class T>
__global__ void math_kernel(MathOp op, const T* x, T* y, int64_t n, T alpha, T beta) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    if constexpr (is_real<T>)
      y[i] = real_math(op, x[i], alpha, beta);
    else
      y[i] = int_math(op, x[i]);
  }
}

bool int_op(MathOp op) { return op == MathOp::kAbs || op == MathOp::kNeg || op == MathOp::kSign; }

template <class T>
__global__ void clip_kernel(const T* x, T* y, int64_t n, T lo, T hi, bool has_lo, bool has_hi) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    T v = x[i];
    // Two steps, so that lo > hi gives hi (numpy.clip) and NaN passes through.
    if (has_lo) v = v < lo ? lo : v;
    if (has_hi) v = v > hi ? hi : v;
    y[i] = v;
  }
}

// ------------------------------------------------------------ binary math

template <class T, class E>
__device__ __forceinline__ T pow_of(T a, E b) {
  // x^2 is a product on the CPU (the common variance case); elsewhere its
  // pow agrees with the correctly rounded double result.
  if (b == E(2)) return a * a;
  return T(pow(double(a), double(b)));
}

template <class T, class E>
__global__ void binary_math_kernel(BinaryMath op, const T* a, const E* b, T* y, BroadcastPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t off[2];
    plan_offsets<2>(p, i, off);
    const T u = a[off[0]];
    const E v = b[off[1]];
    T r;
    switch (op) {
      case BinaryMath::kPow: r = pow_of(u, v); break;
      // NaN wins in either position, as numpy's maximum/minimum.
      case BinaryMath::kMax: r = (u > T(v) || u != u) ? u : T(v); break;
      case BinaryMath::kMin: r = (u < T(v) || u != u) ? u : T(v); break;
      case BinaryMath::kPRelu: r = u < T(0) ? T(T(v) * u) : u; break;
      default: r = u;
    }
    y[i] = r;
  }
}

template <class T, class E>
cudaError_t run_binary_math(BinaryMath op, const void* a, const void* b, void* y, const BroadcastPlan& p,
                            cudaStream_t stream) {
  binary_math_kernel<T, E><<<blocks_for(p.n), kThreads, 0, stream>>>(op, static_cast<const T*>(a),
                                                                     static_cast<const E*>(b), static_cast<T*>(y), p);
  return cudaGetLastError();
}

// ------------------------------------------------------------ comparisons, logic, Where

template <class T>
__device__ __forceinline__ auto truth_or_value(T v) {
  if constexpr (std::is_same<T, uint8_t>::value)
    return v != 0;  // bool bytes
  else
    return v;
}

template <class T>
__global__ void compare_kernel(CompareOp op, const T* a, const T* b, uint8_t* y, BroadcastPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t off[2];
    plan_offsets<2>(p, i, off);
    const auto u = truth_or_value(a[off[0]]), v = truth_or_value(b[off[1]]);
    bool r;
    switch (op) {
      case CompareOp::kEqual: r = u == v; break;
      case CompareOp::kLess: r = u < v; break;
      case CompareOp::kGreater: r = u > v; break;
      case CompareOp::kLessOrEqual: r = u <= v; break;
      default: r = u >= v;
    }
    y[i] = r ? 1 : 0;
  }
}

__global__ void logic_kernel(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, BroadcastPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t off[2];
    plan_offsets<2>(p, i, off);
    const bool u = a[off[0]] != 0, v = b[off[1]] != 0;
    const bool r = op == LogicOp::kAnd ? (u && v) : op == LogicOp::kOr ? (u || v) : (u != v);
    y[i] = r ? 1 : 0;
  }
}

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = x[i] == 0 ? 1 : 0;
}

template <class E>
__global__ void where_kernel(const uint8_t* c, const E* x, const E* y, E* out, BroadcastPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t off[3];
    plan_offsets<3>(p, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

// ------------------------------------------------------------ cast

template <class T>
struct Limits;
template <>
struct Limits<int8_t> {
  static constexpr int8_t lowest = -128, max = 127;
};
template <>
struct Limits<uint8_t> {
  static constexpr uint8_t lowest = 0, max = 255;
};
template <>
struct Limits<int32_t> {
  static constexpr int32_t lowest = INT32_MIN, max = INT32_MAX;
};
template <>
struct Limits<int64_t> {
  static constexpr int64_t lowest = INT64_MIN, max = INT64_MAX;
};

// Bool is carried as a byte; it reads as 0/1 whatever nonzero byte it holds.
struct BoolByte {
  uint8_t b;
};

template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same<To, From>::value) {
    return v;
  } else if constexpr (std::is_same<From, BoolByte>::value) {
    if constexpr (std::is_same<To, BoolByte>::value)
      return v;
    else
      return To(v.b != 0 ? 1 : 0);
  } else if constexpr (std::is_same<To, BoolByte>::value) {
    return BoolByte{uint8_t(v != From(0) ? 1 : 0)};
  } else if constexpr (std::is_integral<To>::value && std::is_floating_point<From>::value) {
    // Saturating, as the CPU (ops_tensor/cast.cpp): a plain conversion of
    // an out-of-range value is undefined.
    if (v != v) return To(0);
    if (v <= From(Limits<To>::lowest)) return Limits<To>::lowest;
    if (v >= From(Limits<To>::max)) return Limits<To>::max;
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <class To, class From>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = convert<To>(x[i]);
}

template <class F>
cudaError_t cast_type(DType t, F&& f) {
  switch (t) {
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    case kInt8: return f(int8_t{});
    case kUInt8: return f(uint8_t{});
    case kInt32: return f(int32_t{});
    case kInt64: return f(int64_t{});
    case kBool: return f(BoolByte{});
    default: return cudaErrorInvalidValue;
  }
}

// ------------------------------------------------------------ reductions

template <class A>
__device__ __forceinline__ A lowest_of() {
  if constexpr (std::is_floating_point<A>::value)
    return A(-INFINITY);
  else
    return A(INT64_MIN);
}
template <class A>
__device__ __forceinline__ A highest_of() {
  if constexpr (std::is_floating_point<A>::value)
    return A(INFINITY);
  else
    return A(INT64_MAX);
}

// NaN wins, as in numpy: once the accumulator is NaN no comparison replaces it.
struct MaxNan {
  template <class A>
  __device__ A operator()(A a, A x) const { return (x > a || x != x) ? x : a; }
};
struct MinNan {
  template <class A>
  __device__ A operator()(A a, A x) const { return (x < a || x != x) ? x : a; }
};

template <class A>
__device__ A reduce_init(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return A(1);
    case ReduceOp::kMax: return lowest_of<A>();
    case ReduceOp::kMin: return highest_of<A>();
    default: return A(0);
  }
}

// Folds x into a; m is the maximum for LogSumExp.
template <class A>
__device__ __forceinline__ void reduce_step(ReduceOp op, A& a, A x, A m) {
  switch (op) {
    case ReduceOp::kProd: a *= x; break;
    case ReduceOp::kMax: a = MaxNan()(a, x); break;
    case ReduceOp::kMin: a = MinNan()(a, x); break;
    case ReduceOp::kL1: a += x < A(0) ? -x : x; break;
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare: a += x * x; break;
    case ReduceOp::kLogSumExp:
      if constexpr (std::is_floating_point<A>::value) a += exp(x - m);
      break;
    default: a += x;  // Sum, Mean, LogSum
  }
}

// Joins two partial accumulators.
struct ReduceMerge {
  ReduceOp op;
  template <class A>
  __device__ A operator()(A a, A b) const {
    switch (op) {
      case ReduceOp::kProd: return a * b;
      case ReduceOp::kMax: return MaxNan()(a, b);
      case ReduceOp::kMin: return MinNan()(a, b);
      default: return a + b;
    }
  }
};

template <class A>
__device__ A reduce_finish(ReduceOp op, A a, A m, int64_t count) {
  switch (op) {
    case ReduceOp::kMean:
      if constexpr (std::is_floating_point<A>::value)
        return a / A(count);  // NaN for an empty reduction, like numpy
      else
        return count == 0 ? A(0) : A(a / A(count));
    case ReduceOp::kL2:
      if constexpr (std::is_floating_point<A>::value) return sqrt(a);
      return a;
    case ReduceOp::kLogSum:
      if constexpr (std::is_floating_point<A>::value) return log(a);
      return a;
    case ReduceOp::kLogSumExp:
      if constexpr (std::is_floating_point<A>::value) return isfinite(m) ? m + log(a) : m;
      return a;
    default: return a;
  }
}

__device__ __forceinline__ int64_t kept_offset(const ReducePlan& p, int64_t o) {
  int64_t off = 0;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    const int64_t q = o / p.kept_dims[d];
    off += (o - q * p.kept_dims[d]) * p.kept_strides[d];
    o = q;
  }
  return off;
}

__device__ __forceinline__ int64_t reduced_offset(const ReducePlan& p, int64_t r) {
  int64_t off = 0;
  for (int d = p.red_rank - 1; d >= 0; --d) {
    const int64_t q = r / p.red_dims[d];
    off += (r - q * p.red_dims[d]) * p.red_strides[d];
    r = q;
  }
  return off;
}

// One thread per output: many outputs, few elements each.
template <class T, class A>
__global__ void reduce_thread_kernel(ReduceOp op, const T* x, T* y, ReducePlan p) {
  for (int64_t o = global_index(); o < p.outputs; o += grid_stride()) {
    const T* xo = x + kept_offset(p, o);
    A m = lowest_of<A>();
    if (op == ReduceOp::kLogSumExp)
      for (int64_t r = 0; r < p.count; ++r) m = MaxNan()(m, A(xo[reduced_offset(p, r)]));
    A a = reduce_init<A>(op);
    for (int64_t r = 0; r < p.count; ++r) reduce_step(op, a, A(xo[reduced_offset(p, r)]), m);
    y[o] = T(reduce_finish(op, a, m, p.count));
  }
}

// One block per output: long reductions.
template <class T, class A>
__global__ void reduce_block_kernel(ReduceOp op, const T* x, T* y, ReducePlan p) {
  __shared__ A scratch[32];
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    const T* xo = x + kept_offset(p, o);
    A m = lowest_of<A>();
    if (op == ReduceOp::kLogSumExp) {
      for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x) m = MaxNan()(m, A(xo[reduced_offset(p, r)]));
      m = block_reduce(m, MaxNan(), lowest_of<A>(), scratch);
    }
    const A identity = reduce_init<A>(op);
    A a = identity;
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x) reduce_step(op, a, A(xo[reduced_offset(p, r)]), m);
    a = block_reduce(a, ReduceMerge{op}, identity, scratch);
    if (threadIdx.x == 0) y[o] = T(reduce_finish(op, a, m, p.count));
  }
}

template <class T, class A>
cudaError_t run_reduce(ReduceOp op, const void* x, void* y, const ReducePlan& p, cudaStream_t stream) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  // Outputs alone fill the GPU when they are many and neighbours read
  // neighbouring addresses; otherwise each output gets a block.
  const bool coalesced = p.kept_rank > 0 && p.kept_strides[p.kept_rank - 1] == 1;
  if (p.count <= 32 || (p.outputs >= 65536 && coalesced))
    reduce_thread_kernel<T, A><<<blocks_for(p.outputs), kThreads, 0, stream>>>(op, px, py, p);
  else
    reduce_block_kernel<T, A><<<row_blocks(p.outputs), row_threads(p.count), 0, stream>>>(op, px, py, p);
  return cudaGetLastError();
}

// Whether v replaces the current best (ops_reduce/argminmax.cpp): NaN counts
// as the extreme, so the first NaN wins (the last with select_last).
template <class T>
__device__ __forceinline__ bool better(bool is_max, T v, T best, bool last) {
  if (best != best) return last && v != v;
  if (v != v) return true;
  if (is_max) return last ? v >= best : v > best;
  return last ? v <= best : v < best;
}

template <class T>
__global__ void arg_extreme_kernel(bool is_max, bool last, const T* x, int64_t* y, int64_t outer, int64_t n,
                                   int64_t inner) {
  const int64_t columns = outer * inner;
  for (int64_t c = global_index(); c < columns; c += grid_stride()) {
    const int64_t o = c / inner, k = c - o * inner;
    const T* xc = x + o * n * inner + k;
    T best = xc[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < n; ++j) {
      const T v = xc[j * inner];
      if (better(is_max, v, best, last)) {
        best = v;
        arg = j;
      }
    }
    y[c] = arg;
  }
}

}  // namespace

// ------------------------------------------------------------ launchers

cudaError_t launch_math(MathOp op, DType t, const void* x, void* y, int64_t n, double alpha, double beta,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_or_int(t, [&](auto tag) {
    using T = decltype(tag);
    if (!is_real<T> && !int_op(op)) return cudaErrorInvalidValue;
    math_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(x), static_cast<T*>(y), n,
                                                           T(alpha), T(beta));
    return cudaGetLastError();
  });
}

cudaError_t launch_clip(DType t, const void* x, void* y, int64_t n, const void* lo, const void* hi, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_or_int(t, [&](auto tag) {
    using T = decltype(tag);
    const T l = lo ? *static_cast<const T*>(lo) : T(0), h = hi ? *static_cast<const T*>(hi) : T(0);
    clip_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n, l, h,
                                                           lo != nullptr, hi != nullptr);
    return cudaGetLastError();
  });
}

cudaError_t launch_binary_math(BinaryMath op, DType ta, DType tb, const void* a, const void* b, void* y,
                               const BroadcastPlan& plan, cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  if (op != BinaryMath::kPow) {
    if (ta != tb) return cudaErrorInvalidValue;
    return real_or_int(ta, [&](auto tag) {
      using T = decltype(tag);
      return run_binary_math<T, T>(op, a, b, y, plan, stream);
    });
  }
  if (ta != kFloat && ta != kDouble) return cudaErrorInvalidValue;
  return real_or_int(ta, [&](auto base) {
    using T = decltype(base);
    return real_or_int(tb, [&](auto exponent) {
      using E = decltype(exponent);
      if constexpr (is_real<T>)
        return run_binary_math<T, E>(op, a, b, y, plan, stream);
      else
        return cudaErrorInvalidValue;
    });
  });
}

cudaError_t launch_compare(CompareOp op, DType t, const void* a, const void* b, uint8_t* y, const BroadcastPlan& plan,
                           cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<T><<<blocks_for(plan.n), kThreads, 0, stream>>>(op, static_cast<const T*>(a),
                                                                   static_cast<const T*>(b), y, plan);
    return cudaGetLastError();
  };
  if (t == kBool) return run(uint8_t{});
  return real_or_int(t, run);
}

cudaError_t launch_logic(LogicOp op, const uint8_t* a, const uint8_t* b, uint8_t* y, const BroadcastPlan& plan,
                         cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  logic_kernel<<<blocks_for(plan.n), kThreads, 0, stream>>>(op, a, b, y, plan);
  return cudaGetLastError();
}

cudaError_t launch_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  not_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_where(size_t elem_size, const uint8_t* cond, const void* x, const void* y, void* out,
                         const BroadcastPlan& plan, cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  auto run = [&](auto tag) {
    using E = decltype(tag);
    where_kernel<E><<<blocks_for(plan.n), kThreads, 0, stream>>>(cond, static_cast<const E*>(x),
                                                                 static_cast<const E*>(y), static_cast<E*>(out), plan);
    return cudaGetLastError();
  };
  switch (elem_size) {
    case 1: return run(uint8_t{});
    case 2: return run(uint16_t{});
    case 4: return run(uint32_t{});
    case 8: return run(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return cast_type(from, [&](auto ftag) {
    using F = decltype(ftag);
    return cast_type(to, [&](auto ttag) {
      using T = decltype(ttag);
      cast_kernel<T, F><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const F*>(x), static_cast<T*>(y), n);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_reduce(ReduceOp op, DType t, const void* x, void* y, const ReducePlan& plan, cudaStream_t stream) {
  if (plan.outputs <= 0) return cudaSuccess;
  clear_stale_error();
  // Floats accumulate in double; integers in 64 bits, except the ops whose
  // result is real (L2, LogSum, LogSumExp), which the CPU also runs in double.
  const bool real_acc = op == ReduceOp::kL2 || op == ReduceOp::kLogSum || op == ReduceOp::kLogSumExp;
  return real_or_int(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_real<T>)
      return run_reduce<T, double>(op, x, y, plan, stream);
    else
      return real_acc ? run_reduce<T, double>(op, x, y, plan, stream) : run_reduce<T, int64_t>(op, x, y, plan, stream);
  });
}

cudaError_t launch_arg_extreme(bool is_max, bool select_last, DType t, const void* x, int64_t* y, int64_t outer,
                               int64_t n, int64_t inner, cudaStream_t stream) {
  if (outer <= 0 || inner <= 0 || n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_or_int(t, [&](auto tag) {
    using T = decltype(tag);
    arg_extreme_kernel<T><<<blocks_for(outer * inner), kThreads, 0, stream>>>(is_max, select_last,
                                                                              static_cast<const T*>(x), y, outer, n,
                                                                              inner);
    return cudaGetLastError();
  });
}

}  // namespace cuda
}  // namespace singa
