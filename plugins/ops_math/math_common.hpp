// math_common.hpp - shared helpers of the ops_math pack: dtype traits, error
// prefixes that name the node, and the tight elementwise loops.
#ifndef SINGA_OPS_MATH_COMMON_HPP
#define SINGA_OPS_MATH_COMMON_HPP

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <singa/kernel.hpp>
#include <string>
#include <type_traits>

#include "broadcast.hpp"

namespace singa {
namespace ops {
namespace math {

// Elementwise ops (and pools, normalisations) whose float16 kernels convert in vector registers (F16C,
// AVX-512): the pass cpu.float16_as_float32 leaves such a node `n` in half
// when none of its inputs is already widened (`wide`: half value -> float32
// twin), since widening it would add a Cast of each whole input before it
// and one after it, three passes over memory for one.
template <typename Node, typename Wide> bool stays_in_half(const Node& n, const Wide& wide) {
  static const std::set<std::string> ops = {
      "Abs",     "Add",  "Ceil", "Celu",     "Cos",         "Div",  "Elu",       "Erf",      "Exp",
      "Floor",   "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "Log", "Mish", "Mul", "Neg",
      "Mean", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus", "Softsign", "Sqrt", "Sub", "Sum",
      "Tanh",
      "ThresholdedRelu",
      // AveragePool's float16 kernel widens groups of planes into the float one
      // (ops_nn/pool.cpp). MaxPool's does too, but measured slower at 2 threads
      // than the widened float MaxPool between Casts, so MaxPool still widens.
      "AveragePool",
      // Inference BatchNormalization's float16 path widens blocks (ops_nn/batch_norm.cpp).
      "BatchNormalization",
      // Its float16 runs widen into the float kernels (ops_nn/norm_common.hpp's normalise_runs).
      "InstanceNormalization"};
  if (!ops.count(n.op_type())) return false;
  for (const std::string& in : n.input_names())
    if (!in.empty() && wide.count(in)) return false;
  return true;
}

using sdk::bfloat16;
using sdk::half;

// The type arithmetic runs in: 16-bit floats have no arithmetic of their own.
template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<half> {
  using type = float;
};
template <>
struct compute_type<bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

template <typename T>
constexpr bool is_float_v =
    std::is_floating_point<T>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16>::value;
template <typename T>
constexpr bool is_int_v = std::is_integral<T>::value && !std::is_same<T, bool>::value;

template <typename T>
constexpr int32_t onnx_type_of();
template <>
constexpr int32_t onnx_type_of<float>() {
  return SINGA_ONNX_FLOAT;
}
template <>
constexpr int32_t onnx_type_of<double>() {
  return SINGA_ONNX_DOUBLE;
}
template <>
constexpr int32_t onnx_type_of<half>() {
  return SINGA_ONNX_FLOAT16;
}
template <>
constexpr int32_t onnx_type_of<bfloat16>() {
  return SINGA_ONNX_BFLOAT16;
}
template <>
constexpr int32_t onnx_type_of<int8_t>() {
  return SINGA_ONNX_INT8;
}
template <>
constexpr int32_t onnx_type_of<int16_t>() {
  return SINGA_ONNX_INT16;
}
template <>
constexpr int32_t onnx_type_of<int32_t>() {
  return SINGA_ONNX_INT32;
}
template <>
constexpr int32_t onnx_type_of<int64_t>() {
  return SINGA_ONNX_INT64;
}
template <>
constexpr int32_t onnx_type_of<uint8_t>() {
  return SINGA_ONNX_UINT8;
}
template <>
constexpr int32_t onnx_type_of<uint16_t>() {
  return SINGA_ONNX_UINT16;
}
template <>
constexpr int32_t onnx_type_of<uint32_t>() {
  return SINGA_ONNX_UINT32;
}
template <>
constexpr int32_t onnx_type_of<uint64_t>() {
  return SINGA_ONNX_UINT64;
}
template <>
constexpr int32_t onnx_type_of<bool>() {
  return SINGA_ONNX_BOOL;
}

// Lets a dispatch lambda compile only the dtypes an op implements: dispatch
// instantiates its callback for every dtype it knows.
template <typename T>
constexpr bool in_mask(uint64_t mask) {
  return (mask & SINGA_DTYPE_BIT(onnx_type_of<T>())) != 0;
}

constexpr uint64_t kFloatLike = sdk::kFloatTypes | sdk::bit(SINGA_ONNX_BFLOAT16);
constexpr uint64_t kNumeric = sdk::kNumericTypes;
constexpr uint64_t kSignedNumeric = kFloatLike | sdk::kSignedIntTypes;

// Wider unsigned arithmetic: integer overflow wraps like numpy's, without the
// undefined behaviour of signed overflow or of uint16*uint16 promoting to int.
template <typename C>
using wide_unsigned_t = std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;

// Two's-complement negation without signed-overflow UB (INT_MIN stays INT_MIN, as numpy).
template <typename T>
inline T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(x));
}

// Halves go to the even neighbour (numpy's round/rint), whatever the FPU's
// rounding mode happens to be.
template <typename C>
inline C round_half_even(C x) {
  C r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == C(0.5)) r = C(2) * std::round(x / C(2));
  return r;
}

