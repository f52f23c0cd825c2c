#include "cuda_util.hpp"
#include "runtime_option.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>

namespace singa {
namespace cuda {

std::string cuda_message(cudaError_t err, const std::string& what) {
  // Non-sticky errors stay in the last-error slot until read; clear it here
  // because this failure is being reported now.
  (void)cudaGetLastError();
  std::string msg = "cuda: " + what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorNoKernelImageForDevice)
    msg += "; this plugin was built for compute capability 8.0 and 9.0 (sm_80, sm_90)";
  return msg;
}

singa_code cuda_code(cudaError_t err) {
  switch (err) {
    case cudaErrorMemoryAllocation: return SINGA_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice: return SINGA_UNAVAILABLE;
    case cudaErrorInvalidValue: return SINGA_INVALID_ARGUMENT;
    default: return SINGA_INTERNAL;
  }
}

void check_cuda(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) throw sdk::Error(cuda_code(err), cuda_message(err, what));
}

void check_cublas(cublasStatus_t st, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  singa_code code = st == CUBLAS_STATUS_ALLOC_FAILED       ? SINGA_OUT_OF_MEMORY
                    : st == CUBLAS_STATUS_NOT_INITIALIZED ? SINGA_UNAVAILABLE
                    : st == CUBLAS_STATUS_INVALID_VALUE   ? SINGA_INVALID_ARGUMENT
                                                          : SINGA_INTERNAL;
  throw sdk::Error(code, "cublas: " + what + ": " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) + ")");
}

void check_cudnn(cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  singa_code code = st == CUDNN_STATUS_ALLOC_FAILED ? SINGA_OUT_OF_MEMORY
                    : st == CUDNN_STATUS_BAD_PARAM  ? SINGA_INVALID_ARGUMENT
                    : st == CUDNN_STATUS_NOT_SUPPORTED ? SINGA_UNIMPLEMENTED
                                                       : SINGA_INTERNAL;
  throw sdk::Error(code, "cudnn: " + what + ": " + cudnnGetErrorString(st));
}

DeviceGuard::DeviceGuard(int id) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != id) {
    check_cuda(cudaSetDevice(id), "cudaSetDevice(" + std::to_string(id) + ")");
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  // A destructor cannot report; a failing restore leaves the new device
  // current, which is harmless for the core.
  if (switched_ && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

int device_of(const sdk::Context& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    sdk::Tensor t = ctx.input(i);
    if (t.present() && t.raw()->device.device_type == kDLCUDA) return t.raw()->device.device_id;
  }
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  return current;
}

int to_int(int64_t v, const std::string& what) {
  if (v < INT_MIN || v > INT_MAX)
    sdk::fail(what + " = " + std::to_string(v) + " does not fit the 32-bit sizes cuBLAS/cuDNN take", SINGA_UNIMPLEMENTED);
  return int(v);
}

bool allow_tf32() {
  static const bool allow = [] {
    return ops::runtime_flag("cuda.allow_tf32", false);  // runtime option, read at first use
  }();
  return allow;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace cuda
}  // namespace singa
