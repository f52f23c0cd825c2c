// Gradients of this pack's ops, as builders of backward nodes (gradient.hpp):
// arithmetic, matrix products, unary math and the variadic ops.
#include <grad_emit.hpp>
#include <singa/gradient.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace {

using singa::ops::grad::num;
using singa::ops::grad::op1;

using singa::sdk::Attr;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

Value sq(GradBuilder& b, const Value& a) { return b.mul(a, a); }

SINGA_GRADIENT("", "Add", [](GradBuilder& b) {
  for (size_t i = 0; i < 2; ++i)
    if (b.needs(i)) b.set_sum_to(i, b.output_grad(0));
});
SINGA_GRADIENT("", "Sub", [](GradBuilder& b) {
  if (b.needs(0)) b.set_sum_to(0, b.output_grad(0));
  if (b.needs(1)) b.set_sum_to(1, b.neg(b.output_grad(0)));
});
SINGA_GRADIENT("", "Mul", [](GradBuilder& b) {
  if (b.needs(0)) b.set_sum_to(0, b.mul(b.output_grad(0), b.input(1)));
  if (b.needs(1)) b.set_sum_to(1, b.mul(b.output_grad(0), b.input(0)));
});
// d(a/c)/da = 1/c; d(a/c)/dc = -y/c.
SINGA_GRADIENT("", "Div", [](GradBuilder& b) {
  if (b.needs(0)) b.set_sum_to(0, b.div(b.output_grad(0), b.input(1)));
  if (b.needs(1)) b.set_sum_to(1, b.neg(b.mul(b.output_grad(0), b.div(b.output(0), b.input(1)))));
});
// d(a^c)/da = c a^(c-1); d/dc = a^c ln a.
SINGA_GRADIENT("", "Pow", [](GradBuilder& b) {
  const Value a = b.input(0), c = b.input(1), g = b.output_grad(0);
  const Value cx = b.dtype(c) == b.dtype(a) ? c : b.emit("Cast", {c}, {Attr("to", int64_t(b.dtype(a)))});  // int exponents
  if (b.needs(0)) b.set_sum_to(0, b.mul(g, b.mul(cx, b.emit("Pow", {a, b.sub(c, num(b, 1, c))}))));
  // d/dc a^c = a^c log a, which is 0 (not 0 * -inf) at a = 0.
  if (b.needs(1)) {
    const Value at0 = b.emit("Equal", {a, num(b, 0, a)});
    const Value d = b.emit("Where", {at0, num(b, 0, a), b.mul(b.output(0), op1(b, "Log", a))});
    b.set_sum_to(1, b.mul(g, d));
  }
});
SINGA_GRADIENT("", "Neg", [](GradBuilder& b) { b.set(0, b.neg(b.output_grad(0))); });
SINGA_GRADIENT("", "Exp", [](GradBuilder& b) { b.set(0, b.mul(b.output_grad(0), b.output(0))); });
SINGA_GRADIENT("", "Log", [](GradBuilder& b) { b.set(0, b.div(b.output_grad(0), b.input(0))); });
SINGA_GRADIENT("", "Sqrt", [](GradBuilder& b) {
  b.set(0, b.div(b.output_grad(0), b.mul(b.output(0), num(b, 2, b.output(0)))));
});
SINGA_GRADIENT("", "Abs", [](GradBuilder& b) { b.set(0, b.mul(b.output_grad(0), op1(b, "Sign", b.input(0)))); });

// Swaps the last two axes.
Value t_last2(GradBuilder& b, const Value& v) {
  std::vector<int64_t> perm(size_t(b.ndim(v)));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return b.emit("Transpose", {v}, {Attr("perm", perm)});
}

