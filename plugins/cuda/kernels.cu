// The plugin's first CUDA kernels: Add/Sub/Mul/Div, Relu/Sigmoid/Tanh,
// (Log)Softmax, pooling, padding for Conv, batch norm. The other families
// live in kernels_*.cu, compiled separately so a change rebuilds one file.
#include "device_common.cuh"
#include "window_taps.cuh"
#include "kernels.hpp"

#include <cfloat>
#include <cmath>
#include <type_traits>

namespace singa {
namespace cuda {

using namespace dev;

namespace {

// ------------------------------------------------------------ elementwise

template <class T>
struct AddF {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct SubF {
  __device__ T operator()(T a, T b) const { return a - b; }
};
template <class T>
struct MulF {
  __device__ T operator()(T a, T b) const { return a * b; }
};
template <class T>
struct DivF {
  __device__ T operator()(T a, T b) const { return a / b; }
};

template <class T, class F>
__global__ void binary_same_kernel(const T* a, const T* b, T* y, int64_t n, F f) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) y[i] = f(a[i], b[i]);
}

// Offsets of output element i in both inputs.
__device__ __forceinline__ void broadcast_offsets(const BroadcastPlan& p, int64_t i, int64_t& oa, int64_t& ob) {
  int64_t off[2];
  plan_offsets<2>(p, i, off);
  oa = off[0];
  ob = off[1];
}

template <class T, class F>
__global__ void binary_broadcast_kernel(const T* a, const T* b, T* y, BroadcastPlan p, F f) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t oa, ob;
    broadcast_offsets(p, i, oa, ob);
    y[i] = f(a[oa], b[ob]);
  }
}

template <class T>
__global__ void broadcast_copy_kernel(const T* a, T* y, BroadcastPlan p) {
  for (int64_t i = global_index(); i < p.n; i += grid_stride()) {
    int64_t oa, ob;
    broadcast_offsets(p, i, oa, ob);
    y[i] = a[oa];
  }
}

template <class T, class F>
cudaError_t run_binary(const T* a, const T* b, T* y, const BroadcastPlan& p, cudaStream_t stream, F f) {
  if (p.same_shape)
    binary_same_kernel<<<blocks_for(p.n), kThreads, 0, stream>>>(a, b, y, p.n, f);
  else
    binary_broadcast_kernel<<<blocks_for(p.n), kThreads, 0, stream>>>(a, b, y, p, f);
  return cudaGetLastError();
}

template <class T>
__device__ __forceinline__ T relu(T x) {
  // Written so that NaN passes through, as max(x, 0) does on the CPU.
  return x < T(0) ? T(0) : x;
}
__device__ __forceinline__ float sigmoid(float x) {
  // Both branches exponentiate a non-positive number: no overflow.
  if (x >= 0.f) return 1.f / (1.f + expf(-x));
  const float e = expf(x);
  return e / (1.f + e);
}
__device__ __forceinline__ double sigmoid(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  const double e = exp(x);
  return e / (1.0 + e);
}

template <class T, UnaryOp Op>
__global__ void unary_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const T v = x[i];
    if constexpr (Op == UnaryOp::kRelu)
      y[i] = relu(v);
    else if constexpr (Op == UnaryOp::kSigmoid)
      y[i] = sigmoid(v);
    else
      y[i] = tanh(v);
  }
}

// ------------------------------------------------------------ softmax

// Softmax or, with Log, LogSoftmax. The row maximum is subtracted before exp
// so nothing overflows, and the sum of exponentials is kept in double, as the
// CPU kernel does; LogSoftmax writes (x - max) - log(sum).
template <class T, bool Log>
__device__ __forceinline__ T softmax_out(T x, T m, double s) {
  if constexpr (Log)
    return (x - m) - T(log(s));
  else
    return T(exp(x - m)) * T(1.0 / s);
}

// One block per row of length n (inner == 1): the common last-axis case.
template <class T, bool Log>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp()(m, double(xr[j]));
    const T mt = T(block_reduce(m, MaxOp(), double(-INFINITY), scratch));
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += double(T(exp(xr[j] - mt)));
    s = block_reduce(s, SumOp(), 0.0, scratch);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = softmax_out<T, Log>(xr[j], mt, s);
  }
}

