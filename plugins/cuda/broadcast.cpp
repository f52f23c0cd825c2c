#include "broadcast.hpp"

#include "cuda_util.hpp"

#include <vector>

namespace singa {
namespace cuda {

bool broadcast_shape(const sdk::Shape& a, const sdk::Shape& b, sdk::Shape& out) {
  const size_t r = a.size() > b.size() ? a.size() : b.size();
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return false;
  }
  return true;
}

namespace {

// Element strides of `in` aligned to the right of a rank-r output; 0 on
// broadcast (size-1) dimensions.
std::vector<int64_t> aligned_strides(const sdk::Shape& in, size_t r) {
  std::vector<int64_t> s(r, 0);
  int64_t step = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t i = k + (r - in.size());
    s[i] = in[k] == 1 ? 0 : step;
    step *= in[k];
  }
  return s;
}

}  // namespace

BroadcastPlan make_plan(const sdk::Shape& a, const sdk::Shape& b, const sdk::Shape& out, const std::string& who) {
  BroadcastPlan p;
  p.n = sdk::numel(out);
  const size_t r = out.size();
  std::vector<int64_t> sa = aligned_strides(a, r), sb = aligned_strides(b, r);
  std::vector<int64_t> dims, ga, gb;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;  // contributes nothing to any offset
    // Merge with the previous group when both inputs step through the pair
    // as through one dimension (contiguous, or broadcast in both).
    if (!dims.empty() && ga.back() == sa[i] * out[i] && gb.back() == sb[i] * out[i]) {
      dims.back() *= out[i];
      ga.back() = sa[i];
      gb.back() = sb[i];
      continue;
    }
    dims.push_back(out[i]);
    ga.push_back(sa[i]);
    gb.push_back(sb[i]);
  }
  if (dims.size() > size_t(kMaxBroadcastDims))
    sdk::fail(who + ": broadcasting " + shape_str(a) + " with " + shape_str(b) + " needs " + std::to_string(dims.size()) +
                  " separate dimensions; the CUDA kernel handles " + std::to_string(kMaxBroadcastDims),
              SINGA_UNIMPLEMENTED);
  p.rank = int(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.strides[0][i] = ga[i];
    p.strides[1][i] = gb[i];
  }
  p.same_shape = p.rank == 0 || (p.rank == 1 && ga[0] == 1 && gb[0] == 1);
  return p;
}

}  // namespace cuda
}  // namespace singa
