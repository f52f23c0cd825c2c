// device_common.cuh - launch geometry and block reductions shared by the
// plugin's .cu files (kernels*.cu). All loops are grid-stride loops over
// 64-bit indices, so any size works with a bounded grid.
#ifndef SINGA_CUDA_DEVICE_COMMON_CUH
#define SINGA_CUDA_DEVICE_COMMON_CUH

#include <cuda_runtime.h>

#include <cstdint>

namespace singa {
namespace cuda {
namespace dev {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535LL * 32;

inline int blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return int(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

// One block per row: as many blocks as rows, up to the grid limit.
inline int row_blocks(int64_t rows) { return int(rows < kMaxBlocks ? (rows < 1 ? 1 : rows) : kMaxBlocks); }

// Threads per block for a row of n elements: small rows waste fewer lanes.
inline int row_threads(int64_t n) { return n <= 32 ? 32 : n <= 64 ? 64 : n <= 128 ? 128 : kThreads; }

// Errors of unrelated earlier calls must not be blamed on this launch.
inline void clear_stale_error() { (void)cudaGetLastError(); }

__device__ __forceinline__ int64_t global_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return int64_t(blockDim.x) * gridDim.x; }

__device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct SumOp {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  template <class T>
  __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` holds 32 values.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity, T* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // the previous reduction's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

// Offsets of output element i in up to three broadcast inputs.
template <int K, class Plan>
__device__ __forceinline__ void plan_offsets(const Plan& p, int64_t i, int64_t (&off)[K]) {
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = i / p.dims[d];
    const int64_t idx = i - q * p.dims[d];
    i = q;
    for (int k = 0; k < K; ++k) off[k] += idx * p.strides[k][d];
  }
}

}  // namespace dev
}  // namespace cuda
}  // namespace singa

#endif
