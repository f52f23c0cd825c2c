// strided.hpp - N-d strided copies on the device (Transpose, Slice, Expand,
// Tile, Concat, Split): the host merges dims that both sides walk linearly,
// then one kernel moves the elements.
#ifndef SINGA_CUDA_STRIDED_HPP
#define SINGA_CUDA_STRIDED_HPP

#include "kernels_data.hpp"
#include "ops_common.hpp"

#include <vector>

namespace singa {
namespace cuda {

// Row-major element strides of a contiguous tensor of `shape`.
std::vector<int64_t> contiguous_strides(const sdk::Shape& shape);

// For every index i of `shape`: dst[sum i_k * dst_strides[k]] =
// src[sum i_k * src_strides[k]] (strides in elements). src and dst point at
// the first element (offsets already applied). Fails with UNIMPLEMENTED,
// naming the node, when more than kMaxCopyDims dims remain after merging.
void strided_copy(const sdk::Context& ctx, const NodeKernel& k, size_t elem_size, const sdk::Shape& shape, void* dst,
                  const std::vector<int64_t>& dst_strides, const void* src, const std::vector<int64_t>& src_strides);

}  // namespace cuda
}  // namespace singa

#endif
