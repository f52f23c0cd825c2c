// kernels.hpp - the plugin's own CUDA kernels (kernels.cu), behind plain
// C++ launch functions so that the rest of the plugin compiles with the host
// compiler. Every launcher queues work on `stream` and returns the launch
// status (cudaGetLastError); execution errors surface at the next
// synchronising call. Sizes are 64-bit; pointers are device pointers.
#ifndef SINGA_CUDA_KERNELS_HPP
#define SINGA_CUDA_KERNELS_HPP

#include <cuda_runtime.h>

#include <cstdint>

namespace singa {
namespace cuda {

// ONNX element type codes (TensorProto.DataType, the values of
// singa_onnx_dtype) for the launchers that take the type at run time; the
// .cu files do not include the ABI header.
enum DType : int32_t {
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
};

// Output index i -> input offsets, after the host has merged adjacent
// dimensions that broadcast alike (broadcast.hpp builds these). Binary ops
// use strides[0] and [1]; Where also strides[2].
constexpr int kMaxBroadcastDims = 6;
constexpr int kMaxBroadcastInputs = 3;
struct BroadcastPlan {
  int rank = 0;
  int64_t n = 0;                            // output elements
  int64_t dims[kMaxBroadcastDims] = {};     // output dims, outermost first
  int64_t strides[kMaxBroadcastInputs][kMaxBroadcastDims] = {};  // per input, in elements; 0 = broadcast
  bool same_shape = false;                  // every input is laid out like the output
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv };
enum class UnaryOp { kRelu, kSigmoid, kTanh };

// y = a op b with numpy broadcasting. T: float, double, int32_t, int64_t.
// y may alias a or b when that input has the output's shape.
template <class T>
cudaError_t launch_binary(BinaryOp op, const T* a, const T* b, T* y, const BroadcastPlan& plan, cudaStream_t stream);

// y = a broadcast to the plan's output (strides[0] describe a). T: float.
template <class T>
cudaError_t launch_broadcast_copy(const T* a, T* y, const BroadcastPlan& plan, cudaStream_t stream);

// Elementwise activations; y may alias x. T: float, double (Relu also
// int32_t and int64_t).
template <class T>
cudaError_t launch_unary(UnaryOp op, const T* x, T* y, int64_t n, cudaStream_t stream);

// Softmax (or, with log, LogSoftmax) over the middle axis of x viewed as
// [outer, n, inner]. T: float, double. y may alias x.
template <class T>
cudaError_t launch_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t stream);

// Window geometry over 3 spatial dims (1-D and 2-D problems get leading
// dims of size 1): planes = N * C.
struct PoolGeometry {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

// MaxPool with optional Indices (flat over N, C and the spatial dims, in
// row-major or, with column_major, column-major spatial order).
cudaError_t launch_max_pool(const float* x, float* y, int64_t* indices, const PoolGeometry& g, bool column_major,
                            cudaStream_t stream);
// AveragePool; with count_include_pad the divisor counts pad positions but
// not a ceil_mode window's part beyond the end padding.
cudaError_t launch_avg_pool(const float* x, float* y, const PoolGeometry& g, bool count_include_pad, cudaStream_t stream);

// Copies each of `planes` 3-D planes of size in[] into planes of size out[]
// at offset begin[], zero elsewhere (explicit padding for convolution).
cudaError_t launch_pad_planes(const float* x, float* y, int64_t planes, const int64_t in[3], const int64_t out[3],
                              const int64_t begin[3], cudaStream_t stream);

// y[r] = mean of x[r * len .. (r + 1) * len).
cudaError_t launch_row_mean(const float* x, float* y, int64_t rows, int64_t len, cudaStream_t stream);

// Batch normalisation over x viewed as [N, channels, inner].
// Mean and population variance per channel.
cudaError_t launch_channel_stats(const float* x, int64_t N, int64_t channels, int64_t inner, float* mean, float* var,
                                 cudaStream_t stream);
// a = scale / sqrt(var + eps), c = bias - mean * a.
cudaError_t launch_bn_coeffs(const float* scale, const float* bias, const float* mean, const float* var, float epsilon,
                             int64_t channels, float* a, float* c, cudaStream_t stream);
// out = running * momentum + batch * (1 - momentum).
cudaError_t launch_bn_running(const float* running, const float* batch, float momentum, int64_t channels, float* out,
                              cudaStream_t stream);
// y = x * a[channel] + c[channel].
cudaError_t launch_bn_apply(const float* x, float* y, const float* a, const float* c, int64_t N, int64_t channels,
                            int64_t inner, cudaStream_t stream);

}  // namespace cuda
}  // namespace singa

#endif
