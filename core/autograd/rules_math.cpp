// Backward rules of elementwise and matrix ops, written with forward ops.
#include "tape.hpp"

namespace singa {
namespace autograd {
namespace {

using eager::div;
using eager::mul;
using eager::neg;

// Swaps the last two axes.
Tensor t_last2(const Tensor& t) {
  std::vector<int64_t> perm(size_t(t.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return run1("Transpose", {t}, Attrs().set("perm", perm));
}

void matmul_rule(GradContext& c) {
  const Tensor &A = c.x[0], &B = c.x[1];
  Tensor a2 = A.ndim() == 1 ? A.reshaped({1, A.shape()[0]}) : A;
  Tensor b2 = B.ndim() == 1 ? B.reshaped({B.shape()[0], 1}) : B;
  Shape gs = c.gy[0].shape();
  if (B.ndim() == 1) gs.push_back(1);
  if (A.ndim() == 1) gs.insert(gs.end() - 1, 1);
  Tensor g = c.gy[0].reshaped(gs);
  if (c.need[0]) c.gx[0] = reduce_to(run1("MatMul", {g, t_last2(b2)}), a2.shape()).reshaped(A.shape());
  if (c.need[1]) c.gx[1] = reduce_to(run1("MatMul", {t_last2(a2), g}), b2.shape()).reshaped(B.shape());
}

// Y = alpha * op(A) op(B) + beta * C.
void gemm_rule(GradContext& c) {
  const int64_t ta = c.attr_int("transA", 0), tb = c.attr_int("transB", 0);
  const float alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  const Tensor& g = c.gy[0];
  Attrs scale;
  scale.set("alpha", alpha);
  if (c.need[0])
    c.gx[0] = ta ? run1("Gemm", {c.x[1], g}, Attrs(scale).set("transA", tb).set("transB", int64_t(1)))
                 : run1("Gemm", {g, c.x[1]}, Attrs(scale).set("transB", int64_t(!tb)));
  if (c.need[1])
    c.gx[1] = tb ? run1("Gemm", {g, c.x[0]}, Attrs(scale).set("transA", int64_t(1)).set("transB", ta))
                 : run1("Gemm", {c.x[0], g}, Attrs(scale).set("transA", int64_t(!ta)));
  if (c.x.size() > 2 && c.need[2]) {
    Tensor gc = reduce_to(g, c.x[2].shape());
    c.gx[2] = beta == 1.0f ? gc : mul(gc, scalar(beta, g.dtype()));
  }
}

}  // namespace

void register_math_rules() {
  register_rule("", "Add", [](GradContext& c) {
    for (int i = 0; i < 2; ++i)
      if (c.need[size_t(i)]) c.gx[size_t(i)] = reduce_to(c.gy[0], c.x[size_t(i)].shape());
  });
  register_rule("", "Sub", [](GradContext& c) {
    if (c.need[0]) c.gx[0] = reduce_to(c.gy[0], c.x[0].shape());
    if (c.need[1]) c.gx[1] = reduce_to(neg(c.gy[0]), c.x[1].shape());
  });
  register_rule("", "Mul", [](GradContext& c) {
    if (c.need[0]) c.gx[0] = reduce_to(mul(c.gy[0], c.x[1]), c.x[0].shape());
    if (c.need[1]) c.gx[1] = reduce_to(mul(c.gy[0], c.x[0]), c.x[1].shape());
  });
  register_rule("", "Div", [](GradContext& c) {
    if (c.need[0]) c.gx[0] = reduce_to(div(c.gy[0], c.x[1]), c.x[0].shape());
    if (c.need[1]) c.gx[1] = reduce_to(neg(mul(c.gy[0], div(c.y[0], c.x[1]))), c.x[1].shape());
  });
  register_rule("", "Neg", [](GradContext& c) { c.gx[0] = neg(c.gy[0]); });
  register_rule("", "Exp", [](GradContext& c) { c.gx[0] = mul(c.gy[0], c.y[0]); });
  register_rule("", "Log", [](GradContext& c) { c.gx[0] = div(c.gy[0], c.x[0]); });
  register_rule("", "Sqrt", [](GradContext& c) {
    c.gx[0] = div(c.gy[0], mul(c.y[0], scalar(2.0, c.y[0].dtype())));
  });
  register_rule("", "Abs", [](GradContext& c) { c.gx[0] = mul(c.gy[0], run1("Sign", {c.x[0]})); });
  register_rule("", "Identity", [](GradContext& c) { c.gx[0] = c.gy[0]; });
  register_rule("", "Pow", [](GradContext& c) {
    // d(a^b)/da = b a^(b-1); d/db = a^b ln a.
    const Tensor &a = c.x[0], &b = c.x[1];
    if (c.need[0]) {
      Tensor bm1 = run1("Sub", {b, scalar(1.0, b.dtype())});
      c.gx[0] = reduce_to(mul(c.gy[0], mul(b, run1("Pow", {a, bm1}))), a.shape());
    }
    if (c.need[1]) c.gx[1] = reduce_to(mul(c.gy[0], mul(c.y[0], run1("Log", {a}))), b.shape());
  });
  register_rule("", "MatMul", matmul_rule);
  register_rule("", "Gemm", gemm_rule);
  register_rule("", "Cast", [](GradContext& c) {
    c.gx[0] = run1("Cast", {c.gy[0]}, Attrs().set("to", int64_t(c.x[0].dtype())));
  });
}

}  // namespace autograd
}  // namespace singa
