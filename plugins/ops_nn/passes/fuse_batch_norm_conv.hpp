// fuse_batch_norm_conv.hpp - the ops_nn pass that fuses an inference
// BatchNorm [+ activation] into the 1x1 Conv reading it
// (fuse_batch_norm_conv.cpp), under the option name pass.cpu.batch_norm_convs.
#ifndef SINGA_OPS_NN_PASSES_FUSE_BATCH_NORM_CONV_HPP
#define SINGA_OPS_NN_PASSES_FUSE_BATCH_NORM_CONV_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

constexpr const char* kBatchNormConvs = "cpu.batch_norm_convs";
// After the layout passes (cpu.blocked_layout 930, cpu.channels_last 920):
// only values left plain are taken.
constexpr int32_t kBatchNormConvsPriority = 915;

// BatchNormalization/FusedBatchNorm -> 1x1 Conv becomes one BatchNormConv;
// returns the count.
int fuse_batch_norm_convs(sdk::Graph& g);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
