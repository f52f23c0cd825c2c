#include "probe.hpp"

#include <cuda_runtime.h>

namespace singa {
namespace cuda {

int probe_devices(std::string& why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // a handled failure must not resurface at the next call
    why = std::string("cuda: cudaGetDeviceCount: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
    if (err == cudaErrorInsufficientDriver) {
      int runtime = 0;
      (void)cudaRuntimeGetVersion(&runtime);
      why += "; the NVIDIA driver (libcuda.so.1) is missing or older than CUDA runtime " + std::to_string(runtime / 1000) +
             "." + std::to_string(runtime % 1000 / 10);
    }
    return 0;
  }
  if (n <= 0) {
    why = "cuda: no CUDA-capable device is detected";
    return 0;
  }
  return n;
}

}  // namespace cuda
}  // namespace singa
