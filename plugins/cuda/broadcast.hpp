// broadcast.hpp - numpy-style broadcasting of two shapes, reduced to the
// fewest dimensions the kernels have to walk.
#ifndef SINGA_CUDA_BROADCAST_HPP
#define SINGA_CUDA_BROADCAST_HPP

#include "kernels.hpp"

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace cuda {

// The broadcast shape of a and b, or false when they do not broadcast.
bool broadcast_shape(const sdk::Shape& a, const sdk::Shape& b, sdk::Shape& out);

// A plan that reads a and b (which must broadcast to `out`) for each element
// of `out`. Adjacent dimensions that both inputs step through alike are
// merged, so any rank works as long as at most kMaxBroadcastDims groups
// remain; otherwise sdk::Error (UNIMPLEMENTED) naming `who`.
BroadcastPlan make_plan(const sdk::Shape& a, const sdk::Shape& b, const sdk::Shape& out, const std::string& who);
// The same for one to three inputs (Where, a broadcast copy).
BroadcastPlan make_plan(const std::vector<sdk::Shape>& inputs, const sdk::Shape& out, const std::string& who);

}  // namespace cuda
}  // namespace singa

#endif
