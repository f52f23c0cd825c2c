// Ops that change a tensor's shape but not its bytes: Reshape, Flatten,
// Squeeze, Unsqueeze, Identity. They are registered as may-run-in-place, so
// the output usually shares the input's buffer and nothing is copied.
#include "reshape_rule.hpp"
#include "common.hpp"
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
    Tensor x = required(ctx, 0, "input");
    Shape in = x.shape();
    int64_t r = int64_t(in.size());
    check(axis_ >= -r && axis_ <= r,
          "axis " + std::to_string(axis_) + " is out of range for input of shape " + shape_str(in));
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= in[size_t(i)];
    emit_reshaped(ctx, x, {outer, inner});
  }

 private:
  int64_t axis_;
};

// Squeeze and Unsqueeze: axes are an attribute until opset 12, input 1 from 13.
class AxesKernel : public KernelBase {
 public:
  explicit AxesKernel(const Node& node) : KernelBase(node), axes_in_input_(node.opset() >= 13) {
    if (!axes_in_input_) {
      has_attr_axes_ = node.has_attr("axes");
      attr_axes_ = node.attr_ints("axes");
    }
  }

 protected:
  // The axes, or false when none are given.
  bool axes(const Context& ctx, std::vector<int64_t>& out) const {
    if (!axes_in_input_) {
      out = attr_axes_;
      return has_attr_axes_;
    }
    if (!ctx.has_input(1)) return false;
    out = read_ints(ctx.input(1), "axes");
    return true;
  }
  // Normalises axes against `rank` and rejects duplicates.
  std::vector<int64_t> normalized(std::vector<int64_t> axes, int64_t rank) const {
    for (int64_t& a : axes) a = normalize_axis(a, rank, "axis");
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    check(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "axes " + ints_str(axes) + " repeat an axis");
    return sorted;
  }

 private:
  bool axes_in_input_;
  bool has_attr_axes_ = false;
  std::vector<int64_t> attr_axes_;
};

class Squeeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    Shape in = x.shape(), out;
    std::vector<int64_t> given;
    if (!axes(ctx, given)) {
      for (int64_t d : in)
        if (d != 1) out.push_back(d);
    } else {
      std::vector<int64_t> ax = normalized(given, int64_t(in.size()));
      for (size_t i = 0; i < in.size(); ++i) {
        bool drop = std::binary_search(ax.begin(), ax.end(), int64_t(i));
        check(!drop || in[i] == 1, "cannot squeeze axis " + std::to_string(i) + " of size " + std::to_string(in[i]) +
                                       " (input shape " + shape_str(in) + ")");
        if (!drop) out.push_back(in[i]);
      }
    }
    emit_reshaped(ctx, x, out);
  }
};

class Unsqueeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data");
    Shape in = x.shape();
    std::vector<int64_t> given;
    check(axes(ctx, given), "axes are required");
    int64_t rank = int64_t(in.size() + given.size());
    check(rank <= SINGA_MAX_DIMS, "result rank " + std::to_string(rank) + " exceeds " + std::to_string(SINGA_MAX_DIMS));
    std::vector<int64_t> ax = normalized(given, rank);
    Shape out;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i)
      out.push_back(std::binary_search(ax.begin(), ax.end(), i) ? 1 : in[next++]);
    emit_reshaped(ctx, x, out);
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
  reg.kernel<Squeeze>("", "Squeeze", 13, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace, input_bit(1));
  reg.kernel<Unsqueeze>("", "Unsqueeze", 1, 12, "cpu", {{"T", 0, kAnyTypes}}, inplace);
  reg.kernel<Unsqueeze>("", "Unsqueeze", 13, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace, input_bit(1));
  reg.kernel<Identity>("", "Identity", 1, 17, "cpu", {{"T", 0, kAnyTypes}}, inplace);
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
