// winograd_f2_f32.hpp - a float32 3x3 convolution (stride 1, one group) by
// Winograd's F(2x2, 3x3) on NCHW activations, for inputs with few channels.
//
// SqueezeNet's 3x3 expand convs read 16 or 32 channels (16 -> 64 on 55x55,
// 32 -> 128 on 27x27). oneDNN runs them through its Winograd code too, but
// behind a reorder of X into 16-channel blocks and another of Y back, and
// with its transforms sized for wide layers: at 16 input channels the node
// took longer than its direct arithmetic at the peak would. Here each
// 4x4 input tile is transformed straight from the NCHW rows, 16 tiles of a
// tile row side by side in the lanes of a vector (a load of 32 columns split
// into even and odd ones), the 16 products per tile run as a register tile
// of 8 output channels by up to 3 vectors of tiles, and the 2x2 output tiles
// go straight into Y's rows (even and odd columns woven back together), with
// bias and the fused activation applied on the way. Four multiply-adds per
// output pixel and input channel remain of the direct code's nine.
// AVX-512 only: call where winograd_f2_on() holds.
#ifndef SINGA_OPS_NN_WINOGRAD_F2_F32_HPP
#define SINGA_OPS_NN_WINOGRAD_F2_F32_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// Output channels per panel of transformed weights.
constexpr int64_t kWinogradPanel = 8;

// U = G g G^T of each 3x3 filter g of W [M, C, 3, 3], in panels of 8 output
// channels (the last one zero-padded): the 16 values of output m, input c at
// u[((m / 8 * 16 + xi) * C + c) * 8 + m % 8], xi = 0..15 over the 4x4 tile.
struct WinogradWeights {
  int64_t M = 0, C = 0;
  std::vector<float> u;
};

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C);

// True where the kernel runs: AVX-512 is there and SINGA_WINOGRAD_F2=0 (to
// compare with oneDNN's path) is not set. Weights are transformed only then.
bool winograd_f2_on();

// True when conv_winograd_f2 computes this convolution: 2-D, one group, a
// 3x3 window, unit strides and dilations, any padding.
bool winograd_f2_fits(const Geometry& g, int64_t group);

// True for the layers where it beats oneDNN's path (measured on SqueezeNet's
// and ResNet-18's shapes, docs/performance.md): few input channels.
bool winograd_f2_pays(int64_t C, int64_t M);

// x [N, C, H, W], bias [M] or null, y [N, M, OH, OW] of window g.
void conv_winograd_f2(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y,
                      int64_t N, const Geometry& g, const ops::FusedActivation& act);

}  // namespace nn
}  // namespace singa
#endif
