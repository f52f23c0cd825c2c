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

BroadcastPlan make_plan(const std::vector<sdk::Shape>& inputs, const sdk::Shape& out, const std::string& who) {
  const size_t k = inputs.size();
  if (k < 1 || k > size_t(kMaxBroadcastInputs))
    sdk::fail(who + ": a broadcast plan takes 1 to " + std::to_string(kMaxBroadcastInputs) + " inputs", SINGA_INTERNAL);
  BroadcastPlan p;
  p.n = sdk::numel(out);
  const size_t r = out.size();
  std::vector<std::vector<int64_t>> s(k), g(k);
  for (size_t j = 0; j < k; ++j) s[j] = aligned_strides(inputs[j], r);
  std::vector<int64_t> dims;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;  // contributes nothing to any offset
    // Merge with the previous group when every input steps through the pair
    // as through one dimension (contiguous, or broadcast in all).
    bool merge = !dims.empty();
    for (size_t j = 0; merge && j < k; ++j) merge = g[j].back() == s[j][i] * out[i];
    if (merge) {
      dims.back() *= out[i];
      for (size_t j = 0; j < k; ++j) g[j].back() = s[j][i];
      continue;
    }
    dims.push_back(out[i]);
    for (size_t j = 0; j < k; ++j) g[j].push_back(s[j][i]);
  }
  if (dims.size() > size_t(kMaxBroadcastDims)) {
    std::string shapes;
    for (size_t j = 0; j < k; ++j) shapes += (j ? " with " : "") + shape_str(inputs[j]);
    sdk::fail(who + ": broadcasting " + shapes + " needs " + std::to_string(dims.size()) +
                  " separate dimensions; the CUDA kernel handles " + std::to_string(kMaxBroadcastDims),
              SINGA_UNIMPLEMENTED);
  }
  p.rank = int(dims.size());
  p.same_shape = true;
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    for (size_t j = 0; j < k; ++j) p.strides[j][i] = g[j][i];
  }
  if (p.rank > 1) p.same_shape = false;
  for (size_t j = 0; p.rank == 1 && j < k; ++j) p.same_shape = p.same_shape && g[j][0] == 1;
  return p;
}

BroadcastPlan make_plan(const sdk::Shape& a, const sdk::Shape& b, const sdk::Shape& out, const std::string& who) {
  return make_plan(std::vector<sdk::Shape>{a, b}, out, who);
}

}  // namespace cuda
}  // namespace singa
