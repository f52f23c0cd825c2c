// Gradients of the remaining activations (Celu, HardSwish, Mish, Swish,
// Shrink, ThresholdedRelu) and of NegativeLogLikelihoodLoss, as builders of
// backward nodes made of forward ops (gradient.hpp), so they run wherever
// those ops have kernels.
#include <grad_emit.hpp>
#include <singa/gradient.hpp>

#include <string>
#include <vector>

namespace {

using singa::ops::grad::as_type;
using singa::ops::grad::num;
using singa::ops::grad::op1;

using singa::sdk::Attr;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;


// y = f(x): dx = dy * d, with d built from x and y.
template <typename F>
void unary(GradBuilder& b, F d) {
  b.set(0, b.mul(b.output_grad(0), d(b.input(0), b.output(0))));
}

// Celu: 1 for x > 0, else e^(x / alpha).
SINGA_GRADIENT("", "Celu", [](GradBuilder& b) {
  const double alpha = b.node().attr_float("alpha", 1.0f);
  unary(b, [&](const Value& x, const Value&) {
    const Value neg = op1(b, "Exp", b.div(x, num(b, alpha, x)));
    return b.emit("Where", {b.emit("Greater", {x, num(b, 0, x)}), num(b, 1, x), neg});
  });
});

// HardSwish = x * clamp((x + 3) / 6, 0, 1): 0 below -3, 1 above 3, (2x + 3) / 6 between.
SINGA_GRADIENT("", "HardSwish", [](GradBuilder& b) {
  unary(b, [&](const Value& x, const Value&) {
    const Value mid = b.div(b.add(b.mul(x, num(b, 2, x)), num(b, 3, x)), num(b, 6, x));
    const Value d = b.emit("Where", {b.emit("Greater", {x, num(b, 3, x)}), num(b, 1, x), mid});
    return b.emit("Where", {b.emit("Less", {x, num(b, -3, x)}), num(b, 0, x), d});
  });
});

// Mish = x tanh(softplus(x)): t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x)).
SINGA_GRADIENT("", "Mish", [](GradBuilder& b) {
  unary(b, [&](const Value& x, const Value&) {
    const Value t = op1(b, "Tanh", op1(b, "Softplus", x));
    const Value sech2 = b.sub(num(b, 1, x), b.mul(t, t));
    return b.add(t, b.mul(b.mul(x, sech2), op1(b, "Sigmoid", x)));
  });
});

// Swish = x s, s = sigmoid(alpha x): s + alpha x s (1 - s).
SINGA_GRADIENT("", "Swish", [](GradBuilder& b) {
  const double alpha = b.node().attr_float("alpha", 1.0f);
  unary(b, [&](const Value& x, const Value&) {
    const Value s = op1(b, "Sigmoid", b.mul(x, num(b, alpha, x)));
    const Value slope = b.mul(b.mul(x, num(b, alpha, x)), b.sub(num(b, 1, x), s));
    return b.mul(s, b.add(num(b, 1, x), slope));
  });
});

// Shrink passes the gradient where |x| > lambd (the bias only shifts y).
SINGA_GRADIENT("", "Shrink", [](GradBuilder& b) {
  const double lambd = b.node().attr_float("lambd", 0.5f);
  unary(b, [&](const Value& x, const Value&) {
    const Value out = b.emit("Or", {b.emit("Less", {x, num(b, -lambd, x)}), b.emit("Greater", {x, num(b, lambd, x)})});
    return as_type(b, out, b.dtype(x));
  });
});

// ThresholdedRelu passes the gradient where x > alpha.
SINGA_GRADIENT("", "ThresholdedRelu", [](GradBuilder& b) {
  const double alpha = b.node().attr_float("alpha", 1.0f);
  unary(b, [&](const Value& x, const Value&) {
    return as_type(b, b.emit("Greater", {x, num(b, alpha, x)}), b.dtype(x));
  });
});

// NegativeLogLikelihoodLoss over input [N, C, d...] and target [N, d...]:
// each item (n, d...) contributes -w[t] x[n, t, d...] (0 when t is
// ignore_index), summed, averaged over the items' total weight ("mean") or
// kept per item ("none"). With mask = onehot(t) along axis 1 and the item
// coefficient c = w[t] * not_ignored, dx = -mask * c * g (g / total weight
// for "mean"); the weights get -sum(mask * not_ignored * x * g), and for
// "mean" also -loss * count_c / total weight, as loss = S / W.
SINGA_GRADIENT("", "NegativeLogLikelihoodLoss", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  if (g.empty()) return;
  const Shape xs = b.shape(x);
  const int32_t dt = b.dtype(x);
  const std::string reduction = b.node().attr_string("reduction", "mean");
  const bool has_w = b.num_inputs() > 2 && !b.input(2).empty();
  const bool has_ignore = b.node().has_attr("ignore_index");
  if (xs.size() < 2) singa::sdk::fail("NegativeLogLikelihoodLoss: input must be [N, C, ...]", SINGA_INVALID_ARGUMENT);
  const int64_t C = xs[1];

  Shape item = xs;  // [N, 1, d...]: an item's values broadcast over the classes
  item[1] = 1;
  Shape per_class(xs.size(), 1);  // [1, C, 1...]
  per_class[1] = C;
  const Value t = b.reshape(as_type(b, b.input(1), 7 /* int64 */), item);
  std::vector<int64_t> classes(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) classes[size_t(c)] = c;
  const Value mask = as_type(b, b.emit("Equal", {t, b.reshape(b.int64s(classes), per_class)}), dt);
  Value keep;  // 1 where the item is not ignored
  if (has_ignore) {
    const Value hit = b.emit("Equal", {t, b.int64s({b.node().attr_int("ignore_index", 0)})});
    keep = as_type(b, op1(b, "Not", hit), dt);
  }
  const Value w = has_w ? b.reshape(b.input(2), per_class) : Value();
  // c = w[t] * keep, [N, 1, d...]; all ones when neither applies.
  Value coef;
  if (has_w) coef = b.emit("ReduceSum", {b.mul(mask, w), b.int64s({1})}, {Attr("keepdims", int64_t(1))});
  if (has_ignore) coef = coef.empty() ? keep : b.mul(coef, keep);
  if (coef.empty()) coef = b.emit("Expand", {b.scalar(1, dt), b.int64s(item)});

  Value gi = reduction == "none" ? b.reshape(g, item) : b.reshape(g, {});
  Value total;
  if (reduction == "mean") {
    total = b.emit("ReduceSum", {coef}, {Attr("keepdims", int64_t(0))});
    // All items ignored: the loss is 0 / 0 and no item has a gradient.
    const Value safe = b.emit("Where", {b.emit("Equal", {total, num(b, 0, total)}), num(b, 1, total), total});
    gi = b.div(gi, safe);
    total = safe;
  } else if (reduction != "sum" && reduction != "none") {
    singa::sdk::fail("NegativeLogLikelihoodLoss: reduction must be none, sum or mean, got '" + reduction + "'",
                     SINGA_INVALID_ARGUMENT);
  }
  if (b.needs(0)) b.set(0, b.neg(b.mul(mask, b.mul(coef, gi))));
  if (has_w && b.needs(2)) {
    Value picked = b.mul(b.mul(mask, x), gi);  // x[n, t, d] * g per item, at class t
    if (has_ignore) picked = b.mul(picked, keep);
    Value dw = b.neg(b.sum_to(picked, per_class));
    if (reduction == "mean") {
      Value counted = has_ignore ? b.mul(mask, keep) : mask;
      counted = b.sum_to(b.emit("Expand", {counted, b.int64s(xs)}), per_class);
      dw = b.sub(dw, b.mul(b.mul(b.output(0), counted), gi));
    }
    b.set(2, b.reshape(dw, b.shape(b.input(2))));
  }
});

}  // namespace
