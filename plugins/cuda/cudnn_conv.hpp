// cudnn_conv.hpp - the two backward convolutions of cuDNN (data and filter)
// for ConvGrad and ConvTranspose, with symmetric pads only (callers pad or
// crop around them). Algorithms come from cuDNN's heuristics; without
// SINGA_CUDA_ALLOW_TF32=1 they run with full float (FMA) math, as Conv does.
#ifndef SINGA_CUDA_CUDNN_CONV_HPP
#define SINGA_CUDA_CUDNN_CONV_HPP

#include "cudnn_desc.hpp"
#include "ops_common.hpp"

#include <vector>

namespace singa {
namespace cuda {

// A float convolution x [N, C, S...] * w [M, C/group, K...] -> y [N, M, O...]
// with 2 or 3 spatial dims (a 1-D problem comes as 2-D with height 1).
struct ConvProblem {
  std::vector<int> x, w, y;                 // full dims
  std::vector<int> pads, strides, dilations;  // per spatial dim, symmetric pads
  int group = 1;
};

// The problem with spatial dims given per axis (1 to 3 of them); a 1-D
// problem gets a leading height of 1. Sizes must fit cuDNN's 32-bit ints.
ConvProblem make_conv_problem(int64_t N, int64_t C, int64_t M, int64_t group, const std::vector<int64_t>& x_spatial,
                              const std::vector<int64_t>& kernel, const std::vector<int64_t>& y_spatial,
                              const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& dilations, const NodeKernel& k);

class CudnnConv {
 public:
  CudnnConv(const ConvProblem& p, const NodeKernel& k);
  // dx = conv's gradient w.r.t. its input, from dy and w (overwrites dx).
  void backward_data(const sdk::Context& ctx, cudnnHandle_t h, const float* w, const float* dy, float* dx) const;
  // dw = conv's gradient w.r.t. its filter, from x and dy (overwrites dw).
  void backward_filter(const sdk::Context& ctx, cudnnHandle_t h, const float* x, const float* dy, float* dw) const;

 private:
  const NodeKernel& k_;
  TensorDesc x_, y_;
  FilterDesc w_;
  ConvDesc conv_;
};

}  // namespace cuda
}  // namespace singa

#endif
