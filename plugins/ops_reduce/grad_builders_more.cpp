// Gradients of Hardmax, ReduceLogSum, ReduceProd and CumProd, as builders of
// backward nodes made of forward ops (gradient.hpp). ReduceProd and CumProd
// avoid dividing by the input, so zeros in it get their true gradient.
#include "reduce_grad_shape.hpp"

#include <grad_emit.hpp>
#include <singa/gradient.hpp>

#include <vector>

namespace {

using singa::ops::grad::as_type;
using singa::ops::grad::num;

using singa::ops::reduce::kept_shape;

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;


// Hardmax is a one-hot of the argmax: constant almost everywhere, so its
// gradient is zero (not missing, so that a model using it still trains).
SINGA_GRADIENT("", "Hardmax", [](GradBuilder& b) { b.set(0, b.zeros(b.shape(b.input(0)), b.dtype(b.input(0)))); });


// ReduceLogSum: y = log(s), s = sum(x), so dx = g / s = g / e^y.
SINGA_GRADIENT("", "ReduceLogSum", [](GradBuilder& b) {
  const Shape xs = b.shape(b.input(0)), kept = kept_shape(b);
  const Value s = b.emit("Exp", {b.reshape(b.output(0), kept)});
  b.set(0, b.emit("Expand", {b.div(b.reshape(b.output_grad(0), kept), s), b.int64s(xs)}));
});

// ReduceProd: dx_j = g * prod of the others. With z zeros in a reduced
// group: z = 0 gives p / x_j, z = 1 gives p (the product of the non-zeros)
// at the zero and 0 elsewhere, z > 1 gives 0, p taken with zeros as ones.
SINGA_GRADIENT("", "ReduceProd", [](GradBuilder& b) {
  const Value x = b.input(0);
  const Shape xs = b.shape(x), kept = kept_shape(b);
  const Value g = b.reshape(b.output_grad(0), kept);
  std::vector<int64_t> axes;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] == 1 && xs[i] != 1) axes.push_back(int64_t(i));
  if (axes.empty()) {  // nothing reduced: y = x
    b.set(0, b.emit("Expand", {g, b.int64s(xs)}));
    return;
  }
  const int32_t dt = b.dtype(x);
  const Value zero = b.emit("Equal", {x, num(b, 0, x)});
  const Value safe = b.emit("Where", {zero, num(b, 1, x), x});
  const Value p = b.emit("ReduceProd", {safe}, {Attr("axes", axes), Attr("keepdims", int64_t(1))});
  const Value z = b.emit("ReduceSum", {as_type(b, zero, dt), b.int64s(axes)}, {Attr("keepdims", int64_t(1))});
  const Value none = b.emit("Equal", {z, num(b, 0, z)}), one = b.emit("Equal", {z, num(b, 1, z)});
  const Value at_zero = b.emit("Where", {b.emit("And", {one, zero}), p, num(b, 0, x)});
  b.set(0, b.mul(g, b.emit("Where", {none, b.div(p, safe), at_zero})));
});

// CumProd along axis a (n long): dy_i/dx_j is the same cumulative product
// with x_j replaced by 1, where x_j takes part in y_i (j <= i; j < i when
// exclusive; the other way round when reversed), else 0. All n variants run
// as one CumProd over x viewed as [..., j, i, ...] (Where over an identity),
// so zeros need no division: O(n^2) work per line, as cheap as the forward
// for the short sequences CumProd sees.
SINGA_GRADIENT("", "CumProd", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Shape xs = b.shape(x);
  const int64_t r = int64_t(xs.size());
  int64_t a = b.input_ints(1).at(0);
  if (a < 0) a += r;
  if (a < 0 || a >= r) singa::sdk::fail("gradient of CumProd: axis out of range", SINGA_INVALID_ARGUMENT);
  const int64_t n = xs[size_t(a)];
  const bool exclusive = b.node().attr_int("exclusive", 0) != 0, reverse = b.node().attr_int("reverse", 0) != 0;
  Shape unsq = xs;  // [A, 1, n, B]
  unsq.insert(unsq.begin() + a, 1);
  Shape pair(size_t(r + 1), 1);  // [1.., n(j), n(i), 1..]
  pair[size_t(a)] = n;
  pair[size_t(a + 1)] = n;
  std::vector<int64_t> seq(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) seq[size_t(i)] = i;
  const Value j = b.reshape(b.int64s(seq), {n, 1}), i = b.reshape(b.int64s(seq), {1, n});
  const Value eye = b.reshape(b.emit("Equal", {j, i}), pair);
  const char* cmp = reverse ? (exclusive ? "Greater" : "GreaterOrEqual") : (exclusive ? "Less" : "LessOrEqual");
  const Value takes_part = as_type(b, b.reshape(b.emit(cmp, {j, i}), pair), b.dtype(x));
  const Value xj = b.emit("Where", {eye, num(b, 1, x), b.reshape(x, unsq)});  // [A, j, k, B]
  Emit e;
  e.op_type = "CumProd";
  e.opset = b.node().opset();
  e.inputs = {xj, b.int64s({a + 1})};
  e.attrs = {Attr("exclusive", int64_t(exclusive)), Attr("reverse", int64_t(reverse))};
  const Value without = b.emit(e)[0];  // [A, j, i, B]
  const Value terms = b.mul(b.mul(without, takes_part), b.reshape(g, unsq));
  b.set(0, b.emit("ReduceSum", {terms, b.int64s({a + 1})}, {Attr("keepdims", int64_t(0))}));
});

}  // namespace
