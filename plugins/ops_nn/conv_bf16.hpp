// conv_bf16.hpp - ai.singa.cpu Bf16Conv: a 2-D Conv of one group computed
// in bfloat16 on AMX / AVX512-BF16 through oneDNN, float32 accumulation.
//
//   Bf16Conv(X, W, B?, Z?) -> Y = activation(conv(bf16(X), bf16(W)) + B [+ Z])
//
// X and Y are float or bfloat16 (one type), NCHW; W (OIHW) and B are
// constants, float or bfloat16; Z, when present, is Y's shape and type and is
// added before the activation, as in ConvAdd. The attributes are Conv's plus
// the fused activation's (fused_activation.hpp). The pass `cpu.bf16_convs`
// (passes/bf16_convs.cpp) makes these nodes: from float Convs, FusedConvs and
// ConvAdds when `cpu.precision=bf16`, and from bfloat16 Convs always.
#ifndef SINGA_OPS_NN_CONV_BF16_HPP
#define SINGA_OPS_NN_CONV_BF16_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace nn {

// Channels-last [N][H][W][C] with the elements stored as bfloat16 in the
// first half of the float value's buffer: a Bf16Conv's output that only
// Bf16Convs read, as X, which they would round to bfloat16 anyway (so the
// results are the same, without the rounding pass and at half the traffic).
constexpr const char* kChannelsLastBf16Layout = "ai.singa.cpu.nhwc_bf16";

// Registers the Bf16Conv kernel and the pass that makes its nodes.
void register_bf16_conv(sdk::Registrar& reg);

}  // namespace nn
}  // namespace singa
#endif
