// grad_check.hpp - before a graph runs on the tape: does every node that a
// gradient must pass through have one? Internal to libsinga_core.
#ifndef SINGA_CORE_AUTOGRAD_GRAD_CHECK_HPP
#define SINGA_CORE_AUTOGRAD_GRAD_CHECK_HPP

#include "../graph.hpp"

#include <singa/autograd.hpp>

#include <vector>

namespace singa {
namespace autograd {

// Throws SINGA_UNIMPLEMENTED naming every node among the first `stop` of `g`
// that a gradient must cross (a floating-point output computed from a value
// that requires one) and whose op has no gradient hook. `env` holds the
// graph's values as Variables (undefined where not yet computed); those
// with requires_grad() start the gradient's path. Does nothing when the
// tape is not recording.
void check_gradients(const graph::Graph& g, size_t stop, const std::vector<Variable>& env);

}  // namespace autograd
}  // namespace singa
#endif