// 1-D operands are promoted to matrices as MatMul does, then the gradients
// are summed over broadcast batch axes and given the operands' shapes.
SINGA_GRADIENT("", "MatMul", [](GradBuilder& b) {
  const Value A = b.input(0), B = b.input(1);
  const Shape as = b.shape(A), bs = b.shape(B);
  Shape a2s = as.size() == 1 ? Shape{1, as[0]} : as, b2s = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  Value a2 = as.size() == 1 ? b.reshape(A, a2s) : A, b2 = bs.size() == 1 ? b.reshape(B, b2s) : B;
  Shape gs = b.shape(b.output_grad(0));
  if (bs.size() == 1) gs.push_back(1);
  if (as.size() == 1) gs.insert(gs.end() - 1, 1);
  Value g = b.reshape(b.output_grad(0), gs);
  if (b.needs(0)) b.set(0, b.reshape(b.sum_to(b.emit("MatMul", {g, t_last2(b, b2)}), a2s), as));
  if (b.needs(1)) b.set(1, b.reshape(b.sum_to(b.emit("MatMul", {t_last2(b, a2), g}), b2s), bs));
});

// Y = alpha op(A) op(B) + beta C.
SINGA_GRADIENT("", "Gemm", [](GradBuilder& b) {
  const auto& n = b.node();
  const int64_t ta = n.attr_int("transA", 0), tb = n.attr_int("transB", 0);
  const float alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
  const Value g = b.output_grad(0), A = b.input(0), B = b.input(1);
  auto gemm = [&](const Value& x, const Value& y, int64_t tx, int64_t ty) {
    return b.emit("Gemm", {x, y}, {Attr("alpha", alpha), Attr("transA", tx), Attr("transB", ty)});
  };
  if (b.needs(0)) b.set(0, ta ? gemm(B, g, tb, 1) : gemm(g, B, 0, !tb));
  if (b.needs(1)) b.set(1, tb ? gemm(g, A, 1, ta) : gemm(A, g, !ta, 0));
  if (b.num_inputs() > 2 && b.needs(2)) {
    Value gc = b.sum_to(g, b.shape(b.input(2)));
    b.set(2, beta == 1.0f ? gc : b.mul(gc, num(b, beta, g)));
  }
});

// y = f(x) with dy/dx = d(x, y).
#define SINGA_UNARY_GRADIENT(OP, EXPR)                                  \
  SINGA_GRADIENT("", OP, [](GradBuilder& b) {                            \
    const Value x = b.input(0), y = b.output(0);                         \
    (void)x;                                                             \
    (void)y;                                                             \
    b.set(0, b.mul(b.output_grad(0), EXPR));                             \
  })

SINGA_UNARY_GRADIENT("Sin", op1(b, "Cos", x));
SINGA_UNARY_GRADIENT("Cos", b.neg(op1(b, "Sin", x)));
SINGA_UNARY_GRADIENT("Tan", b.add(num(b, 1, y), sq(b, y)));
SINGA_UNARY_GRADIENT("Asin", op1(b, "Reciprocal", op1(b, "Sqrt", b.sub(num(b, 1, x), sq(b, x)))));
SINGA_UNARY_GRADIENT("Acos", b.neg(op1(b, "Reciprocal", op1(b, "Sqrt", b.sub(num(b, 1, x), sq(b, x))))));
SINGA_UNARY_GRADIENT("Atan", op1(b, "Reciprocal", b.add(num(b, 1, x), sq(b, x))));
SINGA_UNARY_GRADIENT("Sinh", op1(b, "Cosh", x));
SINGA_UNARY_GRADIENT("Cosh", op1(b, "Sinh", x));
SINGA_UNARY_GRADIENT("Asinh", op1(b, "Reciprocal", op1(b, "Sqrt", b.add(sq(b, x), num(b, 1, x)))));
SINGA_UNARY_GRADIENT("Acosh", op1(b, "Reciprocal", op1(b, "Sqrt", b.sub(sq(b, x), num(b, 1, x)))));
SINGA_UNARY_GRADIENT("Atanh", op1(b, "Reciprocal", b.sub(num(b, 1, x), sq(b, x))));
SINGA_UNARY_GRADIENT("Reciprocal", b.neg(sq(b, y)));
SINGA_UNARY_GRADIENT("Erf", b.mul(num(b, 2.0 / std::sqrt(M_PI), x), op1(b, "Exp", b.neg(sq(b, x)))));

