// kernels_data.hpp - data movement (kernels_data.cu). These kernels move
// elements without looking at them, so they work on the element size alone
// (1, 2, 4 or 8 bytes): one path serves every fixed-size type.
#ifndef SINGA_CUDA_KERNELS_DATA_HPP
#define SINGA_CUDA_KERNELS_DATA_HPP

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace singa {
namespace cuda {

// dst[sum i_k * dst_strides[k]] = src[sum i_k * src_strides[k]] for every
// index i of dims (strides in elements; source strides may be 0 to
// broadcast or negative for reversed slices). strided.hpp builds the plan
// with adjacent dims merged; Tile's view doubles the rank, hence 2 x 8.
constexpr int kMaxCopyDims = 16;
struct CopyPlan {
  int rank = 0;
  int64_t n = 0;  // elements to copy
  int64_t dims[kMaxCopyDims] = {};
  int64_t src_strides[kMaxCopyDims] = {}, dst_strides[kMaxCopyDims] = {};
};
cudaError_t launch_strided_copy(size_t elem_size, const void* src, void* dst, const CopyPlan& plan, cudaStream_t stream);

// Gather along an axis of x viewed as [outer, dim, inner]: y[o, j, i] =
// x[o, idx[j], i]; idx holds n_idx device int64 indices already in [0, dim).
cudaError_t launch_gather(size_t elem_size, const void* x, const int64_t* idx, void* y, int64_t outer, int64_t dim,
                          int64_t n_idx, int64_t inner, cudaStream_t stream);

// Pad (negative pads crop). Each output coordinate maps to a source
// coordinate per axis: inside, edge-clamped, reflected, or (constant) the fill.
enum class PadMode { kConstant, kReflect, kEdge };
constexpr int kMaxPadDims = 16;
struct PadPlan {
  int rank = 0;
  int64_t n = 0;  // output elements
  int64_t out[kMaxPadDims] = {}, in[kMaxPadDims] = {}, begin[kMaxPadDims] = {};
  PadMode mode = PadMode::kConstant;
  uint64_t value = 0;  // the fill element's bytes (low elem_size bytes)
};
cudaError_t launch_pad(size_t elem_size, const void* x, void* y, const PadPlan& plan, cudaStream_t stream);

// y[0 .. n) = the element whose bytes are the low elem_size bytes of value.
cudaError_t launch_fill(size_t elem_size, void* y, int64_t n, uint64_t value, cudaStream_t stream);

}  // namespace cuda
}  // namespace singa

#endif
