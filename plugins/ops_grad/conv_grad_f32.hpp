// conv_grad_f32.hpp - ConvGrad for float on AVX-512 CPUs, through fast::sgemm
// (plugins/common). Per image and group:
//   dX  the columns W_g^T dY_g, folded back onto the input (col2im);
//   dW  dY_g times the unfolded input: with long images (many output
//       positions) as dY_g cols^T, the dot-product form; with short ones as
//       dY_g rows, where rows unfolds a channels-last copy of the image so
//       the product's vectors run along the taps (dW then comes out
//       channel-minor and is reordered once at the end).
// Images are spread over the pool; each task sums its own dW.
#ifndef SINGA_OPS_GRAD_CONV_GRAD_F32_HPP
#define SINGA_OPS_GRAD_CONV_GRAD_F32_HPP

#include <spatial.hpp>

#include <functional>

namespace singa {
namespace grad {

// dY, read from a dense [N, M, P] tensor or, for a fused op whose conv
// output never exists as a whole (ConvReluMaxPoolGrad), made one image at a
// time: fill(n, buf) writes image n's [M, P] gradient into buf (called from
// the pool's threads, once per image).
struct DyImages {
  const float* dense = nullptr;
  std::function<void(int64_t n, float* buf)> fill;
};

// Any of dx, dw, db may be null (not wanted).
void conv_grad_f32(const sdk::Context& ctx, const DyImages& dy, const float* x, const float* w, float* dx, float* dw,
                   float* db, const nn::Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group);

}  // namespace grad
}  // namespace singa
#endif
