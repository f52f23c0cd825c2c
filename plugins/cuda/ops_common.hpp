// ops_common.hpp - what every CUDA kernel class shares: the node's name for
// messages, required-input checks, launch checks and dtype masks.
#ifndef SINGA_CUDA_OPS_COMMON_HPP
#define SINGA_CUDA_OPS_COMMON_HPP

#include "cuda_util.hpp"
#include "kernels.hpp"

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace cuda {

using sdk::bit;

constexpr uint64_t kF32 = bit(SINGA_ONNX_FLOAT);
constexpr uint64_t kF64 = bit(SINGA_ONNX_DOUBLE);
constexpr uint64_t kBoolType = bit(SINGA_ONNX_BOOL);
constexpr uint64_t kInt64Type = bit(SINGA_ONNX_INT64);
constexpr uint64_t kF32F64 = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_DOUBLE);
constexpr uint64_t kI32I64 = bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64);
// Everything with a fixed element size (what a byte copy can move).
constexpr uint64_t kFixedSizeTypes = sdk::kNumericTypes | bit(SINGA_ONNX_BOOL);
// float, double, int32, int64: the types of the typed elementwise kernels.
constexpr uint64_t kRealInt = kF32F64 | kI32I64;

constexpr uint64_t input_bit(int i) { return uint64_t(1) << i; }

// The kernels' DType codes are ONNX's.
static_assert(int(kFloat) == SINGA_ONNX_FLOAT && int(kDouble) == SINGA_ONNX_DOUBLE && int(kInt32) == SINGA_ONNX_INT32 &&
                  int(kInt64) == SINGA_ONNX_INT64 && int(kBool) == SINGA_ONNX_BOOL && int(kUInt8) == SINGA_ONNX_UINT8 &&
                  int(kInt8) == SINGA_ONNX_INT8,
              "DType must match singa_onnx_dtype");
inline DType dtype_of(const sdk::Tensor& t) { return DType(t.dtype()); }
inline size_t elem_size(const sdk::Tensor& t) { return (size_t(t.dl_dtype().bits) * t.dl_dtype().lanes + 7) / 8; }
inline bool is_double(const sdk::Tensor& t) { return t.dtype() == SINGA_ONNX_DOUBLE; }

class NodeKernel {
 public:
  explicit NodeKernel(const sdk::Node& node) : where_(node.op_type() + " node '" + node.name() + "'") {}
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& msg, singa_code code = SINGA_INVALID_ARGUMENT) const {
    throw sdk::Error(code, where_ + ": " + msg);
  }
  void check(bool ok, const std::string& msg) const {
    if (!ok) fail(msg);
  }
  sdk::Tensor required(const sdk::Context& ctx, size_t i, const char* name) const {
    sdk::Tensor t = ctx.input(i);
    if (!t.present()) fail(std::string("input ") + std::to_string(i) + " (" + name + ") is missing");
    return t;
  }
  // A kernel launch or library call on this node's behalf.
  void check_launch(cudaError_t err, const std::string& what) const {
    if (err != cudaSuccess) throw sdk::Error(cuda_code(err), where_ + ": " + cuda_message(err, what));
  }
  // A float or double input.
  void check_real(const sdk::Tensor& t, const char* name) const {
    if (t.dtype() != SINGA_ONNX_FLOAT && t.dtype() != SINGA_ONNX_DOUBLE)
      fail(std::string(name) + " has element type " + sdk::dtype_name(t.dtype()) +
           "; the CUDA kernel takes float or double");
  }
  void check_same_type(const sdk::Tensor& a, const char* an, const sdk::Tensor& b, const char* bn) const {
    if (a.dtype() != b.dtype())
      fail(std::string(an) + " is " + sdk::dtype_name(a.dtype()) + " but " + bn + " is " + sdk::dtype_name(b.dtype()));
  }
  // The integers of a 0-d or 1-d host input (shape, axes, pads, ...).
  std::vector<int64_t> host_ints(const sdk::Tensor& t, const char* name) const {
    check(t.raw()->device.device_type == kDLCPU, std::string("input '") + name + "' must be on the host");
    check(t.ndim() <= 1, std::string("input '") + name + "' must be 0-d or 1-d, got shape " + shape_str(t.shape()));
    check((sdk::kIntTypes & sdk::bit(t.dtype())) != 0,
          std::string("input '") + name + "' must hold integers, got " + sdk::dtype_name(t.dtype()));
    return t.to_int_vector();
  }
  // Maps axis in [-rank, rank) to [0, rank).
  int64_t axis_in(int64_t axis, int64_t rank, const char* what) const {
    check(axis >= -rank && axis < rank,
          std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return axis < 0 ? axis + rank : axis;
  }
  void check_float(const sdk::Tensor& t, const char* name) const {
    if (t.dtype() != SINGA_ONNX_FLOAT)
      fail(std::string(name) + " has element type " + sdk::dtype_name(t.dtype()) + "; the CUDA kernel takes float");
  }

 private:
  std::string where_;
};

// Copies `bytes` between two buffers of the node's device on its stream
// (nothing when they are the same buffer, as after an in-place output).
void device_copy(const sdk::Context& ctx, void* dst, const void* src, size_t bytes, const std::string& where);

// Copies host data into node workspace on the device and returns it. The
// host buffer may go away at once: a copy from pageable memory has been
// staged when cudaMemcpyAsync returns.
void* upload(const sdk::Context& ctx, const void* host, size_t bytes, const std::string& where);

// Writes host data into a device output (a few bytes: Shape, Size).
void upload_to(const sdk::Context& ctx, void* dst, const void* host, size_t bytes, const std::string& where);

}  // namespace cuda
}  // namespace singa

#endif
