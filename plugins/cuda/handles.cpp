#include "handles.hpp"

namespace singa {
namespace cuda {

namespace {

void create(cublasHandle_t* h, int device) {
  check_cublas(cublasCreate(h), "cublasCreate on device " + std::to_string(device));
  if (allow_tf32()) {
    cublasStatus_t st = cublasSetMathMode(*h, CUBLAS_TF32_TENSOR_OP_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      (void)cublasDestroy(*h);
      check_cublas(st, "cublasSetMathMode");
    }
  }
}
void create(cudnnHandle_t* h, int device) {
  check_cudnn(cudnnCreate(h), "cudnnCreate on device " + std::to_string(device));
}
void destroy(cublasHandle_t h) { (void)cublasDestroy(h); }
void destroy(cudnnHandle_t h) { (void)cudnnDestroy(h); }
void bind(cublasHandle_t h, cudaStream_t s) { check_cublas(cublasSetStream(h, s), "cublasSetStream"); }
void bind(cudnnHandle_t h, cudaStream_t s) { check_cudnn(cudnnSetStream(h, s), "cudnnSetStream"); }

}  // namespace

template <class H>
H HandlePool<H>::acquire(int device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = idle_[device];
    if (!list.empty()) {
      H h = list.back();
      list.pop_back();
      return h;
    }
  }
  // Created outside the lock: creation is slow and other devices' kernels
  // should not wait for it.
  H h{};
  create(&h, device);
  return h;
}

template <class H>
void HandlePool<H>::release(int device, H h) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_[device].push_back(h);
}

template <class H>
void HandlePool<H>::destroy_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : idle_) {
    int previous = 0;
    bool have_previous = cudaGetDevice(&previous) == cudaSuccess;
    // Handles are bound to the device they were created on.
    if (cudaSetDevice(entry.first) == cudaSuccess)
      for (H h : entry.second) destroy(h);
    if (have_previous) (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
  }
  idle_.clear();
}

template class HandlePool<cublasHandle_t>;
template class HandlePool<cudnnHandle_t>;

// Never destroyed with static destructors: at process exit the CUDA runtime
// may be torn down before them. Plugin shutdown destroys idle handles.
HandlePool<cublasHandle_t>& cublas_pool() {
  static auto* p = new HandlePool<cublasHandle_t>();
  return *p;
}
HandlePool<cudnnHandle_t>& cudnn_pool() {
  static auto* p = new HandlePool<cudnnHandle_t>();
  return *p;
}

template <class H>
Lease<H>::Lease(HandlePool<H>& pool, int device, cudaStream_t stream)
    : pool_(pool), device_(device), h_(pool.acquire(device)) {
  try {
    bind(h_, stream);
  } catch (...) {
    pool_.release(device_, h_);
    throw;
  }
}

template class Lease<cublasHandle_t>;
template class Lease<cudnnHandle_t>;

}  // namespace cuda
}  // namespace singa
