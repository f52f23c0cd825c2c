// pointwise_dnnl.hpp - float 1x1 convolutions with many output channels
// (SqueezeNet's 512 -> 1000 classifier, MobileNetV2's 320 -> 1280 head)
// through oneDNN's matmul primitive, planned once for the input shape.
//
// conv_pointwise_f32 multiplies Y[M, HW] = W[M, C] X[C, HW] with oneDNN's
// sgemm, which repacks W on every call and ran these shapes at ~88% of one
// core's peak. The matmul primitive takes the product the other way round,
// Y^T[HW, M] = X^T W^T: X^T is X read in place through strides, W^T is packed
// once into oneDNN's brgemm layout at plan time, and the product ran at
// 97-99% of the peak (classifier 715 -> 648 us, MobileNetV2's head 214 -> 159
// us at 1 thread); each part's channels-last result goes to the NCHW output
// through channels_last_f32's transposing store, with bias and activation.
// With fewer than 256 output channels sgemm was as fast or faster (1.4-1.5x
// for 16 and 32), so those keep it. AVX-512 only (the store).
#ifndef SINGA_OPS_NN_POINTWISE_DNNL_HPP
#define SINGA_OPS_NN_POINTWISE_DNNL_HPP

#include "fused_activation.hpp"
#include "nn_common.hpp"  // Shape

#include <memory>

namespace singa {
namespace nn {

class DnnlPointwise {
 public:
  // Null when the shape is not one this takes (fewer than 256 output
  // channels, no AVX-512) or oneDNN has no brgemm code for it. w [M, C] (read
  // here and on the first run at each thread count, not kept), bias [M] or
  // null (copied).
  static std::unique_ptr<DnnlPointwise> plan(const Shape& x, int64_t M, const float* w, const float* bias,
                                             const ops::FusedActivation& act);
  ~DnnlPointwise();
  const Shape& input_shape() const;
  // x [N, C, H, W] of input_shape(), w the weights of plan(), y [N, M, H, W].
  void run(const sdk::Context& ctx, const float* x, const float* w, float* y) const;
  struct State;  // opaque outside pointwise_dnnl.cpp

 private:
  DnnlPointwise() = default;
  std::unique_ptr<State> s_;
};

}  // namespace nn
}  // namespace singa
#endif
