// winograd_f32.hpp - a float32 3x3 convolution (stride 1, one group) by
// Winograd's F(2x2, 3x3) or F(4x4, 3x3) on NCHW activations, for inputs with
// up to 64 channels.
//
// SqueezeNet's 3x3 expand convs read 16 to 64 channels (16 -> 64 on 55x55 up
// to 64 -> 256 on 13x13). oneDNN runs them through its Winograd code too, but
// behind a reorder of X into 16-channel blocks and another of Y back, and
// with its transforms sized for wide layers: at 16 input channels the node
// took longer than its direct arithmetic at the peak would. Here each input
// tile is transformed straight from the NCHW rows, 16 tiles side by side in
// the lanes of a vector (loads of a row's columns split by permutes into
// every 2nd or 4th one; on narrow planes 2 or 4 tile rows share a vector),
// the products per tile position run as a register tile of 8 output
// channels by up to 3 vectors of tiles, and the output tiles go straight
// into Y's rows (their columns woven back together), with bias and the
// fused activation applied on the way. F(2x2) leaves 4 multiply-adds per
// output pixel and input channel of the direct code's 9, F(4x4) 2.25, with
// costlier transforms and weights 4x the filters' size.
// AVX-512 only: call where winograd_on() holds.
#ifndef SINGA_OPS_NN_WINOGRAD_F32_HPP
#define SINGA_OPS_NN_WINOGRAD_F32_HPP

#include "fused_activation.hpp"
#include "spatial.hpp"

#include <cstdint>
#include <vector>

namespace singa {
namespace nn {

// Output channels per panel of transformed weights.
constexpr int64_t kWinogradPanel = 8;

// U = G g G^T of each 3x3 filter g of W [M, C, 3, 3] for output tiles of
// `tile` x `tile` (2 or 4) pixels, in panels of 8 output channels (the last
// one zero-padded): with A = tile + 2, the A * A values of output m, input c
// at u[((m / 8 * A * A + xi) * C + c) * 8 + m % 8].
struct WinogradWeights {
  int64_t M = 0, C = 0;
  int tile = 2;
  std::vector<float> u;
};

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C, int tile);

// True where the kernel can run: AVX-512 is there. Conv transforms weights
// for it only then, and not under option cpu.winograd=0 (to compare with
// oneDNN's path).
bool winograd_on();

// True when conv_winograd computes this convolution: 2-D, one group, a 3x3
// window, unit strides and dilations, any padding.
bool winograd_fits(const Geometry& g, int64_t group);

// True for the layers where it beats oneDNN's path, for `tile` and N input
// planes of H x W pixels: up to 256 input channels (measured on SqueezeNet's
// 3x3 convs, 16 to 64 input channels on 55x55 to 13x13, and at 128: DenseNet's
// 128 -> 32 on 56x56 and 28x28, a U-Net's 128 -> 64 on 64x64, 1.1-4x faster
// than oneDNN on NCHW), and transformed weights that weigh at most twice the
// activations. Heavier ones (SqueezeNet's 13x13 layers at batch 1: 2.4 MiB
// of weights in F(4x4) against 0.2 MiB of X and Y) made the node bound by
// the weights' traffic, twice as slow as oneDNN when the VM's memory is busy.
bool winograd_pays(int64_t C, int64_t M, int tile, int64_t N, int64_t H, int64_t W);

// The output tile (2 or 4) that costs least for an OH x OW output plane:
// F(4x4)'s fewer products against the lanes that its fewer tiles leave
// empty (Conv's option cpu.winograd_tile=2 or 4 forces one).
int winograd_tile(int64_t OH, int64_t OW);

// x [N, C, H, W], bias [M] or null, y [N, M, OH, OW] of window g.
void conv_winograd(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y,
                   int64_t N, const Geometry& g, const ops::FusedActivation& act);

}  // namespace nn
}  // namespace singa
#endif
