// Gradients of CastLike, Compress and ReverseSequence, as builders of
// backward nodes made of forward ops (gradient.hpp).
#include <singa/gradient.hpp>

#include <algorithm>
#include <vector>

namespace {

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// CastLike: the gradient is cast back to the input's type. target_type only
// lends its type, so its values get a zero gradient.
SINGA_GRADIENT("", "CastLike", [](GradBuilder& b) {
  const Value x = b.input(0);
  if (b.needs(0)) b.set(0, b.emit("Cast", {b.output_grad(0)}, {Attr("to", int64_t(b.dtype(x)))}));
  if (b.needs(1)) b.set(1, b.zeros(b.shape(b.input(1)), b.dtype(b.input(1))));
});

// Compress keeps the slices (or, without axis, the flattened elements) whose
// condition is true; the gradient scatters back to them, zero elsewhere. The
// condition is read on the host, as the forward's output shape depends on it.
SINGA_GRADIENT("", "Compress", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Shape xs = b.shape(x);
  const int32_t dt = b.dtype(g);
  const std::vector<int64_t> cond = b.input_ints(1);
  const bool has_axis = b.node().has_attr("axis");
  int64_t axis = b.node().attr_int("axis", 0), len = 1;
  if (has_axis) {
    if (axis < 0) axis += int64_t(xs.size());
    len = xs.at(size_t(axis));
  } else {
    for (int64_t d : xs) len *= d;
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < std::min<int64_t>(len, int64_t(cond.size())); ++i)
    if (cond[size_t(i)] != 0) kept.push_back(i);
  if (kept.empty()) return b.set(0, b.zeros(xs, dt));
  // ScatterElements wants indices shaped like the updates: the kept positions
  // along the axis, broadcast over the other axes.
  Shape target = has_axis ? xs : Shape{len}, at(target.size(), 1);
  at[has_axis ? size_t(axis) : 0] = int64_t(kept.size());
  const Value idx = b.emit("Expand", {b.reshape(b.int64s(kept), at), b.int64s(b.shape(g))});
  Emit e;
  e.op_type = "ScatterElements";
  e.inputs = {b.zeros(target, dt), idx, g};
  e.attrs = {Attr("axis", has_axis ? axis : int64_t(0))};
  const Value dx = b.emit(e)[0];
  b.set(0, has_axis ? dx : b.reshape(dx, xs));
});

// ReverseSequence is its own inverse: the gradient is reversed the same way.
SINGA_GRADIENT("", "ReverseSequence", [](GradBuilder& b) {
  Emit e;
  e.op_type = "ReverseSequence";
  e.opset = b.node().opset();
  e.inputs = {b.output_grad(0), b.input(1)};
  e.forward_attrs = true;
  b.set(0, b.emit(e)[0]);
});

}  // namespace
