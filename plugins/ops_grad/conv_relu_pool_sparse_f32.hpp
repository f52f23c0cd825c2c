// conv_relu_pool_sparse_f32.hpp - the gradient of ConvReluMaxPool (dX, dW,
// dB) straight from the pooled gradient, on AVX-512 CPUs
// (conv_relu_pool_sparse_f32.cpp).
//
// The conv output's gradient is nonzero only at each window's maximum, and
// only where Relu let the maximum through: a quarter of the positions at
// most with 2x2 windows, about an eighth in practice. ConvGrad's dense
// products spend the rest of their multiply-adds on zeros. Here, per image:
//   dW  each output channel m sums g x the unfolded input row of each of its
//       nonzero windows' maxima, gathered from a channels-last copy of the
//       image (a kernel row's taps are then one contiguous run), in
//       registers;
//   dX  each conv output position p sums g x W[m] over the nonzero windows
//       whose maximum is p (a counting sort of the image's windows) and adds
//       that kernel-sized patch into a channels-last input gradient, which is
//       transposed at the end;
//   dB  the masked gradient summed per channel.
#ifndef SINGA_OPS_GRAD_CONV_RELU_POOL_SPARSE_F32_HPP
#define SINGA_OPS_GRAD_CONV_RELU_POOL_SPARSE_F32_HPP

#include <conv_relu_pool.hpp>

namespace singa {
namespace grad {

// Whether conv_relu_pool_sparse_f32 takes this shape: one group, no padding,
// unit dilations (a kernel row's taps are then one run of the channels-last
// image), on an AVX-512 CPU.
bool conv_relu_pool_sparse_fits(const nn::ConvReluPoolShape& s);

// dx [N, C, H, W], dw [M, C, KH, KW] and db [M] (any may be null) from the
// pooled gradient dy, the pooled output y (Relu's mask: y > 0), the Indices
// idx, the input x and the weights w. Returns false when an index lies
// outside its plane (the outputs are then unspecified).
bool conv_relu_pool_sparse_f32(const sdk::Context& ctx, const float* dy, const float* y, const int64_t* idx,
                               const float* x, const float* w, const nn::ConvReluPoolShape& s, float* dx, float* dw,
                               float* db);

}  // namespace grad
}  // namespace singa
#endif