// One thread per (outer, inner) column; neighbouring threads read
// neighbouring addresses.
template <class T, bool Log>
__global__ void softmax_columns_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  const int64_t columns = outer * inner;
  for (int64_t c = global_index(); c < columns; c += grid_stride()) {
    const int64_t o = c / inner, i = c - o * inner;
    const T* xc = x + o * n * inner + i;
    T* yc = y + o * n * inner + i;
    T m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = MaxOp()(m, xc[j * inner]);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += double(T(exp(xc[j * inner] - m)));
    for (int64_t j = 0; j < n; ++j) yc[j * inner] = softmax_out<T, Log>(xc[j * inner], m, s);
  }
}

// ------------------------------------------------------------ pooling

// Splits flat output index i into the plane and the window taps per axis.
__device__ void pool_position(const PoolGeometry& g, int64_t i, int64_t& plane, Taps t[3], int64_t lo_pad_mult) {
  int64_t o[3];
  o[2] = i % g.out[2];
  i /= g.out[2];
  o[1] = i % g.out[1];
  i /= g.out[1];
  o[0] = i % g.out[0];
  plane = i / g.out[0];
  for (int a = 0; a < 3; ++a) {
    // lo_pad_mult 1 clips to the padded extent, 0 to the real input.
    const int64_t lo = -g.pb[a] * lo_pad_mult, hi = g.in[a] + g.pe[a] * lo_pad_mult;
    t[a] = window_taps(o[a], g.s[a], g.pb[a], g.d[a], g.k[a], lo, hi);
  }
}

__global__ void max_pool_kernel(const float* x, float* y, int64_t* indices, PoolGeometry g, bool column_major) {
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t plane;
    Taps t[3];
    pool_position(g, i, plane, t, 0);
    const float* xp = x + plane * in_size;
    bool found = false;
    float best = -INFINITY;
    int64_t best_at = 0;
    for (int64_t kd = t[0].kb; kd < t[0].ke; ++kd)
      for (int64_t kh = t[1].kb; kh < t[1].ke; ++kh) {
        const int64_t row = (t[0].at(kd) * g.in[1] + t[1].at(kh)) * g.in[2];
        for (int64_t kw = t[2].kb; kw < t[2].ke; ++kw) {
          const int64_t at = row + t[2].at(kw);
          const float v = xp[at];
          if (!found || v > best) {
            best = v;
            best_at = at;
            found = true;
          }
        }
      }
    y[i] = best;
    if (indices) {
      int64_t flat = best_at;
      if (column_major) {
        const int64_t iw = best_at % g.in[2], ih = (best_at / g.in[2]) % g.in[1], id = best_at / (g.in[2] * g.in[1]);
        flat = id + ih * g.in[0] + iw * g.in[0] * g.in[1];
      }
      indices[i] = found ? plane * in_size + flat : -1;
    }
  }
}

__global__ void avg_pool_kernel(const float* x, float* y, PoolGeometry g, bool count_include_pad) {
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t plane;
    Taps t[3];
    pool_position(g, i, plane, t, 0);
    const float* xp = x + plane * in_size;
    float sum = 0.f;
    for (int64_t kd = t[0].kb; kd < t[0].ke; ++kd)
      for (int64_t kh = t[1].kb; kh < t[1].ke; ++kh) {
        const float* row = xp + (t[0].at(kd) * g.in[1] + t[1].at(kh)) * g.in[2];
        for (int64_t kw = t[2].kb; kw < t[2].ke; ++kw) sum += row[t[2].at(kw)];
      }
    int64_t count = t[0].count() * t[1].count() * t[2].count();
    if (count_include_pad) {
      Taps padded[3];
      pool_position(g, i, plane, padded, 1);
      count = padded[0].count() * padded[1].count() * padded[2].count();
    }
    y[i] = count > 0 ? sum / float(count) : 0.f;
  }
}

__global__ void pad_planes_kernel(const float* x, float* y, int64_t planes, int64_t in0, int64_t in1, int64_t in2,
                                  int64_t out0, int64_t out1, int64_t out2, int64_t b0, int64_t b1, int64_t b2) {
  const int64_t n = planes * out0 * out1 * out2;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    int64_t r = i;
    const int64_t w = r % out2 - b2;
    r /= out2;
    const int64_t h = r % out1 - b1;
    r /= out1;
    const int64_t d = r % out0 - b0;
    const int64_t p = r / out0;
    const bool inside = w >= 0 && w < in2 && h >= 0 && h < in1 && d >= 0 && d < in0;
    y[i] = inside ? x[((p * in0 + d) * in1 + h) * in2 + w] : 0.f;
  }
}