// Flat almost everywhere: the gradient is zero, not missing, so that a model
// with a rounding step or a sign still trains.
void flat(GradBuilder& b) { b.set(0, b.zeros(b.shape(b.input(0)), b.dtype(b.input(0)))); }
SINGA_GRADIENT("", "Sign", flat);
SINGA_GRADIENT("", "Ceil", flat);
SINGA_GRADIENT("", "Floor", flat);
SINGA_GRADIENT("", "Round", flat);

// Sum and Mean: every input gets the gradient (divided by the count for
// Mean), summed over what broadcasting added.
void sum_like(GradBuilder& b, bool mean) {
  Value g = b.output_grad(0);
  if (mean) g = b.mul(g, num(b, 1.0 / double(b.num_inputs()), g));
  for (size_t i = 0; i < b.num_inputs(); ++i)
    if (b.needs(i)) b.set_sum_to(i, g);
}
SINGA_GRADIENT("", "Sum", [](GradBuilder& b) { sum_like(b, false); });
SINGA_GRADIENT("", "Mean", [](GradBuilder& b) { sum_like(b, true); });

// Max and Min: to the inputs equal to the result; ties share evenly.
void extremum(GradBuilder& b) {
  const Value y = b.output(0);
  const int32_t t = b.dtype(y);
  std::vector<Value> hit(b.num_inputs());
  Value ties = b.zeros(b.shape(y), t);
  for (size_t i = 0; i < b.num_inputs(); ++i) {
    Value eq = b.emit("Equal", {b.emit("Expand", {b.input(i), b.int64s(b.shape(y))}), y});
    hit[i] = b.emit("Cast", {eq}, {Attr("to", int64_t(t))});
    ties = b.add(ties, hit[i]);
  }
  Value share = b.div(b.output_grad(0), ties);
  for (size_t i = 0; i < b.num_inputs(); ++i)
    if (b.needs(i)) b.set_sum_to(i, b.mul(share, hit[i]));
}
SINGA_GRADIENT("", "Max", extremum);
SINGA_GRADIENT("", "Min", extremum);

// ------------------------------------------------------------------ Einsum

// One Einsum term per operand (and the output) with "..." replaced by
// letters of its own, right-aligned across the operands as numpy does.
struct EinsumSpec {
  std::vector<std::string> in;
  std::string out;
  std::string unused;  // letters the equation does not use
};
EinsumSpec parse_einsum(GradBuilder& b) {
  std::string eq;
  for (char c : b.node().attr_string("equation", "")) if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  EinsumSpec sp;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    sp.in.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (sp.in.size() != b.num_inputs()) singa::sdk::fail("Einsum: the equation's terms do not match the inputs", SINGA_INVALID_ARGUMENT);
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {  // implicit output: "..." then the letters used once, sorted
    std::map<char, int> count;
    bool ell = false;
    for (const auto& t : sp.in)
      for (char c : t) c == '.' ? void(ell = true) : void(++count[c]);
    if (ell) out = "...";
    for (auto& [c, n] : count) if (n == 1) out += c;
  }
  for (char c = 'a'; c <= 'z'; ++c) if (eq.find(c) == std::string::npos) sp.unused += c;
  for (char c = 'A'; c <= 'Z'; ++c) if (eq.find(c) == std::string::npos) sp.unused += c;
  size_t ell_rank = 0;
  std::vector<size_t> ranks;
  for (size_t i = 0; i < sp.in.size(); ++i) {
    const std::string& t = sp.in[i];
    const size_t letters = t.size() - (t.find("...") == std::string::npos ? 0 : 3);
    ranks.push_back(size_t(b.ndim(b.input(i))) - letters);
    ell_rank = std::max(ell_rank, ranks.back());
  }
  if (sp.unused.size() < ell_rank) singa::sdk::fail("Einsum: too many labels for the gradient", SINGA_UNIMPLEMENTED);
  const std::string ell = sp.unused.substr(0, ell_rank);
  sp.unused = sp.unused.substr(ell_rank);
  auto expand = [&](std::string t, size_t rank) {
    const size_t at = t.find("...");
    return at == std::string::npos ? t : t.substr(0, at) + ell.substr(ell_rank - rank) + t.substr(at + 3);
  };
  for (size_t i = 0; i < sp.in.size(); ++i) sp.in[i] = expand(sp.in[i], ranks[i]);
  sp.out = expand(out, ell_rank);
  return sp;
}

