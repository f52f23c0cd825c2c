// reduce_plan.hpp - how a reduction over a set of axes walks its input.
//
// The input's dims are coalesced into alternating kept/reduced groups (size-1
// dims vanish). A trailing kept group becomes the contiguous `inner` run, so
// reducing a leading axis (e.g. axis 0 of [N, C]) still reads memory in order:
// each output block accumulates `inner` neighbours at once.
#ifndef SINGA_OPS_REDUCE_PLAN_HPP
#define SINGA_OPS_REDUCE_PLAN_HPP

#include "reduce_common.hpp"

namespace singa {
namespace ops {
namespace reduce {

struct ReducePlan {
  Shape out_shape;
  int64_t outer = 1;                               // kept positions outside the inner run
  int64_t inner = 1;                               // contiguous kept elements at the end
  int64_t count = 1;                               // input elements folded into each output
  std::vector<int64_t> outer_dims, outer_strides;  // kept groups, outermost first
  std::vector<int64_t> red_dims, red_strides;      // reduced groups, outermost first

  // Input offset of outer position o (row-major over outer_dims).
  int64_t outer_offset(int64_t o) const {
    int64_t off = 0;
    for (size_t i = outer_dims.size(); i-- > 0;) {
      off += (o % outer_dims[i]) * outer_strides[i];
      o /= outer_dims[i];
    }
    return off;
  }

  // Calls f(offset, n, stride) for each run of n reduced elements (the
  // innermost reduced group) relative to `base`, in memory order as far as
  // the layout allows.
  template <typename F> void visit_runs(int64_t base, F&& f) const {
    if (red_dims.empty()) {
      f(base, int64_t(1), int64_t(1));
      return;
    }
    if (count == 0) return;
    const size_t last = red_dims.size() - 1;
    const int64_t n_last = red_dims[last], s_last = red_strides[last];
    std::vector<int64_t> idx(last, 0);
    int64_t off = base;
    for (int64_t r = 0, runs = count / n_last; r < runs; ++r) {
      f(off, n_last, s_last);
      for (size_t i = last; i-- > 0;) {
        off += red_strides[i];
        if (++idx[i] < red_dims[i]) break;
        off -= red_strides[i] * red_dims[i];
        idx[i] = 0;
      }
    }
  }
};

// `reduce[d]` marks the axes folded away; keepdims leaves them as size 1.
inline ReducePlan make_plan(const Shape& in, const std::vector<bool>& reduce, bool keepdims) {
  ReducePlan p;
  std::vector<int64_t> gdims;
  std::vector<bool> gred;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduce[d]) {
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(in[d]);
    }
    if (in[d] == 1) continue;
    if (!gdims.empty() && gred.back() == reduce[d]) {
      gdims.back() *= in[d];
    } else {
      gdims.push_back(in[d]);
      gred.push_back(reduce[d]);
    }
  }
  std::vector<int64_t> gstrides(gdims.size());
  int64_t st = 1;
  for (size_t i = gdims.size(); i-- > 0;) {
    gstrides[i] = st;
    st *= gdims[i];
  }
  if (!gdims.empty() && !gred.back()) {
    p.inner = gdims.back();
    gdims.pop_back();
    gred.pop_back();
    gstrides.pop_back();
  }
  for (size_t i = 0; i < gdims.size(); ++i) {
    if (gred[i]) {
      p.red_dims.push_back(gdims[i]);
      p.red_strides.push_back(gstrides[i]);
      p.count *= gdims[i];
    } else {
      p.outer_dims.push_back(gdims[i]);
      p.outer_strides.push_back(gstrides[i]);
      p.outer *= gdims[i];
    }
  }
  return p;
}

// Turns ONNX `axes` into a per-dim mask; empty axes mean every axis.
// Duplicates and out-of-range values fail naming the value.
inline std::vector<bool> axes_mask(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    int64_t d = normalize_axis(a, rank, "axes value");
    if (mask[size_t(d)]) sdk::fail("axes value " + std::to_string(a) + " names an axis twice");
    mask[size_t(d)] = true;
  }
  return mask;
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
