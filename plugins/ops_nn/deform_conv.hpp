// deform_conv.hpp - what DeformConv's forward (deform_conv.cpp) and backward
// (deform_conv_grad.cpp) share: the checked sizes of one call and the
// bilinear sample with zeros outside the image.
#ifndef SINGA_OPS_NN_DEFORM_CONV_HPP
#define SINGA_OPS_NN_DEFORM_CONV_HPP

#include "nn_common.hpp"

#include <cmath>
#include <string>

namespace singa {
namespace nn {

// Sizes of one DeformConv call: X [N, C, H, W], W [M, C / G, KH, KW],
// offset [N, OG * KH * KW * 2, OH, OW], output [N, M, OH, OW].
struct DeformConvDims {
  int64_t N = 0, C = 0, H = 0, W = 0, M = 0, G = 1, OG = 1;
  int64_t OH = 0, OW = 0, KH = 0, KW = 0;
  int64_t SH = 1, SW = 1, DH = 1, DW = 1, PH = 0, PW = 0;
  int64_t taps() const { return KH * KW; }
  int64_t positions() const { return OH * OW; }
};

// The four taps of a bilinear sample at (y, x) of an H x W plane: flat
// indices (-1: outside the image, reads zero) and weights, plus the weights'
// slopes along y and x. False when the sample is zero as a whole (the point
// lies a pixel or more outside, or is NaN), which also has no slope.
struct BilinearTaps {
  int64_t at[4];
  double w[4], dy[4], dx[4];
};

inline bool bilinear_taps(int64_t H, int64_t W, double y, double x, BilinearTaps& t) {
  if (!(y > -1.0 && y < double(H) && x > -1.0 && x < double(W))) return false;
  const double y0f = std::floor(y), x0f = std::floor(x);
  const int64_t y0 = int64_t(y0f), x0 = int64_t(x0f);
  const double ty = y - y0f, tx = x - x0f;
  const int64_t rows[4] = {y0, y0, y0 + 1, y0 + 1}, cols[4] = {x0, x0 + 1, x0, x0 + 1};
  const double wy[4] = {1 - ty, 1 - ty, ty, ty}, wx[4] = {1 - tx, tx, 1 - tx, tx};
  const double sy[4] = {-1, -1, 1, 1}, sx[4] = {-1, 1, -1, 1};
  for (int k = 0; k < 4; ++k) {
    const bool in = rows[k] >= 0 && rows[k] < H && cols[k] >= 0 && cols[k] < W;
    t.at[k] = in ? rows[k] * W + cols[k] : -1;
    t.w[k] = wy[k] * wx[k];
    t.dy[k] = sy[k] * wx[k];
    t.dx[k] = wy[k] * sx[k];
  }
  return true;
}

// Inputs: X, W, offset, B, mask (as the forward), Y, dY; outputs: the
// gradients of X, W, offset, B and mask (those whose input is present).
void deform_conv_backward(sdk::Context& ctx, const DeformConvDims& d, const std::string& where);

}  // namespace nn
}  // namespace singa
#endif
