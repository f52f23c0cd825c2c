// binary_common.hpp - what the two-input elementwise kernels share: the
// broadcast rules of every opset (numpy since 7, the `broadcast`/`axis`
// attributes before) and the lifting of a functor to 16-bit floats.
#ifndef SINGA_OPS_MATH_BINARY_COMMON_HPP
#define SINGA_OPS_MATH_BINARY_COMMON_HPP

#include "math_common.hpp"

namespace singa {
namespace ops {
namespace math {

// Runs Op in T's compute type so that half/bfloat16 work with the same functors.
template <typename T, typename Op>
struct Via {
  Op op;
  T operator()(T a, T b) const {
    using C = compute_t<T>;
    return T(op(C(a), C(b)));
  }
};

// The inputs of one binary node as the kernel sees them: B reshaped for the
// legacy (opset < 7) broadcast, and the output shape.
struct BinaryOperands {
  sdk::Tensor a, b;
  Shape out_shape;
  DLTensor b_view{};  // B with a legacy-aligned shape
  Shape b_shape;
};

class BinaryBase {
 public:
  explicit BinaryBase(const sdk::Node& node) {
    legacy_ = node.opset() < 7;
    if (legacy_) {
      broadcast_ = node.attr_int("broadcast", 0) != 0;
      has_axis_ = node.has_attr("axis");
      axis_ = node.attr_int("axis", 0);
    }
  }

 protected:
  // Fills `ops`; `same_type` false for Pow's independent exponent type.
  void operands(const sdk::Context& ctx, BinaryOperands& ops, bool same_type = true) const {
    sdk::check(ctx.has_input(0) && ctx.has_input(1), "needs two inputs A and B");
    ops.a = ctx.input(0);
    ops.b = ctx.input(1);
    if (same_type) same_dtype(ops.a, ops.b, "inputs A and B");
    if (!legacy_) {
      ops.out_shape = broadcast_shapes({ops.a.shape(), ops.b.shape()});
      return;
    }
    Shape as = ops.a.shape(), bs = ops.b.shape();
    ops.out_shape = as;
    if (!broadcast_) {
      SINGA_CHECK(as == bs, "shapes " + shape_str(as) + " and " + shape_str(bs) +
                                " differ and the broadcast attribute is not set (opset < 7)");
      return;
    }
    int64_t rank = int64_t(as.size()), brank = int64_t(bs.size());
    int64_t axis = has_axis_ ? axis_ : rank - brank;
    if (axis < 0) axis += rank;
    SINGA_CHECK(
        brank <= rank && axis >= 0 && axis + brank <= rank,
        "cannot broadcast B " + shape_str(bs) + " onto A " + shape_str(as) + " at axis " + std::to_string(axis));
    ops.b_shape.assign(size_t(rank), 1);
    for (int64_t i = 0; i < brank; ++i) {
      int64_t d = bs[size_t(i)];
      SINGA_CHECK(d == 1 || d == as[size_t(axis + i)], "cannot broadcast B " + shape_str(bs) + " onto A " +
                                                           shape_str(as) + " at axis " + std::to_string(axis));
      ops.b_shape[size_t(axis + i)] = d;
    }
    ops.b_view = *ops.b.raw();
    ops.b_view.ndim = int(rank);
    ops.b_view.shape = ops.b_shape.data();
    ops.b_view.strides = nullptr;
    ops.b = sdk::Tensor(&ops.b_view);
  }

  bool legacy_ = false, broadcast_ = false, has_axis_ = false;
  int64_t axis_ = 0;
};

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
