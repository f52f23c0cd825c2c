// libsinga_dist_nccl.so: NCCL all-reduce on one CUDA stream per communicator.
// The stream is a blocking one, so it runs after the work of the legacy
// default stream on which the CUDA plugin computes the gradients.
#include "nccl_abi.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

struct Comm {
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
};

int fail(char* err, size_t n, const char* what, const char* why) {
  std::snprintf(err, n, "%s: %s", what, why);
  return 1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int singa_nccl_id(unsigned char* id, char* err, size_t errlen) {
  static_assert(sizeof(ncclUniqueId) == SINGA_NCCL_ID_BYTES, "NCCL unique id size");
  ncclUniqueId u;
  ncclResult_t r = ncclGetUniqueId(&u);
  if (r != ncclSuccess) return fail(err, errlen, "ncclGetUniqueId", ncclGetErrorString(r));
  std::memcpy(id, &u, sizeof u);
  return 0;
}

__attribute__((visibility("default"))) int singa_nccl_init(void** out, const unsigned char* id, int nranks, int rank,
                                                           int device, char* err, size_t errlen) {
  cudaError_t c = cudaSetDevice(device);
  if (c != cudaSuccess) return fail(err, errlen, "cudaSetDevice", cudaGetErrorString(c));
  auto* comm = new Comm;
  comm->device = device;
  c = cudaStreamCreate(&comm->stream);
  if (c != cudaSuccess) {
    delete comm;
    return fail(err, errlen, "cudaStreamCreate", cudaGetErrorString(c));
  }
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  ncclResult_t r = ncclCommInitRank(&comm->nccl, nranks, u, rank);
  if (r != ncclSuccess) {
    cudaStreamDestroy(comm->stream);
    delete comm;
    return fail(err, errlen, "ncclCommInitRank", ncclGetErrorString(r));
  }
  *out = comm;
  return 0;
}

__attribute__((visibility("default"))) int singa_nccl_allreduce_avg(void* handle, void* const* bufs, const size_t* counts,
                                                                    int n, char* err, size_t errlen) {
  auto* comm = static_cast<Comm*>(handle);
  cudaSetDevice(comm->device);
  ncclGroupStart();
  for (int i = 0; i < n; ++i) {
    ncclResult_t r = ncclAllReduce(bufs[i], bufs[i], counts[i], ncclFloat32, ncclAvg, comm->nccl, comm->stream);
    if (r != ncclSuccess) {
      ncclGroupEnd();
      return fail(err, errlen, "ncclAllReduce", ncclGetErrorString(r));
    }
  }
  ncclResult_t r = ncclGroupEnd();
  if (r != ncclSuccess) return fail(err, errlen, "ncclGroupEnd", ncclGetErrorString(r));
  return 0;
}

__attribute__((visibility("default"))) int singa_nccl_wait(void* handle, double timeout_s, char* err, size_t errlen) {
  auto* comm = static_cast<Comm*>(handle);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    cudaError_t c = cudaStreamQuery(comm->stream);
    if (c == cudaSuccess) return 0;
    if (c != cudaErrorNotReady) return fail(err, errlen, "NCCL stream", cudaGetErrorString(c));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm->nccl, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm->nccl);
      comm->nccl = nullptr;
      return fail(err, errlen, "NCCL", ncclGetErrorString(async));
    }
    if (std::chrono::steady_clock::now() > end) {
      ncclCommAbort(comm->nccl);
      comm->nccl = nullptr;
      return fail(err, errlen, "NCCL all-reduce", "timed out (a rank is dead or stuck); communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

__attribute__((visibility("default"))) void singa_nccl_destroy(void* handle) {
  auto* comm = static_cast<Comm*>(handle);
  if (!comm) return;
  if (comm->nccl) ncclCommDestroy(comm->nccl);
  if (comm->stream) cudaStreamDestroy(comm->stream);
  delete comm;
}

}  // extern "C"
