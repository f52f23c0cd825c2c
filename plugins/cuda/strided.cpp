#include "strided.hpp"

namespace singa {
namespace cuda {

std::vector<int64_t> contiguous_strides(const sdk::Shape& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

void strided_copy(const sdk::Context& ctx, const NodeKernel& k, size_t elem_size, const sdk::Shape& shape, void* dst,
                  const std::vector<int64_t>& dst_strides, const void* src, const std::vector<int64_t>& src_strides) {
  CopyPlan p;
  p.n = sdk::numel(shape);
  if (p.n <= 0) return;
  // Unit dims move nothing; a dim merges into its outer neighbour when both
  // sides stay linear across the pair.
  std::vector<int64_t> dims, ds, ss;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!dims.empty() && ds.back() == dst_strides[i] * shape[i] && ss.back() == src_strides[i] * shape[i]) {
      dims.back() *= shape[i];
      ds.back() = dst_strides[i];
      ss.back() = src_strides[i];
      continue;
    }
    dims.push_back(shape[i]);
    ds.push_back(dst_strides[i]);
    ss.push_back(src_strides[i]);
  }
  if (dims.size() > size_t(kMaxCopyDims))
    k.fail("the copy needs " + std::to_string(dims.size()) + " separate dimensions; the CUDA kernel handles " +
               std::to_string(kMaxCopyDims),
           SINGA_UNIMPLEMENTED);
  p.rank = int(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.dst_strides[i] = ds[i];
    p.src_strides[i] = ss[i];
  }
  // A contiguous copy of the whole range is a memcpy.
  if (p.rank == 0 || (p.rank == 1 && ds[0] == 1 && ss[0] == 1)) {
    device_copy(ctx, dst, src, size_t(p.n) * elem_size, k.where());
    return;
  }
  k.check_launch(launch_strided_copy(elem_size, src, dst, p, stream_of(ctx)), "strided copy kernel");
}

}  // namespace cuda
}  // namespace singa
