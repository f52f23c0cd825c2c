// Ops that change a tensor's shape but not its bytes: Reshape, Flatten,
// Squeeze, Unsqueeze, Identity. They are registered as may-run-in-place, so
// the output usually shares the input's buffer and nothing is copied.
#include "reshape_rule.hpp"
#include "common.hpp"
#include "squeeze_rules.hpp"
#include "registry.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

// Writes x's bytes under `shape` (no copy when the host gave x's buffer back).
void emit_reshaped(const Context& ctx, const Tensor& x, const Shape& shape) {
  Tensor y = ctx.output(0, shape, x.dl_dtype());
  parallel_memcpy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * elem_size(x));
}

class Reshape : public KernelBase {
 public:
  explicit Reshape(const Node& node) : KernelBase(node), allowzero_(node.attr_int("allowzero", 0) != 0) {
    // Reshape-1 carried the target shape as an attribute; from 5 it is input 1.
    if (node.opset() < 5) {
      if (!node.has_attr("shape")) sdk::fail("attribute 'shape' is required before opset 5");
      attr_shape_ = node.attr_ints("shape");
      from_attr_ = true;
    }
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    std::vector<int64_t> spec = from_attr_ ? attr_shape_ : read_ints(required(ctx, 1, "shape"), "shape");
    emit_reshaped(ctx, x, target(x.shape(), spec));
  }

 private:
  Shape target(const Shape& in, const std::vector<int64_t>& spec) const { return ::singa::ops::reshape_target(in, spec, allowzero_); }

  bool allowzero_;
  bool from_attr_ = false;
  std::vector<int64_t> attr_shape_;
};

class Flatten : public KernelBase {
 public:
  explicit Flatten(const Node& node) : KernelBase(node), axis_(node.attr_int("axis", 1)) {}

  void compute(Context& ctx) const {
    auto x = required(ctx, 0, "input");
    emit_reshaped(ctx, x, ops::flatten_shape(x.shape(), axis_));
  }

 private:
  int64_t axis_;
};

// Squeeze and Unsqueeze (plugins/common/squeeze_rules.hpp).
class AxesKernel : public KernelBase {
 public:
  explicit AxesKernel(const Node& node) : KernelBase(node), axes_(node) {}

 protected:
  // The axes, or false when none are given.
  bool axes(const sdk::Context& ctx, std::vector<int64_t>& out) const {
    return axes_.get(ctx, [&](const sdk::Tensor& t) { return read_ints(t, "axes"); }, out);
  }

 private:
  ops::SqueezeAxes axes_;
};

class Squeeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(Context& ctx) const {
    auto x = required(ctx, 0, "data");
    std::vector<int64_t> given;
    const bool has = axes(ctx, given);
    emit_reshaped(ctx, x, ops::squeeze_shape(x.shape(), has ? &given : nullptr));
  }
};

class Unsqueeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(Context& ctx) const {
    auto x = required(ctx, 0, "data");
    std::vector<int64_t> given;
    check(axes(ctx, given), "axes are required");
    emit_reshaped(ctx, x, ops::unsqueeze_shape(x.shape(), given));
  }
};

class Identity : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    emit_reshaped(ctx, x, x.shape());
  }
};

}  // namespace

void register_reshape_ops(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<Reshape>("", "Reshape", 1, 4, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  reg.kernel<Reshape>("", "Reshape", 5, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace, input_bit(1));
  reg.kernel<Flatten>("", "Flatten", 1, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  reg.kernel<Squeeze>("", "Squeeze", 1, 12, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  reg.kernel<Squeeze>("", "Squeeze", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes}}, inplace, input_bit(1));
  reg.kernel<Unsqueeze>("", "Unsqueeze", 1, 12, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  reg.kernel<Unsqueeze>("", "Unsqueeze", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes}}, inplace, input_bit(1));
  reg.kernel<Identity>("", "Identity", 1, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  // Graphs run OptionalGetElement in the core; this kernel serves eager
  // autograd (training), where a value is a tensor (allowed from opset 18).
  reg.kernel<Identity>("", "OptionalGetElement", 18, SINGA_VERSION_OPEN, "cpu", {{"V", 0, kAnyTypes}}, inplace);
  // Later versions only add element types (float8, int4, ...; not handled here).
  for (int v : {19, 21, 23, 24, 25}) {
    reg.kernel<Reshape>("", "Reshape", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types}}, inplace, input_bit(1));
    reg.kernel<Identity>("", "Identity", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types}}, inplace);
  }
  for (int v : {21, 23, 24, 25}) {
    reg.kernel<Flatten>("", "Flatten", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types}}, inplace);
    reg.kernel<Squeeze>("", "Squeeze", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types}}, inplace, input_bit(1));
    reg.kernel<Unsqueeze>("", "Unsqueeze", v, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kAnyTypes | sdk::kFloat8Types}}, inplace, input_bit(1));
  }
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
