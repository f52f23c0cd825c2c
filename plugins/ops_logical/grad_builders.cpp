// Gradients of this pack's ops, as builders of backward nodes (gradient.hpp).
#include <singa/gradient.hpp>

namespace {

using singa::sdk::GradBuilder;
using singa::sdk::Value;

// Where(cond, a, c): the gradient goes to a where cond holds, to c elsewhere.
SINGA_GRADIENT("", "Where", [](GradBuilder& b) {
  const Value cond = b.input(0), g = b.output_grad(0);
  const Value zero = b.scalar(0, b.dtype(g));
  if (b.needs(1)) b.set_sum_to(1, b.emit("Where", {cond, g, zero}));
  if (b.needs(2)) b.set_sum_to(2, b.emit("Where", {cond, zero, g}));
});

}  // namespace
