// reduce_common.hpp - helpers shared by the kernels of the ops_reduce pack.
#ifndef SINGA_OPS_REDUCE_COMMON_HPP
#define SINGA_OPS_REDUCE_COMMON_HPP

#include <saturate_cast.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <singa/kernel.hpp>
#include <string>
#include <type_traits>
#include <vector>

namespace singa {
namespace ops {
namespace reduce {

using sdk::Shape;

// Type masks of the ONNX schemas, by the opset that introduced them.
constexpr uint64_t kBaseReduceTypes =
    sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE) | sdk::bit(SINGA_ONNX_FLOAT16) |
    sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64) | sdk::bit(SINGA_ONNX_UINT32) | sdk::bit(SINGA_ONNX_UINT64);
constexpr uint64_t kBf16 = sdk::bit(SINGA_ONNX_BFLOAT16);
constexpr uint64_t kBool = sdk::bit(SINGA_ONNX_BOOL);
constexpr uint64_t kInt8Pair = sdk::bit(SINGA_ONNX_INT8) | sdk::bit(SINGA_ONNX_UINT8);
constexpr uint64_t kAllNumeric = sdk::kFloatTypes | sdk::kIntTypes | kBf16;

// A float32 element read as its rounding to float16: the input of the
// "ai.singa" CastHalfReduce* kernels, which a graph pass puts in place of a
// Cast to float16 and the reduction reading it (widen_float16.cpp): they
// compute what the reduction of the Cast's output would, without writing
// the half tensor.
struct HalfOfF32 {
  float v;
};

template <typename T>
constexpr bool is_floating_v = std::is_floating_point<T>::value || std::is_same<T, sdk::half>::value ||
                               std::is_same<T, sdk::bfloat16>::value || std::is_same<T, HalfOfF32>::value;

// What the kernels compute in: float storage types widen to double so that a
// long reduction or scan does not lose precision; integers wrap like ONNX's
// reference (two's-complement arithmetic is the same modulo the narrow width).
template <typename T>
using wide_t =
    std::conditional_t<is_floating_v<T>, double, std::conditional_t<std::is_signed<T>::value, int64_t, uint64_t>>;

// half and bfloat16 compare as float; the rest compare as themselves.
template <typename T>
using cmp_t = std::conditional_t<std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value, float, T>;

// Arithmetic on half/bfloat16 goes through float; the rest convert directly.
template <typename A, typename T> inline A widen(T v) {
  if constexpr (std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value)
    return static_cast<A>(static_cast<float>(v));
  else if constexpr (std::is_same<T, HalfOfF32>::value)
    return static_cast<A>(static_cast<float>(sdk::half(v.v)));
  else
    return static_cast<A>(v);
}
// A floating result stored to an integer output saturates (NaN gives 0;
// saturate_cast.hpp): ReduceLogSum of integers that sum to 0 is log(0) = -inf.
template <typename T, typename A> inline T narrow(A v) {
  if constexpr (std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_integral<T>::value && std::is_floating_point<A>::value) {
    return ops::saturate_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Errors are raised with sdk::fail and plain messages: the host prefixes
// every kernel error with the model, node name and op type.

// Maps a possibly negative axis into [0, rank), or fails naming the value.
inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    sdk::fail(std::string(what) + " " + std::to_string(axis) + " is out of range for an input of rank " +
              std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Sizes before, at and after one axis of a shape.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t i = 0; i < int64_t(s.size()); ++i) {
    if (i < axis)
      r.outer *= s[size_t(i)];
    else if (i == axis)
      r.n = s[size_t(i)];
    else
      r.inner *= s[size_t(i)];
  }
  return r;
}

// Grain for ctx.parallel_for: about `target` elements of work per task.
inline int64_t grain_for(int64_t work_per_item, int64_t target = 32768) {
  return std::max<int64_t>(1, target / std::max<int64_t>(1, work_per_item));
}

// Width of the inner-run blocks that a kernel walking rows of a strided axis
// hands out as tasks: whole rows (up to `cap`) when the outer positions alone
// give the pool enough tasks, since walking one contiguous [n, inner] slab
// streams through memory, else narrower blocks (a multiple of 16 lanes) so
// that there are about 8 tasks.
inline int64_t inner_block(int64_t outer, int64_t inner, int64_t cap) {
  const int64_t want = std::max<int64_t>(1, (8 + outer - 1) / std::max<int64_t>(1, outer));
  const int64_t nblk = std::max(want, (inner + cap - 1) / cap);
  const int64_t block = ((inner + nblk - 1) / nblk + 15) / 16 * 16;
  return std::max<int64_t>(16, std::min(block, cap));
}

void register_reductions(sdk::Registrar& reg);
void register_softmax(sdk::Registrar& reg);
void register_argminmax(sdk::Registrar& reg);
void register_cumsum(sdk::Registrar& reg);
void register_topk(sdk::Registrar& reg);

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
