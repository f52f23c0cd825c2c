// Data movement: strided copies (Transpose, Slice, Expand, Tile, Concat,
// Split), Gather, Pad and fills. Elements are moved as unsigned integers of
// their size.
#include "device_common.cuh"
#include "kernels_data.hpp"

namespace singa {
namespace cuda {

using namespace dev;

namespace {

template <class F>
cudaError_t by_size(size_t es, F&& f) {
  switch (es) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

template <class E>
__global__ void strided_copy_kernel(const E* src, E* dst, CopyPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t r = i, so = 0, d = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      const int64_t q = r / p.dims[k];
      const int64_t idx = r - q * p.dims[k];
      r = q;
      so += idx * p.src_strides[k];
      d += idx * p.dst_strides[k];
    }
    dst[d] = src[so];
  }
}

template <class E>
__global__ void gather_kernel(const E* x, const int64_t* idx, E* y, int64_t outer, int64_t dim, int64_t n_idx,
                              int64_t inner) {
  const int64_t n = outer * n_idx * inner;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t k = i % inner, r = i / inner;
    const int64_t j = r % n_idx, o = r / n_idx;
    y[i] = x[(o * dim + idx[j]) * inner + k];
  }
}

// Source index along an axis of size n for padded coordinate i, or -1 (fill);
// as ops_tensor/pad.cpp.
__device__ __forceinline__ int64_t pad_source(PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - m;
    }
    default: return -1;
  }
}

template <class E>
__global__ void pad_kernel(const E* x, E* y, PadPlan p, E fill) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t r = i, src = 0, step = 1;
    bool inside = true;
    for (int k = p.rank - 1; k >= 0; --k) {
      const int64_t q = r / p.out[k];
      const int64_t s = pad_source(p.mode, r - q * p.out[k] - p.begin[k], p.in[k]);
      r = q;
      if (s < 0) inside = false;
      src += s * step;
      step *= p.in[k];
    }
    y[i] = inside ? x[src] : fill;
  }
}

template <class E>
__global__ void fill_kernel(E* y, int64_t n, E v) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = v;
}

}  // namespace

cudaError_t launch_strided_copy(size_t elem_size, const void* src, void* dst, const CopyPlan& plan, cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  return by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    strided_copy_kernel<E><<<blocks_for(plan.n), kThreads, 0, stream>>>(static_cast<const E*>(src),
                                                                        static_cast<E*>(dst), plan);
    return cudaGetLastError();
  });
}

cudaError_t launch_gather(size_t elem_size, const void* x, const int64_t* idx, void* y, int64_t outer, int64_t dim,
                          int64_t n_idx, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * n_idx * inner;
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    gather_kernel<E><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const E*>(x), idx, static_cast<E*>(y), outer,
                                                             dim, n_idx, inner);
    return cudaGetLastError();
  });
}

cudaError_t launch_pad(size_t elem_size, const void* x, void* y, const PadPlan& plan, cudaStream_t stream) {
  if (plan.n <= 0) return cudaSuccess;
  clear_stale_error();
  return by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    pad_kernel<E><<<blocks_for(plan.n), kThreads, 0, stream>>>(static_cast<const E*>(x), static_cast<E*>(y), plan,
                                                               E(plan.value));
    return cudaGetLastError();
  });
}

cudaError_t launch_fill(size_t elem_size, void* y, int64_t n, uint64_t value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return by_size(elem_size, [&](auto tag) {
    using E = decltype(tag);
    fill_kernel<E><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<E*>(y), n, E(value));
    return cudaGetLastError();
  });
}

}  // namespace cuda
}  // namespace singa
