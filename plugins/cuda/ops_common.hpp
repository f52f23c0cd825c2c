// ops_common.hpp - what every CUDA kernel class shares: the node's name for
// messages, required-input checks, launch checks and dtype masks.
#ifndef SINGA_CUDA_OPS_COMMON_HPP
#define SINGA_CUDA_OPS_COMMON_HPP

#include "cuda_util.hpp"
#include "kernels.hpp"

#include <singa/kernel.hpp>

#include <string>

namespace singa {
namespace cuda {

using sdk::bit;

constexpr uint64_t kF32 = bit(SINGA_ONNX_FLOAT);
constexpr uint64_t kF32F64 = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_DOUBLE);
constexpr uint64_t kI32I64 = bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64);
// Everything with a fixed element size (what a byte copy can move).
constexpr uint64_t kFixedSizeTypes = sdk::kNumericTypes | bit(SINGA_ONNX_BOOL);

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

}  // namespace cuda
}  // namespace singa

#endif
