// Gradients of the normalisations that grad_builders.cpp does not cover:
// InstanceNormalization, MeanVarianceNormalization, LpNormalization and LRN,
// written with forward ops so they run wherever those ops have kernels.
#include <grad_emit.hpp>
#include <singa/gradient.hpp>

namespace {

using singa::ops::grad::num;
using singa::ops::grad::op1;

using singa::sdk::Attr;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

Value mean(GradBuilder& b, const Value& v, const std::vector<int64_t>& axes) {
  return b.emit("ReduceMean", {v}, {Attr("axes", axes), Attr("keepdims", int64_t(1))});
}
Value sum(GradBuilder& b, const Value& v, const std::vector<int64_t>& axes) {
  return b.emit("ReduceSum", {v, b.int64s(axes)}, {Attr("keepdims", int64_t(1))});
}

// InstanceNormalization: each (n, c) normalised over the spatial axes,
// xhat = (x - mean) inv with inv = (var + eps)^-1/2; then scale[c] xhat + B[c].
// dx = inv (gx - mean(gx) - xhat mean(gx xhat)) with gx = g scale.
SINGA_GRADIENT("", "InstanceNormalization", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Shape xs = b.shape(x);
  const int64_t C = xs[1];
  std::vector<int64_t> axes, others{0};
  for (size_t a = 2; a < xs.size(); ++a) {
    axes.push_back(int64_t(a));
    others.push_back(int64_t(a));
  }
  const double eps = b.node().attr_float("epsilon", 1e-5f);
  const Value xc = b.sub(x, mean(b, x, axes));
  const Value inv = op1(b, "Reciprocal", op1(b, "Sqrt", b.add(mean(b, b.mul(xc, xc), axes), num(b, eps, x))));
  const Value xhat = b.mul(xc, inv);
  Shape cs(xs.size(), 1);
  cs[1] = C;
  if (b.needs(1)) b.set(1, b.reshape(sum(b, b.mul(g, xhat), others), {C}));
  if (b.needs(2)) b.set(2, b.reshape(sum(b, g, others), {C}));
  if (b.needs(0)) {
    const Value gx = b.mul(g, b.reshape(b.input(1), cs));
    const Value d = b.sub(b.sub(gx, mean(b, gx, axes)), b.mul(xhat, mean(b, b.mul(gx, xhat), axes)));
    b.set(0, b.mul(inv, d));
  }
});

// MeanVarianceNormalization: y = xc / (s + 1e-9) with xc = x - mean and s
// the population std over `axes` (the epsilon the kernel adds to s). With
// d = s + 1e-9: dx = (g - mean(g)) / d - xc mean(g xc) / (d^2 s).
SINGA_GRADIENT("", "MeanVarianceNormalization", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const int64_t r = b.ndim(x);
  std::vector<int64_t> axes = b.node().attr_ints("axes", {0, 2, 3});
  for (int64_t& a : axes)
    if (a < 0) a += r;
  const Value xc = b.sub(x, mean(b, x, axes));
  const Value s = op1(b, "Sqrt", mean(b, b.mul(xc, xc), axes));
  const Value d = b.add(s, num(b, 1e-9, x));
  const Value first = b.div(b.sub(g, mean(b, g, axes)), d);
  const Value second = b.div(b.mul(xc, mean(b, b.mul(g, xc), axes)), b.mul(b.mul(d, d), s));
  b.set(0, b.sub(first, second));
});

// LpNormalization: y = x / n along `axis`, n = sum |x| (p = 1) or
// sqrt(sum x^2) (p = 2). dx = (g - v sum(g y)) / n with v = y (p = 2) or
// sign(x) (p = 1). Where n = 0 the kernel outputs 0, and so does the gradient.
SINGA_GRADIENT("", "LpNormalization", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0), y = b.output(0);
  const int64_t r = b.ndim(x);
  int64_t axis = b.node().attr_int("axis", -1);
  if (axis < 0) axis += r;
  const bool l1 = b.node().attr_int("p", 2) == 1;
  const Value n = l1 ? sum(b, op1(b, "Abs", x), {axis}) : op1(b, "Sqrt", sum(b, b.mul(x, x), {axis}));
  const Value zero = b.emit("Equal", {n, num(b, 0, x)});
  const Value inv = b.emit("Where", {zero, num(b, 0, x), op1(b, "Reciprocal", b.emit("Where", {zero, num(b, 1, x), n}))});
  const Value v = l1 ? op1(b, "Sign", x) : y;
  b.set(0, b.mul(b.sub(g, b.mul(v, sum(b, b.mul(g, y), {axis}))), inv));
});

// LRN: y = x d^-beta with d = bias + alpha/size S, S the sum of x^2 over the
// channel window [c - (size-1)/2, c + size-1 - (size-1)/2]. Written with the
// window as a C x C band matrix M (S = M x^2 on [N, C, rest]):
// dx = g d^-beta - 2 alpha beta / size x M^T(g x d^(-beta-1)).
SINGA_GRADIENT("", "LRN", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Shape xs = b.shape(x);
  const int64_t C = xs[1], size = b.node().attr_int("size", 1);
  const double alpha = b.node().attr_float("alpha", 1e-4f), beta = b.node().attr_float("beta", 0.75f),
               bias = b.node().attr_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<int64_t> band(size_t(C * C), 0), band_t(size_t(C * C), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = c - before; k <= c + after; ++k)
      if (k >= 0 && k < C) {
        band[size_t(c * C + k)] = 1;
        band_t[size_t(k * C + c)] = 1;
      }
  auto matrix = [&](const std::vector<int64_t>& m) {
    return b.emit("Cast", {b.reshape(b.int64s(m), {C, C})}, {Attr("to", int64_t(b.dtype(x)))});
  };
  const Shape flat{xs[0], C, -1};
  auto window = [&](const std::vector<int64_t>& m, const Value& v) {
    return b.reshape(b.emit("MatMul", {matrix(m), b.emit("Reshape", {v, b.int64s(flat)})}), xs);
  };
  const Value d = b.add(num(b, bias, x), b.mul(num(b, alpha / double(size), x), window(band, b.mul(x, x))));
  const Value dpow = b.emit("Pow", {d, num(b, -beta, x)});
  const Value inner = b.div(b.mul(b.mul(g, x), dpow), d);
  const Value back = b.mul(b.mul(x, window(band_t, inner)), num(b, 2 * alpha * beta / double(size), x));
  b.set(0, b.sub(b.mul(g, dpow), back));
});

}  // namespace
