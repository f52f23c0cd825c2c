// Slice: attributes starts/ends/axes until opset 9, inputs (with steps) from 10.
// The slice is a strided view of the input, copied out in one strided copy.
#include "common.hpp"
#include "registry.hpp"
#include <slice_rule.hpp>

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
    const SlicePlan plan = plan_slice(x.shape(), starts, ends, axes, steps);
    const Shape& out = plan.out;
    Tensor y = ctx.output(0, out, x.dl_dtype());
    if (y.numel() == 0) return;
    const size_t es = elem_size(x);
    strided_copy(ctx, out, mutable_bytes(y), contiguous_strides(out), bytes(x) + plan.offset * int64_t(es),
                 plan.src_strides, es);
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
