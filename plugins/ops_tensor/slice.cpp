// Slice: attributes starts/ends/axes until opset 9, inputs (with steps) from 10.
// The slice is a strided view of the input, copied out in one strided copy.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

class Slice : public KernelBase {
 public:
  explicit Slice(const Node& node) : KernelBase(node), from_attrs_(node.opset() < 10) {
    if (from_attrs_) {
      if (!node.has_attr("starts") || !node.has_attr("ends")) sdk::fail("attributes 'starts' and 'ends' are required");
      starts_ = node.attr_ints("starts");
      ends_ = node.attr_ints("ends");
      axes_ = node.attr_ints("axes");
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!from_attrs_) {
      starts = read_ints(required(ctx, 1, "starts"), "starts");
      ends = read_ints(required(ctx, 2, "ends"), "ends");
      if (ctx.has_input(3)) axes = read_ints(ctx.input(3), "axes");
      if (ctx.has_input(4)) steps = read_ints(ctx.input(4), "steps");
    }
    const size_t n = starts.size();
    check(ends.size() == n, "starts " + ints_str(starts) + " and ends " + ints_str(ends) + " differ in length");
    if (axes.empty())
      for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(n, 1);
    check(axes.size() == n && steps.size() == n,
          "axes " + ints_str(axes) + " and steps " + ints_str(steps) + " must have " + std::to_string(n) + " entries");

    const Shape in = x.shape();
    const Shape in_strides = contiguous_strides(in);
    Shape out = in, src_strides = in_strides;
    int64_t offset = 0;
    std::vector<bool> seen(in.size(), false);
    for (size_t i = 0; i < n; ++i) {
      const size_t a = size_t(normalize_axis(axes[i], int64_t(in.size()), "axis"));
      check(!seen[a], "axes " + ints_str(axes) + " repeat an axis");
      seen[a] = true;
      const int64_t step = steps[i], dim = in[a];
      check(step != 0, "steps " + ints_str(steps) + " contain 0");
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
      out[a] = len;
      if (len > 0) offset += s * in_strides[a];
      src_strides[a] = in_strides[a] * step;
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
    if (y.numel() == 0) return;
    const size_t es = elem_size(x);
    strided_copy(ctx, out, mutable_bytes(y), contiguous_strides(out), bytes(x) + offset * int64_t(es), src_strides, es);
  }

 private:
  bool from_attrs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

}  // namespace

void register_slice(sdk::Registrar& reg) {
  reg.kernel<Slice>("", "Slice", 1, 9, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<Slice>("", "Slice", 10, 17, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}}, 0,
                    input_bit(1) | input_bit(2) | input_bit(3) | input_bit(4));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
