// slice_rule.hpp - ONNX Slice's window (negative and out-of-range starts/ends
// clamped per step direction, negative steps, axes in any order) as an offset
// and strides into the input, shared by every device's Slice kernel.
#ifndef SINGA_PLUGINS_SLICE_RULE_HPP
#define SINGA_PLUGINS_SLICE_RULE_HPP

#include "broadcast.hpp"

#include <singa/kernel.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace ops {

struct SlicePlan {
  sdk::Shape out;                    // the output's shape
  std::vector<int64_t> src_strides;  // input elements between neighbours of each output axis
  int64_t offset = 0;                // input element of the output's first element
};

// `axes` and `steps` may be empty (all leading axes, steps of 1).
inline SlicePlan plan_slice(const sdk::Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                            std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const size_t n = starts.size();
  sdk::check(ends.size() == n, "starts " + shape_str(starts) + " and ends " + shape_str(ends) + " differ in length");
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(n, 1);
  sdk::check(axes.size() == n && steps.size() == n,
             "axes " + shape_str(axes) + " and steps " + shape_str(steps) + " must have " + std::to_string(n) + " entries");
  const int64_t rank = int64_t(in.size());
  std::vector<int64_t> in_strides(in.size(), 1);
  for (size_t i = in.size(); i-- > 1;) in_strides[i - 1] = in_strides[i] * in[i];
  SlicePlan p{in, in_strides, 0};
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < n; ++i) {
    sdk::check(axes[i] >= -rank && axes[i] < rank,
               "axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(rank));
    const size_t a = size_t(axes[i] < 0 ? axes[i] + rank : axes[i]);
    sdk::check(!seen[a], "axes " + shape_str(axes) + " repeat an axis");
    seen[a] = true;
    const int64_t step = steps[i], dim = in[a];
    sdk::check(step != 0, "steps " + shape_str(steps) + " contain 0");
    int64_t s = starts[i], e = ends[i], len;
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e - 1) / -step + 1 : 0;
    }
    p.out[a] = len;
    if (len > 0) p.offset += s * in_strides[a];
    p.src_strides[a] = in_strides[a] * step;
  }
  return p;
}

}  // namespace ops
}  // namespace singa
#endif
