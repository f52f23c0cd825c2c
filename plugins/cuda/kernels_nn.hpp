// kernels_nn.hpp - LRN, Dropout's masking and the backward kernels of the
// ai.singa.grad domain (kernels_nn.cu), with the CPU kernels' formulas
// (ops_nn/lrn.cpp, ops_nn/dropout.cpp, ops_grad/*.cpp). T is float or
// double (DType); every launcher queues work on `stream`.
#ifndef SINGA_CUDA_KERNELS_NN_HPP
#define SINGA_CUDA_KERNELS_NN_HPP

#include "kernels.hpp"

namespace singa {
namespace cuda {

// y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2,
// c + size/2])^beta, x viewed as [N, C, S].
cudaError_t launch_lrn(DType t, const void* x, void* y, int64_t N, int64_t C, int64_t S, int64_t size, double alpha,
                       double beta, double bias, cudaStream_t stream);

// y = keep ? x * scale : 0; mask (bool bytes, may be null) = keep.
cudaError_t launch_dropout(DType t, const void* x, const uint8_t* keep, void* y, uint8_t* mask, int64_t n, double scale,
                           cudaStream_t stream);

// dX = dY * f'(v), v the saved Y (Relu, Sigmoid, Tanh) or X (the others).
enum class ActGrad { kRelu, kSigmoid, kTanh, kLeakyRelu, kElu, kSoftplus };
cudaError_t launch_act_grad(ActGrad op, DType t, const void* dy, const void* v, void* dx, int64_t n, double alpha,
                            cudaStream_t stream);

// Softmax / LogSoftmax gradient from (dY, Y) along the middle axis of
// [outer, n, inner]; the dot product runs in double.
cudaError_t launch_softmax_grad(bool log, DType t, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                                int64_t inner, cudaStream_t stream);

// dX (zeroed here) += dY at MaxPool's Indices, plane by plane; an index
// outside its (n, c) plane other than -1 sets *bad (device int) to 1.
cudaError_t launch_max_pool_grad(DType t, const void* dy, const int64_t* indices, void* dx, int64_t planes,
                                 int64_t in_size, int64_t out_size, int* bad, cudaStream_t stream);

// AveragePool's gradient: each input position sums dY / count over the
// windows that read it (no atomics: the result does not depend on timing).
cudaError_t launch_avg_pool_grad(DType t, const void* dy, void* dx, const PoolGeometry& g, bool count_include_pad,
                                 cudaStream_t stream);

// BatchNormalizationGrad over x viewed as [N, C, S]. A real parameter
// vector whose element type may differ from X's (float or double).
struct RealVec {
  const void* p = nullptr;
  bool is_double = false;
};
// Per channel, in double: stats[4c..4c+3] = mean, 1/sqrt(var + eps),
// sum(dY), sum(dY * xhat). Training mode recomputes the batch mean and
// variance; otherwise they come from mean/var.
cudaError_t launch_bn_grad_stats(DType t, const void* dy, const void* x, RealVec mean, RealVec var, double epsilon,
                                 bool training, int64_t N, int64_t C, int64_t S, double* stats, cudaStream_t stream);
cudaError_t launch_bn_grad_dx(DType t, const void* dy, const void* x, RealVec scale, const double* stats, bool training,
                              int64_t N, int64_t C, int64_t S, void* dx, cudaStream_t stream);
// dScale = sum(dY * xhat), dB = sum(dY) in the scale's type (either may be null).
cudaError_t launch_bn_grad_params(const double* stats, int64_t C, bool is_double, void* dscale, void* dbias,
                                  cudaStream_t stream);

// SoftmaxCrossEntropyLossGrad: dS[n, c, d] = ignored ? 0 : (exp(lp) - [c == label]) * g,
// g = dLoss (per item with reduction none), divided by denom for mean, times
// the label's weight. labels (device int64, N*D) and weights (device double,
// C, or null) were checked on the host.
struct SceGradArgs {
  RealVec dloss;
  bool per_item = false, mean = false, has_ignore = false;
  int64_t ignore = 0;
  double denom = 0;
  const int64_t* labels = nullptr;
  const double* weights = nullptr;
  int64_t N = 0, C = 0, D = 0;
};
cudaError_t launch_sce_grad(DType t, const void* log_prob, void* dscores, const SceGradArgs& a, cudaStream_t stream);

}  // namespace cuda
}  // namespace singa

#endif
