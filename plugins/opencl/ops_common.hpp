// ops_common.hpp - what every OpenCL kernel class shares: the node's name for
// messages, required-input checks, the device of a tensor, buffer arguments
// and 32-bit size checks (the kernels index with int).
#ifndef SINGA_OPENCL_OPS_COMMON_HPP
#define SINGA_OPENCL_OPS_COMMON_HPP

#include "programs.hpp"

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace opencl {

using sdk::bit;

constexpr uint64_t kF32 = bit(SINGA_ONNX_FLOAT);
// Element types a byte copy or gather can move (1, 2, 4 or 8 bytes).
constexpr uint64_t kMovableTypes = sdk::kNumericTypes | bit(SINGA_ONNX_BOOL);

std::string shape_str(const sdk::Shape& s);

// The matrix-product kernel that option opencl.gemm forces on a node
// (gemm.cpp): 0 when unset (the shape decides), 1 simple, 2 tiled, 3 vec.
int gemm_option(const sdk::Node& node);

class NodeKernel {
 public:
  explicit NodeKernel(const sdk::Node& node)
      : where_(node.op_type() + " node '" + node.name() + "'"), gemm_option_(gemm_option(node)) {}
  const std::string& where() const { return where_; }
  int forced_gemm() const { return gemm_option_; }  // gemm_option() of the node

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
  void check_float(const sdk::Tensor& t, const char* name) const {
    if (t.dtype() != SINGA_ONNX_FLOAT)
      fail(std::string(name) + " has element type " + sdk::dtype_name(t.dtype()) + "; the OpenCL kernel takes float");
  }
  // A size or index the kernels take as int; larger tensors are refused.
  cl_int to_int(int64_t v, const char* what) const;
  // The device environment of a tensor on the opencl device.
  DeviceEnv& env(const sdk::Tensor& t) const;
  // The buffer argument of a tensor on the opencl device.
  Buf buf(const sdk::Tensor& t) const;
  Launch launch(DeviceEnv& env, Program p, const char* kernel) const { return Launch(env, p, kernel, where_); }
  // Copies `bytes` from src to dst on the device queue (nothing when they are
  // the same bytes, as after an in-place output).
  void copy(const sdk::Tensor& dst, const sdk::Tensor& src, size_t bytes) const;

 private:
  std::string where_;
  int gemm_option_;
};

size_t element_size(const sdk::Tensor& t);

// Dims of `shape` as up to 8 ints in a cl_int8 (unused slots 1).
cl_int8 pack8(const std::vector<int64_t>& v, const NodeKernel& k, const char* what);

}  // namespace opencl
}  // namespace singa

#endif