__global__ void row_mean_kernel(const float* x, float* y, int64_t rows, int64_t len) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * len;
    double s = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += xr[j];
    s = block_reduce(s, SumOp(), 0.0, scratch);
    if (threadIdx.x == 0) y[r] = float(s / double(len));
  }
}

// ------------------------------------------------------------ batch norm

// One block per channel: two passes (mean, then squared deviations) in double.
__global__ void channel_stats_kernel(const float* x, int64_t N, int64_t channels, int64_t inner, float* mean,
                                     float* var) {
  __shared__ double scratch[32];
  const int64_t count = N * inner;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t n = j / inner, i = j - n * inner;
      s += x[(n * channels + c) * inner + i];
    }
    const double m = block_reduce(s, SumOp(), 0.0, scratch) / double(count);
    double ss = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t n = j / inner, i = j - n * inner;
      const double dv = x[(n * channels + c) * inner + i] - m;
      ss += dv * dv;
    }
    ss = block_reduce(ss, SumOp(), 0.0, scratch);
    if (threadIdx.x == 0) {
      mean[c] = float(m);
      var[c] = float(ss / double(count));
    }
  }
}

__global__ void bn_coeffs_kernel(const float* scale, const float* bias, const float* mean, const float* var,
                                 double epsilon, int64_t channels, float* a, float* c) {
  for (int64_t i = global_index(); i < channels; i += grid_stride()) {
    const double ai = double(scale[i]) / sqrt(double(var[i]) + epsilon);
    a[i] = float(ai);
    c[i] = float(double(bias[i]) - double(mean[i]) * ai);
  }
}

__global__ void bn_running_kernel(const float* running, const float* batch, float momentum, int64_t channels,
                                  float* out) {
  for (int64_t i = global_index(); i < channels; i += grid_stride())
    out[i] = running[i] * momentum + batch[i] * (1.f - momentum);
}

__global__ void bn_apply_kernel(const float* x, float* y, const float* a, const float* c, int64_t n, int64_t channels,
                                int64_t inner) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t ch = (i / inner) % channels;
    y[i] = x[i] * a[ch] + c[ch];
  }
}

}  // namespace

// ------------------------------------------------------------ launchers

template <class T>
cudaError_t launch_binary(BinaryOp op, const T* a, const T* b, T* y, const BroadcastPlan& p, cudaStream_t stream) {
  if (p.n <= 0) return cudaSuccess;
  clear_stale_error();
  switch (op) {
    case BinaryOp::kAdd: return run_binary(a, b, y, p, stream, AddF<T>());
    case BinaryOp::kSub: return run_binary(a, b, y, p, stream, SubF<T>());
    case BinaryOp::kMul: return run_binary(a, b, y, p, stream, MulF<T>());
    case BinaryOp::kDiv:
      // Integer division by zero has no defined result on the GPU; the
      // plugin registers Div for floating types only.
      if (std::is_integral<T>::value) return cudaErrorInvalidValue;
      return run_binary(a, b, y, p, stream, DivF<T>());
  }
  return cudaErrorInvalidValue;
}

template cudaError_t launch_binary<float>(BinaryOp, const float*, const float*, float*, const BroadcastPlan&, cudaStream_t);
template cudaError_t launch_binary<double>(BinaryOp, const double*, const double*, double*, const BroadcastPlan&,
                                           cudaStream_t);
template cudaError_t launch_binary<int32_t>(BinaryOp, const int32_t*, const int32_t*, int32_t*, const BroadcastPlan&,
                                            cudaStream_t);
template cudaError_t launch_binary<int64_t>(BinaryOp, const int64_t*, const int64_t*, int64_t*, const BroadcastPlan&,
                                            cudaStream_t);

template <class T>
cudaError_t launch_broadcast_copy(const T* a, T* y, const BroadcastPlan& p, cudaStream_t stream) {
  if (p.n <= 0) return cudaSuccess;
  clear_stale_error();
  broadcast_copy_kernel<<<blocks_for(p.n), kThreads, 0, stream>>>(a, y, p);
  return cudaGetLastError();
}

template cudaError_t launch_broadcast_copy<float>(const float*, float*, const BroadcastPlan&, cudaStream_t);

