// batch_norm_conv_f32.hpp - registers ai.singa.cpu::BatchNormConv, an
// inference BatchNorm [+ activation] fused with the 1x1 Conv it feeds
// (batch_norm_conv_f32.cpp; made by passes/fuse_batch_norm_conv.cpp).
#ifndef SINGA_OPS_NN_BATCH_NORM_CONV_F32_HPP
#define SINGA_OPS_NN_BATCH_NORM_CONV_F32_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace nn {

void register_batch_norm_conv(sdk::Registrar& reg);

}  // namespace nn
}  // namespace singa
#endif
