// fuse.hpp - the training path's Conv -> Relu -> MaxPool fusion (the
// ConvReluMaxPool op of domain "ai.singa", plugins/ops_nn/conv_relu_pool.hpp):
// layer::Sequential fuses Conv2d, ReLU, MaxPool2d; ImportedModel fuses the
// same three nodes of an imported graph. Internal to libsinga_core.
#ifndef SINGA_CORE_TRAIN_FUSE_HPP
#define SINGA_CORE_TRAIN_FUSE_HPP

namespace singa {
namespace layer {

// False when the runtime option core.fuse_layers=0 is set (to compare).
bool fuse_conv_blocks();

}  // namespace layer
}  // namespace singa
#endif
