// pool_before_conv.hpp - the ops_nn pass that moves an AveragePool ahead of
// the 1x1 Conv it follows (pool_before_conv.cpp), under the option name
// pass.cpu.pool_before_conv.
#ifndef SINGA_OPS_NN_PASSES_POOL_BEFORE_CONV_HPP
#define SINGA_OPS_NN_PASSES_POOL_BEFORE_CONV_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

constexpr const char* kPoolBeforeConv = "cpu.pool_before_conv";
// Runs above every Conv fusion (they would take the Conv first).
constexpr int32_t kPoolBeforeConvPriority = 1005;

// Conv 1x1 [-> Pad of nothing] -> AveragePool without padding becomes
// AveragePool -> Conv; returns the number of swaps.
int pool_before_convs(sdk::Graph& g);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
