// handles.hpp - cuBLAS and cuDNN handles for concurrent kernels.
//
// A handle is not safe to use from two threads at once, and creating one is
// slow (cudnnCreate takes tens of milliseconds). Kernels therefore lease a
// handle for one compute call from a per-device free list: concurrent calls
// get distinct handles, sequential calls reuse the same few. A lease sets the
// call's stream on the handle.
#ifndef SINGA_CUDA_HANDLES_HPP
#define SINGA_CUDA_HANDLES_HPP

#include "cuda_util.hpp"

#include <map>
#include <mutex>
#include <vector>

namespace singa {
namespace cuda {

template <class H>
class HandlePool {
 public:
  // Leases a handle on `device` (the current device must be `device`).
  H acquire(int device);
  void release(int device, H h);
  // Destroys every idle handle (plugin shutdown).
  void destroy_all();

 private:
  std::mutex mu_;
  std::map<int, std::vector<H>> idle_;
};

HandlePool<cublasHandle_t>& cublas_pool();
HandlePool<cudnnHandle_t>& cudnn_pool();

template <class H>
class Lease {
 public:
  Lease(HandlePool<H>& pool, int device, cudaStream_t stream);
  ~Lease() { pool_.release(device_, h_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  H get() const { return h_; }

 private:
  HandlePool<H>& pool_;
  int device_;
  H h_;
};

// The handle of one compute call, bound to `stream` on `device`.
struct Cublas : Lease<cublasHandle_t> {
  Cublas(int device, cudaStream_t stream) : Lease(cublas_pool(), device, stream) {}
};
struct Cudnn : Lease<cudnnHandle_t> {
  Cudnn(int device, cudaStream_t stream) : Lease(cudnn_pool(), device, stream) {}
};

}  // namespace cuda
}  // namespace singa

#endif
