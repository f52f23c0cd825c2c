// Backward rules of the rest of SINGA's differentiable list: trigonometric and
// hyperbolic functions, the remaining activations, clipping, variadic
// Sum/Mean/Max/Min, Where, Tile and the other reductions. Written with forward
// ops, so they run wherever those ops have kernels.
#include "tape.hpp"

#include <cmath>

namespace singa {
namespace autograd {
namespace {

Tensor op1(const char* op, const Tensor& a) { return run1(op, {a}); }
Tensor op2(const char* op, const Tensor& a, const Tensor& b) { return run1(op, {a, b}); }
using eager::add;
using eager::div;
using eager::mul;
using eager::sub;
Tensor sq(const Tensor& a) { return mul(a, a); }
Tensor num(double v, const Tensor& like) { return scalar(v, like.dtype()); }
// 1.0 where `mask` (bool) holds, else 0.0, in the element type of `like`.
Tensor indicator(const Tensor& mask, const Tensor& like) {
  return run1("Cast", {mask}, Attrs().set("to", int64_t(like.dtype())));
}

// Registers y = f(x) whose derivative dy/dx = d(x, y).
void unary(const char* op, Tensor (*d)(const Tensor& x, const Tensor& y)) {
  register_rule("", op, [d](GradContext& c) { c.gx[0] = mul(c.gy[0], d(c.x[0], c.y[0])); });
}

// Ops that are flat almost everywhere: the gradient is zero, not missing, so
// that a model using them (a rounding step, a sign) still trains.
void flat(const char* op) {
  register_rule("", op, [](GradContext& c) { c.gx[0] = Tensor::zeros(c.x[0].shape(), c.x[0].dtype()); });
}

void register_trig() {
  unary("Sin", [](const Tensor& x, const Tensor&) { return op1("Cos", x); });
  unary("Cos", [](const Tensor& x, const Tensor&) { return op1("Neg", op1("Sin", x)); });
  unary("Tan", [](const Tensor&, const Tensor& y) { return add(num(1, y), sq(y)); });
  unary("Asin", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", op1("Sqrt", sub(num(1, x), sq(x)))); });
  unary("Acos", [](const Tensor& x, const Tensor&) {
    return op1("Neg", op1("Reciprocal", op1("Sqrt", sub(num(1, x), sq(x)))));
  });
  unary("Atan", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", add(num(1, x), sq(x))); });
  unary("Sinh", [](const Tensor& x, const Tensor&) { return op1("Cosh", x); });
  unary("Cosh", [](const Tensor& x, const Tensor&) { return op1("Sinh", x); });
  unary("Asinh", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", op1("Sqrt", add(sq(x), num(1, x)))); });
  unary("Acosh", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", op1("Sqrt", sub(sq(x), num(1, x)))); });
  unary("Atanh", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", sub(num(1, x), sq(x))); });
}

void register_activations() {
  unary("Reciprocal", [](const Tensor&, const Tensor& y) { return op1("Neg", sq(y)); });
  unary("Softsign", [](const Tensor& x, const Tensor&) { return op1("Reciprocal", sq(add(num(1, x), op1("Abs", x)))); });
  unary("Erf", [](const Tensor& x, const Tensor&) {
    return mul(num(2.0 / std::sqrt(M_PI), x), op1("Exp", op1("Neg", sq(x))));
  });
  // Selu: gamma for x > 0, else y + gamma * alpha (= gamma * alpha * e^x).
  register_rule("", "Selu", [](GradContext& c) {
    const Tensor &x = c.x[0], &y = c.y[0];
    const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
    const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
    Tensor d = run1("Where", {op2("Greater", x, num(0, x)), num(gamma, x), add(y, num(gamma * alpha, y))});
    c.gx[0] = mul(c.gy[0], d);
  });
  // HardSigmoid: alpha where 0 < alpha * x + beta < 1.
  register_rule("", "HardSigmoid", [](GradContext& c) {
    const Tensor& x = c.x[0];
    const double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
    Tensor z = add(mul(x, num(alpha, x)), num(beta, x));
    Tensor inside = op2("And", op2("Greater", z, num(0, x)), op2("Less", z, num(1, x)));
    c.gx[0] = mul(c.gy[0], mul(indicator(inside, x), num(alpha, x)));
  });
  // PRelu: x for x > 0, slope * x else; the slope broadcasts onto x.
  register_rule("", "PRelu", [](GradContext& c) {
    const Tensor &x = c.x[0], &slope = c.x[1];
    Tensor pos = op2("Greater", x, num(0, x));
    if (c.need[0]) c.gx[0] = mul(c.gy[0], run1("Where", {pos, num(1, x), slope}));
    if (c.need[1]) c.gx[1] = reduce_to(mul(c.gy[0], run1("Where", {pos, num(0, x), x})), slope.shape());
  });
  for (const char* op : {"Sign", "Ceil", "Floor", "Round"}) flat(op);
}

// Clip: the gradient passes where min <= x <= max; the bounds (inputs from
// opset 11, attributes before) collect what was clipped to them.
void clip_rule(GradContext& c) {
  const Tensor& x = c.x[0];
  auto bound = [&](size_t input, const char* attr, double def) {
    if (c.node.opset >= 11) return c.x.size() > input && c.x[input].defined() ? c.x[input] : Tensor();
    return scalar(c.attr_float(attr, float(def)), x.dtype());
  };
  Tensor lo = bound(1, "min", -3.4028234663852886e38), hi = bound(2, "max", 3.4028234663852886e38);
  Tensor below = lo.defined() ? op2("Less", x, lo) : Tensor();
  Tensor above = hi.defined() ? op2("Greater", x, hi) : Tensor();
  Tensor pass = c.gy[0];
  if (below.defined()) pass = run1("Where", {below, num(0, x), pass});
  if (above.defined()) pass = run1("Where", {above, num(0, x), pass});
  c.gx[0] = pass;
  auto collect = [&](size_t input, const Tensor& mask) {
    if (c.need.size() > input && c.need[input] && mask.defined())
      c.gx[input] = run1("ReduceSum", {mul(c.gy[0], indicator(mask, x))}, Attrs().set("keepdims", int64_t(0)))
                        .reshaped(c.x[input].shape());
  };
  collect(1, below);
  collect(2, above);
}

// Sum and Mean: every input gets the gradient (divided by the count for
// Mean), reduced over what broadcasting added.
void sum_rule(GradContext& c, bool mean) {
  Tensor g = mean ? mul(c.gy[0], num(1.0 / double(c.x.size()), c.gy[0])) : c.gy[0];
  for (size_t i = 0; i < c.x.size(); ++i)
    if (c.need[i]) c.gx[i] = reduce_to(g, c.x[i].shape());
}

// Max and Min: the gradient goes to the inputs that equal the result; a tie
// shares it evenly, so the sum over the inputs is the output's gradient.
void extremum_rule(GradContext& c) {
  const Tensor& y = c.y[0];
  std::vector<Tensor> hit(c.x.size());
  Tensor ties = Tensor::zeros(y.shape(), y.dtype());
  for (size_t i = 0; i < c.x.size(); ++i) {
    hit[i] = indicator(op2("Equal", run1("Expand", {c.x[i], int64s(y.shape())}), y), y);
    ties = add(ties, hit[i]);
  }
  Tensor share = div(c.gy[0], ties);
  for (size_t i = 0; i < c.x.size(); ++i)
    if (c.need[i]) c.gx[i] = reduce_to(mul(share, hit[i]), c.x[i].shape());
}

void where_rule(GradContext& c) {
  const Tensor& cond = c.x[0];
  const Tensor& g = c.gy[0];
  Tensor zero = num(0, g);
  if (c.need[1]) c.gx[1] = reduce_to(run1("Where", {cond, g, zero}), c.x[1].shape());
  if (c.need[2]) c.gx[2] = reduce_to(run1("Where", {cond, zero, g}), c.x[2].shape());
}

// Tile: output axis k is repeats[k] copies of input axis k; viewing the
// gradient as [r0, d0, r1, d1, ...] and summing the r axes undoes it.
void tile_rule(GradContext& c) {
  const Shape& xs = c.x[0].shape();
  const Tensor& reps = c.x[1];
  Shape split;
  std::vector<int64_t> axes;
  for (size_t k = 0; k < xs.size(); ++k) {
    axes.push_back(int64_t(split.size()));
    split.push_back(reps.data<int64_t>()[k]);
    split.push_back(xs[k]);
  }
  Tensor g = c.gy[0].reshaped(split);
  c.gx[0] = run1("ReduceSum", {g, int64s(axes)}, Attrs().set("keepdims", int64_t(0))).reshaped(xs);
}

// The reduced axes of a Reduce* node with the shape that keeps them as 1.
Shape kept_shape(const GradContext& c) {
  const Shape& xs = c.x[0].shape();
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (c.x.size() > 1 && c.x[1].defined())  // ReduceSum 13+ and every Reduce* 18+ take axes as an input
    for (int64_t i = 0; i < c.x[1].numel(); ++i) axes.push_back(c.x[1].data<int64_t>()[i]);
  Shape kept = xs;
  if (axes.empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) return kept;
    for (auto& d : kept) d = 1;
  }
  for (int64_t a : axes) kept[size_t(a < 0 ? a + int64_t(xs.size()) : a)] = 1;
  return kept;
}

// ReduceMax / ReduceMin: to the elements equal to the result, ties sharing.
void reduce_extremum_rule(GradContext& c) {
  const Tensor& x = c.x[0];
  Shape kept = kept_shape(c);
  Tensor y = c.y[0].reshaped(kept), g = c.gy[0].reshaped(kept);
  Tensor hit = indicator(op2("Equal", x, y), x);
  std::vector<int64_t> axes;  // the reduced axes, and kept ones of size 1, where a sum changes nothing
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] == 1) axes.push_back(int64_t(i));
  Tensor count = run1("ReduceSum", {hit, int64s(axes)}, Attrs().set("keepdims", int64_t(1)));
  c.gx[0] = mul(hit, div(g, count));
}

// ReduceSumSquare: 2x g; ReduceL2: x / y g; ReduceLogSumExp: softmax g.
void reduce_smooth_rule(GradContext& c, const std::string& op) {
  const Tensor& x = c.x[0];
  Shape kept = kept_shape(c);
  Tensor y = c.y[0].reshaped(kept), g = c.gy[0].reshaped(kept);
  Tensor d;
  if (op == "ReduceSumSquare") d = mul(x, num(2, x));
  if (op == "ReduceL2") d = div(x, y);
  if (op == "ReduceLogSumExp") d = op1("Exp", sub(x, y));
  if (op == "ReduceL1") d = op1("Sign", x);
  c.gx[0] = mul(d, g);
}

}  // namespace

void register_elementwise_rules() {
  register_trig();
  register_activations();
  register_rule("", "Clip", clip_rule);
  register_rule("", "Sum", [](GradContext& c) { sum_rule(c, false); });
  register_rule("", "Mean", [](GradContext& c) { sum_rule(c, true); });
  register_rule("", "Max", extremum_rule);
  register_rule("", "Min", extremum_rule);
  register_rule("", "Where", where_rule);
  register_rule("", "Tile", tile_rule);
  register_rule("", "ReduceMax", reduce_extremum_rule);
  register_rule("", "ReduceMin", reduce_extremum_rule);
  for (const char* op : {"ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "ReduceL1"})
    register_rule("", op, [op = std::string(op)](GradContext& c) { reduce_smooth_rule(c, op); });
}

}  // namespace autograd
}  // namespace singa