// The gradient of operand i is one Einsum of the other operands and dY into
// operand i's labels, with two fix-ups as extra operands: a repeated label
// (a diagonal) gets a fresh letter per extra occurrence tied to the first by
// an identity matrix, and a size-1 axis that broadcast gets a fresh letter of
// size 1. A tensor of ones over all the output's letters gives each one a size.
SINGA_GRADIENT("", "Einsum", [](GradBuilder& b) {
  EinsumSpec sp = parse_einsum(b);
  const Value g = b.output_grad(0);
  const int32_t dt = b.dtype(g);
  std::map<char, int64_t> size;
  auto note = [&](const std::string& t, const Shape& s) {
    for (size_t k = 0; k < t.size(); ++k) size[t[k]] = std::max(size[t[k]], s[k]);
  };
  for (size_t i = 0; i < sp.in.size(); ++i) note(sp.in[i], b.shape(b.input(i)));
  note(sp.out, b.shape(g));
  for (size_t i = 0; i < sp.in.size(); ++i) {
    if (!b.needs(i)) continue;
    std::string fresh = sp.unused, target;
    const Shape xs = b.shape(b.input(i));
    std::vector<Value> ins;
    std::vector<std::string> terms;
    std::map<char, int64_t> out_size;
    for (size_t k = 0; k < sp.in[i].size(); ++k) {
      const char l = sp.in[i][k];
      const bool repeat = target.find(l) != std::string::npos;
      if (!repeat && xs[k] == size[l]) {
        target += l;
        out_size[l] = size[l];
        continue;
      }
      if (fresh.empty()) singa::sdk::fail("Einsum: too many labels for the gradient", SINGA_UNIMPLEMENTED);
      const char f = fresh[0];
      fresh.erase(0, 1);
      target += f;
      out_size[f] = xs[k];
      if (repeat) {
        std::vector<int64_t> r;
        for (int64_t j = 0; j < size[l]; ++j) r.push_back(j);
        const Value col = b.reshape(b.int64s(r), {size[l], 1}), row = b.reshape(b.int64s(r), {1, size[l]});
        ins.push_back(b.emit("Cast", {b.emit("Equal", {col, row})}, {Attr("to", int64_t(dt))}));
        terms.push_back(std::string{l, f});
      }
    }
    Shape ones_shape;
    for (char l : target) ones_shape.push_back(out_size[l]);
    ins.push_back(b.emit("Expand", {b.scalar(1, dt), b.int64s(ones_shape)}));
    terms.push_back(target);
    for (size_t j = 0; j < sp.in.size(); ++j)
      if (j != i) {
        ins.push_back(b.input(j));
        terms.push_back(sp.in[j]);
      }
    ins.push_back(g);
    terms.push_back(sp.out);
    std::string eq;
    for (size_t j = 0; j < terms.size(); ++j) eq += (j ? "," : "") + terms[j];
    b.set(i, b.emit("Einsum", ins, {Attr("equation", eq + "->" + target)}));
  }
});

}  // namespace