template <class T>
cudaError_t launch_unary(UnaryOp op, const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  const int blocks = blocks_for(n);
  if (op == UnaryOp::kRelu) {
    unary_kernel<T, UnaryOp::kRelu><<<blocks, kThreads, 0, stream>>>(x, y, n);
  } else if constexpr (std::is_floating_point<T>::value) {
    if (op == UnaryOp::kSigmoid)
      unary_kernel<T, UnaryOp::kSigmoid><<<blocks, kThreads, 0, stream>>>(x, y, n);
    else
      unary_kernel<T, UnaryOp::kTanh><<<blocks, kThreads, 0, stream>>>(x, y, n);
  } else {
    return cudaErrorInvalidValue;  // only Relu is defined on integers
  }
  return cudaGetLastError();
}

template cudaError_t launch_unary<float>(UnaryOp, const float*, float*, int64_t, cudaStream_t);
template cudaError_t launch_unary<double>(UnaryOp, const double*, double*, int64_t, cudaStream_t);
template cudaError_t launch_unary<int32_t>(UnaryOp, const int32_t*, int32_t*, int64_t, cudaStream_t);
template cudaError_t launch_unary<int64_t>(UnaryOp, const int64_t*, int64_t*, int64_t, cudaStream_t);

template <class T, bool Log>
cudaError_t run_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  if (inner == 1)
    softmax_rows_kernel<T, Log><<<row_blocks(outer), row_threads(n), 0, stream>>>(x, y, outer, n);
  else
    softmax_columns_kernel<T, Log><<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, n, inner);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0) return cudaSuccess;
  clear_stale_error();
  return log ? run_softmax<T, true>(x, y, outer, n, inner, stream) : run_softmax<T, false>(x, y, outer, n, inner, stream);
}

template cudaError_t launch_softmax<float>(const float*, float*, int64_t, int64_t, int64_t, bool, cudaStream_t);
template cudaError_t launch_softmax<double>(const double*, double*, int64_t, int64_t, int64_t, bool, cudaStream_t);

cudaError_t launch_max_pool(const float* x, float* y, int64_t* indices, const PoolGeometry& g, bool column_major,
                            cudaStream_t stream) {
  const int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  max_pool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, indices, g, column_major);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool(const float* x, float* y, const PoolGeometry& g, bool count_include_pad, cudaStream_t stream) {
  const int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  avg_pool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, g, count_include_pad);
  return cudaGetLastError();
}

cudaError_t launch_pad_planes(const float* x, float* y, int64_t planes, const int64_t in[3], const int64_t out[3],
                              const int64_t begin[3], cudaStream_t stream) {
  const int64_t n = planes * out[0] * out[1] * out[2];
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  pad_planes_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, planes, in[0], in[1], in[2], out[0], out[1], out[2],
                                                             begin[0], begin[1], begin[2]);
  return cudaGetLastError();
}

cudaError_t launch_row_mean(const float* x, float* y, int64_t rows, int64_t len, cudaStream_t stream) {
  if (rows <= 0 || len <= 0) return cudaSuccess;
  clear_stale_error();
  const int64_t grid = rows < kMaxBlocks ? rows : kMaxBlocks;
  row_mean_kernel<<<int(grid), row_threads(len), 0, stream>>>(x, y, rows, len);
  return cudaGetLastError();
}

cudaError_t launch_channel_stats(const float* x, int64_t N, int64_t channels, int64_t inner, float* mean, float* var,
                                 cudaStream_t stream) {
  if (channels <= 0 || N * inner <= 0) return cudaSuccess;
  clear_stale_error();
  const int64_t grid = channels < kMaxBlocks ? channels : kMaxBlocks;
  channel_stats_kernel<<<int(grid), row_threads(N * inner), 0, stream>>>(x, N, channels, inner, mean, var);
  return cudaGetLastError();
}

cudaError_t launch_bn_coeffs(const float* scale, const float* bias, const float* mean, const float* var, float epsilon,
                             int64_t channels, float* a, float* c, cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  clear_stale_error();
  bn_coeffs_kernel<<<blocks_for(channels), kThreads, 0, stream>>>(scale, bias, mean, var, double(epsilon), channels, a, c);
  return cudaGetLastError();
}

cudaError_t launch_bn_running(const float* running, const float* batch, float momentum, int64_t channels, float* out,
                              cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  clear_stale_error();
  bn_running_kernel<<<blocks_for(channels), kThreads, 0, stream>>>(running, batch, momentum, channels, out);
  return cudaGetLastError();
}

cudaError_t launch_bn_apply(const float* x, float* y, const float* a, const float* c, int64_t N, int64_t channels,
                            int64_t inner, cudaStream_t stream) {
  const int64_t n = N * channels * inner;
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  bn_apply_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, a, c, n, channels, inner);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace singa
