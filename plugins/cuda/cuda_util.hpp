// cuda_util.hpp - error translation and device selection shared by the CUDA
// device and its kernels. Every CUDA, cuBLAS and cuDNN call goes through one
// of the check_* helpers so that a failure becomes a singa status with the
// library's own error name instead of an abort or a silent wrong answer.
#ifndef SINGA_CUDA_UTIL_HPP
#define SINGA_CUDA_UTIL_HPP

#include <singa/kernel.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

namespace singa {
namespace cuda {

using sdk::Shape;

// "cudaMalloc: cudaErrorMemoryAllocation (out of memory)". Consumes the
// runtime's last-error slot so a handled failure does not resurface at the
// next kernel launch.
std::string cuda_message(cudaError_t err, const std::string& what);
singa_code cuda_code(cudaError_t err);

// Throw sdk::Error (turned into a status at the ABI boundary).
void check_cuda(cudaError_t err, const std::string& what);
void check_cublas(cublasStatus_t st, const std::string& what);
void check_cudnn(cudnnStatus_t st, const std::string& what);

// Makes `id` the calling thread's current device and restores the previous
// one on exit: the host application may rely on its own current device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int id);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

// The CUDA device a kernel runs on: the device of its first input on the
// GPU (the core places all non-host inputs of a node on the node's device).
int device_of(const sdk::Context& ctx);
inline cudaStream_t stream_of(const sdk::Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }

// A 32-bit argument for cuBLAS/cuDNN, or a clear error when it does not fit.
int to_int(int64_t v, const std::string& what);

std::string shape_str(const Shape& s);

// TF32 tensor cores change float results in the 3rd-4th significant digit,
// so cuBLAS and cuDNN use them only with SINGA_CUDA_ALLOW_TF32=1.
bool allow_tf32();

}  // namespace cuda
}  // namespace singa

#endif