// A float to an integer type: NaN becomes 0 and out-of-range values clamp,
// where a plain cast would be undefined behaviour.
template <typename T>
inline T float_to_int(double v) {
  if (!(v == v)) return T(0);
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Converts between any two element types of the pack (16-bit floats go through float).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same<To, From>::value) {
    return v;
  } else if constexpr (is_int_v<To> && is_float_v<From>) {
    return float_to_int<To>(double(compute_t<From>(v)));
  } else if constexpr (std::is_same<To, half>::value || std::is_same<To, bfloat16>::value) {
    return To(float(compute_t<From>(v)));
  } else {
    return static_cast<To>(compute_t<From>(v));
  }
}

// The core prefixes every error a kernel returns with the node's name and
// op, so messages here say only what is wrong.
inline void same_dtype(const sdk::Tensor& a, const sdk::Tensor& b, const std::string& what) {
  if (a.dtype() != b.dtype())
    sdk::fail(what + " must have the same element type, got " + sdk::dtype_name(a.dtype()) + " and " +
              sdk::dtype_name(b.dtype()));
}

// y[i] = f(x[i]) over the whole tensor, in parallel. y may alias x.
template <typename TIn, typename TOut, typename F>
void unary_map(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& y, int64_t grain, F f) {
  const TIn* px = x.data<TIn>();
  TOut* py = y.data<TOut>();
  ctx.parallel_for(x.numel(), grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
  });
}

// Copies `in` broadcast to `out_shape` into `out`, converting each element.
template <typename TIn, typename TOut>
void broadcast_copy(const sdk::Context& ctx, const sdk::Tensor& in, TOut* out, const Shape& out_shape) {
  Broadcaster<1> bc(out_shape, {in.shape()});
  const TIn* pi = in.data<TIn>();
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, bc.inner()));
  ctx.parallel_for(bc.rows(), grain, [&](int64_t rb, int64_t re) {
    bc.run_rows(rb, re, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
      const TIn* x = pi + off[0];
      TOut* z = out + o;
      if (st[0] == 1) {
        for (int64_t i = 0; i < n; ++i) z[i] = convert<TOut>(x[i]);
      } else {
        TOut v = convert<TOut>(x[0]);
        for (int64_t i = 0; i < n; ++i) z[i] = v;
      }
    });
  });
}

// Integer division and modulo fault on a zero divisor: refuse it up front so
// that the hot loops stay branch-free.
template <typename T>
bool has_zero(const sdk::Tensor& t) {
  const T* p = t.data<T>();
  int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i)
    if (p[i] == T(0)) return true;
  return false;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
