// fuse_batch_norm_pool.hpp - the ops_nn pass that folds an AveragePool (or
// GlobalAveragePool) into the inference BatchNorm [+ activation] before it
// (fuse_batch_norm_pool.cpp), under the option name pass.cpu.batch_norm_pools.
#ifndef SINGA_OPS_NN_PASSES_FUSE_BATCH_NORM_POOL_HPP
#define SINGA_OPS_NN_PASSES_FUSE_BATCH_NORM_POOL_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

constexpr const char* kBatchNormPools = "cpu.batch_norm_pools";
// After pool_before_conv (which moves the pool next to the BatchNorm's
// activation) and cpu.conv_activations (which may have made the
// FusedBatchNorm already); it matches the unfused form too.
constexpr int32_t kBatchNormPoolsPriority = 985;

// BatchNormalization/FusedBatchNorm [-> activation] -> AveragePool of whole
// windows or GlobalAveragePool becomes one FusedBatchNorm; returns the count.
int fuse_batch_norm_pools(sdk::Graph& g);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
