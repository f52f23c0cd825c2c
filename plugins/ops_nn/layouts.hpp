// layouts.hpp - the value layouts of the CPU pack (singa_layout_ext): the
// passes in plugins/ops_nn/passes set them on values, and the kernels that
// read or write them declare them when they register.
#ifndef SINGA_OPS_NN_LAYOUTS_HPP
#define SINGA_OPS_NN_LAYOUTS_HPP

namespace singa {
namespace nn {

// oneDNN's nChw16c: [N][C/16][H][W][16] for a logical [N, C, H, W] with C a
// multiple of 16, so it holds exactly as many floats as the plain tensor.
constexpr const char* kBlocked16Layout = "ai.singa.cpu.nChw16c";
// Channels last: [N][H][W][C] for a logical [N, C, H, W] (same size).
constexpr const char* kChannelsLastLayout = "ai.singa.cpu.nhwc";

}  // namespace nn
}  // namespace singa

#endif
