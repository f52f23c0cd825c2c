// Shape and Size: read only the input's shape, so they accept every dtype,
// strings included.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

class ShapeOp : public KernelBase {
 public:
  // start/end exist from opset 15; earlier nodes cannot carry them.
  explicit ShapeOp(const Node& node)
      : KernelBase(node), start_(node.attr_int("start", 0)), has_end_(node.has_attr("end")), end_(node.attr_int("end", 0)) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    const Shape in = x.shape();
    const int64_t r = int64_t(in.size());
    auto clamp_index = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
    int64_t s = clamp_index(start_), e = has_end_ ? clamp_index(end_) : r;
    int64_t n = std::max<int64_t>(0, e - s);
    Tensor y = ctx.output(0, {n}, SINGA_ONNX_INT64);
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = in[size_t(s + i)];
  }

 private:
  int64_t start_;
  bool has_end_;
  int64_t end_;
};

class Size : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    Tensor y = ctx.output(0, {}, SINGA_ONNX_INT64);
    *y.data<int64_t>() = x.numel();
  }
};

}  // namespace

void register_shape_ops(sdk::Registrar& reg) {
  reg.kernel<ShapeOp>("", "Shape", 1, 14, "cpu", {{"T", 0, kAnyTypes}});
  reg.kernel<ShapeOp>("", "Shape", 15, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes}});
  reg.kernel<Size>("", "Size", 1, 17, "cpu", {{"T", 0, kAnyTypes}});
  // Later versions only add element types.
  for (int v : {19, 21, 23, 24, 25}) {
    reg.kernel<ShapeOp>("", "Shape", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types | sdk::kPackedTypes}});
    reg.kernel<Size>("", "Size", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types | sdk::kPackedTypes}});
  }
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
