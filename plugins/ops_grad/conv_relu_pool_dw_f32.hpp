// conv_relu_pool_dw_f32.hpp - dW and dB of ConvReluMaxPool straight from the
// pooled gradient, on AVX-512 CPUs (conv_relu_pool_dw_f32.cpp).
//
// The conv output's gradient is nonzero only at each window's maximum, and
// only where Relu let the maximum through: a quarter of the positions at
// most with 2x2 windows, fewer in practice. ConvGrad's dense product
// dW += dY x unfold(X) spends three quarters of its multiply-adds on those
// zeros. Here each output channel m gathers, for its nonzero windows only,
// the unfolded input row of the window's maximum (from a channels-last copy
// of the image, so that a kernel row's taps are one contiguous run) and sums
// g x that row into registers: a quarter of the work or less, at about the
// dense product's rate.
#ifndef SINGA_OPS_GRAD_CONV_RELU_POOL_DW_F32_HPP
#define SINGA_OPS_GRAD_CONV_RELU_POOL_DW_F32_HPP

#include <conv_relu_pool.hpp>

namespace singa {
namespace grad {

// Whether conv_relu_pool_dw_f32 takes this shape: one group, no padding,
// unit dilations (a kernel row's taps are then one run of the channels-last
// image), on an AVX-512 CPU.
bool conv_relu_pool_dw_fits(const nn::ConvReluPoolShape& s);

// dw [M, C, KH, KW] and db [M] (either may be null) from the pooled gradient
// dy, the pooled output y (Relu's mask: y > 0) and the Indices idx. Returns
// false when an index lies outside its plane (dw, db are then unspecified).
bool conv_relu_pool_dw_f32(const sdk::Context& ctx, const float* dy, const float* y, const int64_t* idx, const float* x,
                           const nn::ConvReluPoolShape& s, float* dw, float* db);

}  // namespace grad
}  // namespace singa
#endif
