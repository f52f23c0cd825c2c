// reduce_grad_shape.hpp - what the Reduce* gradient builders share.
#ifndef SINGA_OPS_REDUCE_REDUCE_GRAD_SHAPE_HPP
#define SINGA_OPS_REDUCE_REDUCE_GRAD_SHAPE_HPP

#include <singa/gradient.hpp>

#include <vector>

namespace singa {
namespace ops {
namespace reduce {

// The shape of a Reduce* node's input with its reduced axes kept as 1. Axes
// come from the attribute, or from input 1 (ReduceSum 13+, every Reduce* 18+);
// equal to the input's shape when noop_with_empty_axes leaves it as it is.
inline sdk::Shape kept_shape(sdk::GradBuilder& b) {
  const sdk::Shape xs = b.shape(b.input(0));
  std::vector<int64_t> axes = b.node().attr_ints("axes");
  if (b.num_inputs() > 1 && !b.input(1).empty())
    for (int64_t a : b.input_ints(1)) axes.push_back(a);
  sdk::Shape kept = xs;
  if (axes.empty()) {
    if (b.node().attr_int("noop_with_empty_axes", 0) != 0) return kept;
    for (auto& d : kept) d = 1;
  }
  for (int64_t a : axes) kept[size_t(a < 0 ? a + int64_t(xs.size()) : a)] = 1;
  return kept;
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
