// common.hpp - helpers shared by the shape and data-movement kernels.
//
// These ops move bytes without looking at them, so most kernels work on the
// element size alone: one code path serves every fixed-size dtype (bool,
// float16, bfloat16, ints, floats, complex).
#ifndef SINGA_OPS_TENSOR_COMMON_HPP
#define SINGA_OPS_TENSOR_COMMON_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace tensor {

using sdk::Context;
using sdk::Node;
using sdk::Shape;
using sdk::Tensor;
// DLDataType is a global type, so argument lookup does not find the SDK's ==.
using sdk::operator==;
using sdk::operator!=;

// Dtypes a byte-moving kernel handles. Strings are left out: their text lives
// in the input's storage and the ABI has no way to give an output its own.
constexpr uint64_t kMoveTypes = sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL) | sdk::bit(SINGA_ONNX_COMPLEX64) |
                                sdk::bit(SINGA_ONNX_COMPLEX128);
// Dtypes an op that only looks at shapes (Shape, Size) accepts.
constexpr uint64_t kAnyTypes = kMoveTypes | sdk::bit(SINGA_ONNX_STRING);
constexpr uint64_t kIndexTypes = sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);
constexpr uint64_t kInt64 = sdk::bit(SINGA_ONNX_INT64);

constexpr uint64_t input_bit(int i) { return uint64_t(1) << i; }

std::string shape_str(const Shape& s);
std::string ints_str(const std::vector<int64_t>& v);

// Base of every kernel here: input-checking helpers whose messages name the
// offending value (the host prefixes the node and op).
class KernelBase {
 public:
  explicit KernelBase(const Node&) {}

 protected:
  [[noreturn]] void fail(const std::string& msg) const { sdk::fail(msg); }
  void check(bool ok, const std::string& msg) const {
    if (!ok) fail(msg);
  }
  // A literal message builds no std::string unless the check fails; messages
  // that are built (concatenation, shape_str) go through SINGA_CHECK instead.
  void check(bool ok, const char* msg) const {
    if (!ok) fail(msg);
  }
  // Maps axis in [-rank, rank) to [0, rank); `what` names the attribute/input.
  int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) const;
  // An `axes` list normalised to [0, rank), failing on an axis named twice.
  std::vector<size_t> distinct_axes(const std::vector<int64_t>& axes, size_t rank) const;
  // Reads a 0-d or 1-d integer input (a shape, axes, pads...) on the host.
  std::vector<int64_t> read_ints(const Tensor& t, const char* what) const;
  // Reads a tensor that must hold exactly one integer.
  int64_t read_scalar_int(const Tensor& t, const char* what) const;
  // The input, failing with a clear message when a required one is absent.
  Tensor required(const Context& ctx, size_t i, const char* what) const;
};

inline size_t elem_size(const Tensor& t) { return (size_t(t.dl_dtype().bits) * t.dl_dtype().lanes + 7) / 8; }
inline const char* bytes(const Tensor& t) { return static_cast<const char*>(t.data_ptr()); }
inline char* mutable_bytes(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

Shape contiguous_strides(const Shape& shape);

// All elements of an int32/int64 (or other integer) tensor as int64.
std::vector<int64_t> read_index_tensor(const Tensor& t);

// Copies n elements of `es` bytes: dst[i*dst_step] = src[i*src_step] (steps in
// elements, possibly 0 or negative).
void copy_elems(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n, size_t es);
// Fills n elements of `es` bytes with the element at `value`.
void fill_elems(char* dst, const void* value, int64_t n, size_t es);

// Contiguous copy of `bytes` split over the intra-op pool.
void parallel_memcpy(const Context& ctx, void* dst, const void* src, size_t bytes);

// N-d copy: for every index i of `shape`,
//   dst[sum i_k*dst_strides[k]] = src[sum i_k*src_strides[k]]
// (strides in elements; src strides may be 0 for broadcasting or negative for
// reversed slices). Dims are coalesced and the outer rows split over the pool.
void strided_copy(const Context& ctx, const Shape& shape, char* dst, const Shape& dst_strides, const char* src,
                  const Shape& src_strides, size_t es);

}  // namespace tensor
}  // namespace ops
}  // namespace singa

#endif
