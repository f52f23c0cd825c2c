// LRN, Dropout's masking and the backward kernels of ai.singa.grad. Each
// mirrors its CPU kernel's arithmetic (types, accumulation, order of
// operations where it matters) so that training on either device follows
// the same numbers.
#include "device_common.cuh"
#include "kernels_nn.hpp"
#include "window_taps.cuh"

#include <cmath>

namespace singa {
namespace cuda {

using namespace dev;

namespace {

template <class F>
cudaError_t real_type(DType t, F&& f) {
  switch (t) {
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    default: return cudaErrorInvalidValue;
  }
}

__device__ __forceinline__ double load(RealVec v, int64_t i) {
  return v.is_double ? static_cast<const double*>(v.p)[i] : double(static_cast<const float*>(v.p)[i]);
}

// ------------------------------------------------------------ LRN, Dropout

template <class T>
__global__ void lrn_kernel(const T* x, T* y, int64_t N, int64_t C, int64_t S, int64_t before, int64_t after, T scale,
                           T beta, T bias) {
  const int64_t n_all = N * C * S;
  for (int64_t i = global_index(); i < n_all; i += grid_stride()) {
    const int64_t s = i % S, p = i / S, c = p % C, n = p / C;
    const int64_t lo = c - before < 0 ? 0 : c - before, hi = c + after > C - 1 ? C - 1 : c + after;
    T sq = T(0);
    for (int64_t cc = lo; cc <= hi; ++cc) {
      const T v = x[(n * C + cc) * S + s];
      sq += v * v;
    }
    y[i] = x[i] / pow(bias + scale * sq, beta);
  }
}

template <class T>
__global__ void dropout_kernel(const T* x, const uint8_t* keep, T* y, uint8_t* mask, int64_t n, T scale) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const bool k = keep[i] != 0;
    y[i] = k ? x[i] * scale : T(0);
    if (mask) mask[i] = k ? 1 : 0;
  }
}

// ------------------------------------------------------------ activations

template <class T>
__device__ __forceinline__ T act_local(ActGrad op, T v, T a) {
  switch (op) {
    case ActGrad::kRelu: return v > T(0) ? T(1) : T(0);
    case ActGrad::kSigmoid: return v * (T(1) - v);
    case ActGrad::kTanh: return T(1) - v * v;
    case ActGrad::kLeakyRelu: return v >= T(0) ? T(1) : a;
    case ActGrad::kElu: return v > T(0) ? T(1) : a * exp(v);
    case ActGrad::kSoftplus: return T(1) / (T(1) + exp(-v));
  }
  return T(0);
}

template <class T>
__global__ void act_grad_kernel(ActGrad op, const T* dy, const T* v, T* dx, int64_t n, T a) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) dx[i] = dy[i] * act_local(op, v[i], a);
}

template <class T>
__global__ void softmax_grad_kernel(bool log, const T* g, const T* p, T* o, int64_t outer, int64_t n, int64_t inner) {
  const int64_t columns = outer * inner;
  for (int64_t q = global_index(); q < columns; q += grid_stride()) {
    const int64_t base = (q / inner) * n * inner + q % inner;
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = base + j * inner;
      dot += log ? double(g[i]) : double(g[i]) * double(p[i]);
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = base + j * inner;
      o[i] = log ? T(g[i] - exp(p[i]) * T(dot)) : T(p[i] * (g[i] - T(dot)));
    }
  }
}

// ------------------------------------------------------------ pooling

template <class T>
__global__ void max_pool_grad_kernel(const T* g, const int64_t* ix, T* o, int64_t planes, int64_t in_size,
                                     int64_t out_size, int* bad) {
  const int64_t n = planes * out_size;
  for (int64_t j = global_index(); j < n; j += grid_stride()) {
    const int64_t p = j / out_size;
    const int64_t at = ix[j] - p * in_size;
    if (at < 0 || at >= in_size) {
      if (ix[j] != -1) *bad = 1;  // -1: a window entirely in padding
      continue;
    }
    atomicAdd(o + p * in_size + at, g[j]);
  }
}

// Windows along one axis that read input position i, each with its tap count.
struct AxisWindows {
  int64_t s, pb, pe, d, k, in, out;
  // Output o reads i at tap kk when o * s - pb + kk * d == i.
  __device__ bool output_for(int64_t i, int64_t kk, int64_t& o) const {
    const int64_t t = i + pb - kk * d;
    if (t < 0 || t % s != 0) return false;
    o = t / s;
    return o < out;
  }
  __device__ int64_t count(int64_t o, bool include_pad) const {
    return include_pad ? window_taps(o, s, pb, d, k, -pb, in + pe).count() : window_taps(o, s, pb, d, k, 0, in).count();
  }
};

template <class T>
__global__ void avg_pool_grad_kernel(const T* gy, T* dx, PoolGeometry g, bool include_pad) {
  AxisWindows ax[3];
  for (int a = 0; a < 3; ++a) ax[a] = AxisWindows{g.s[a], g.pb[a], g.pe[a], g.d[a], g.k[a], g.in[a], g.out[a]};
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  const int64_t n = g.planes * in_size;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t plane = i / in_size, r = i - plane * in_size;
    const int64_t iw = r % g.in[2], ih = (r / g.in[2]) % g.in[1], id = r / (g.in[2] * g.in[1]);
    const T* gp = gy + plane * out_size;
    T sum = T(0);
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      int64_t od;
      if (!ax[0].output_for(id, kd, od)) continue;
      const int64_t cd = ax[0].count(od, include_pad);
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        int64_t oh;
        if (!ax[1].output_for(ih, kh, oh)) continue;
        const int64_t ch = ax[1].count(oh, include_pad);
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          int64_t ow;
          if (!ax[2].output_for(iw, kw, ow)) continue;
          const int64_t count = cd * ch * ax[2].count(ow, include_pad);
          if (count > 0) sum += gp[(od * g.out[1] + oh) * g.out[2] + ow] / T(count);
        }
      }
    }
    dx[i] = sum;
  }
}

// ------------------------------------------------------------ batch norm

template <class T>
__global__ void bn_grad_stats_kernel(const T* g, const T* x, RealVec mean, RealVec var, double eps, bool training,
                                     int64_t N, int64_t C, int64_t S, double* stats) {
  __shared__ double scratch[32];
  const int64_t count = N * S;
  const double M = double(count);
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double m, v;
    if (training) {
      double s = 0;
      for (int64_t j = threadIdx.x; j < count; j += blockDim.x) s += double(x[((j / S) * C + c) * S + j % S]);
      m = block_reduce(s, SumOp(), 0.0, scratch) / M;
      double ss = 0;
      for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const double d = double(x[((j / S) * C + c) * S + j % S]) - m;
        ss += d * d;
      }
      v = block_reduce(ss, SumOp(), 0.0, scratch) / M;
    } else {
      m = load(mean, c);
      v = load(var, c);
    }
    const double inv = 1.0 / sqrt(v + eps);
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t at = ((j / S) * C + c) * S + j % S;
      sg += double(g[at]);
      sgx += double(g[at]) * (double(x[at]) - m) * inv;
    }
    sg = block_reduce(sg, SumOp(), 0.0, scratch);
    sgx = block_reduce(sgx, SumOp(), 0.0, scratch);
    if (threadIdx.x == 0) {
      stats[4 * c] = m;
      stats[4 * c + 1] = inv;
      stats[4 * c + 2] = sg;
      stats[4 * c + 3] = sgx;
    }
  }
}

template <class T>
__global__ void bn_grad_dx_kernel(const T* g, const T* x, RealVec scale, const double* stats, bool training, int64_t N,
                                  int64_t C, int64_t S, T* dx) {
  const int64_t n = N * C * S;
  const double M = double(N * S);
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t c = (i / S) % C;
    const double m = stats[4 * c], inv = stats[4 * c + 1];
    const double k = load(scale, c) * inv;
    if (training) {
      const double xhat = (double(x[i]) - m) * inv;
      dx[i] = T(k * (double(g[i]) - stats[4 * c + 2] / M - xhat * stats[4 * c + 3] / M));
    } else {
      dx[i] = T(k * double(g[i]));
    }
  }
}

template <class U>
__global__ void bn_grad_params_kernel(const double* stats, int64_t C, U* ds, U* db) {
  for (int64_t c = global_index(); c < C; c += grid_stride()) {
    if (ds) ds[c] = U(stats[4 * c + 3]);
    if (db) db[c] = U(stats[4 * c + 2]);
  }
}

// ------------------------------------------------------------ loss

template <class T>
__global__ void sce_grad_kernel(const T* p, T* o, SceGradArgs a) {
  const int64_t n = a.N * a.C * a.D;
  for (int64_t i = global_index(); i < n; i += grid_stride()) {
    const int64_t d = i % a.D, c = (i / a.D) % a.C, item = (i / (a.C * a.D)) * a.D + d;
    const int64_t l = a.labels[item];
    const bool ignored = a.has_ignore && l == a.ignore;
    double g = load(a.dloss, a.per_item ? item : 0);
    if (a.mean) g = a.denom > 0 ? g / a.denom : 0.0;
    if (!ignored && a.weights) g *= a.weights[l];
    o[i] = ignored ? T(0) : T((exp(double(p[i])) - (c == l ? 1.0 : 0.0)) * g);
  }
}

}  // namespace

// ------------------------------------------------------------ launchers

cudaError_t launch_lrn(DType t, const void* x, void* y, int64_t N, int64_t C, int64_t S, int64_t size, double alpha,
                       double beta, double bias, cudaStream_t stream) {
  const int64_t n = N * C * S;
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    // alpha / size in the element type, as the CPU computes it.
    lrn_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), N, C, S, before,
                                                          after, T(alpha) / T(size), T(beta), T(bias));
    return cudaGetLastError();
  });
}

cudaError_t launch_dropout(DType t, const void* x, const uint8_t* keep, void* y, uint8_t* mask, int64_t n, double scale,
                           cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), keep, static_cast<T*>(y), mask,
                                                              n, T(scale));
    return cudaGetLastError();
  });
}

cudaError_t launch_act_grad(ActGrad op, DType t, const void* dy, const void* v, void* dx, int64_t n, double alpha,
                            cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    act_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(dy), static_cast<const T*>(v),
                                                               static_cast<T*>(dx), n, T(alpha));
    return cudaGetLastError();
  });
}

cudaError_t launch_softmax_grad(bool log, DType t, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                                int64_t inner, cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    softmax_grad_kernel<T><<<blocks_for(outer * inner), kThreads, 0, stream>>>(
        log, static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<T*>(dx), outer, n, inner);
    return cudaGetLastError();
  });
}

cudaError_t launch_max_pool_grad(DType t, const void* dy, const int64_t* indices, void* dx, int64_t planes,
                                 int64_t in_size, int64_t out_size, int* bad, cudaStream_t stream) {
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    cudaError_t err = cudaMemsetAsync(dx, 0, size_t(planes * in_size) * sizeof(T), stream);
    if (err != cudaSuccess || planes * out_size <= 0) return err;
    max_pool_grad_kernel<T><<<blocks_for(planes * out_size), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), indices, static_cast<T*>(dx), planes, in_size, out_size, bad);
    return cudaGetLastError();
  });
}

cudaError_t launch_avg_pool_grad(DType t, const void* dy, void* dx, const PoolGeometry& g, bool count_include_pad,
                                 cudaStream_t stream) {
  const int64_t n = g.planes * g.in[0] * g.in[1] * g.in[2];
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx), g,
                                                                    count_include_pad);
    return cudaGetLastError();
  });
}

cudaError_t launch_bn_grad_stats(DType t, const void* dy, const void* x, RealVec mean, RealVec var, double epsilon,
                                 bool training, int64_t N, int64_t C, int64_t S, double* stats, cudaStream_t stream) {
  if (C <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    bn_grad_stats_kernel<T><<<row_blocks(C), row_threads(N * S), 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), mean, var, epsilon, training, N, C, S, stats);
    return cudaGetLastError();
  });
}

cudaError_t launch_bn_grad_dx(DType t, const void* dy, const void* x, RealVec scale, const double* stats, bool training,
                              int64_t N, int64_t C, int64_t S, void* dx, cudaStream_t stream) {
  const int64_t n = N * C * S;
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    bn_grad_dx_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                                                 scale, stats, training, N, C, S, static_cast<T*>(dx));
    return cudaGetLastError();
  });
}

cudaError_t launch_bn_grad_params(const double* stats, int64_t C, bool is_double, void* dscale, void* dbias,
                                  cudaStream_t stream) {
  if (C <= 0 || (!dscale && !dbias)) return cudaSuccess;
  clear_stale_error();
  if (is_double)
    bn_grad_params_kernel<double><<<blocks_for(C), kThreads, 0, stream>>>(stats, C, static_cast<double*>(dscale),
                                                                          static_cast<double*>(dbias));
  else
    bn_grad_params_kernel<float><<<blocks_for(C), kThreads, 0, stream>>>(stats, C, static_cast<float*>(dscale),
                                                                         static_cast<float*>(dbias));
  return cudaGetLastError();
}

cudaError_t launch_sce_grad(DType t, const void* log_prob, void* dscores, const SceGradArgs& a, cudaStream_t stream) {
  const int64_t n = a.N * a.C * a.D;
  if (n <= 0) return cudaSuccess;
  clear_stale_error();
  return real_type(t, [&](auto tag) {
    using T = decltype(tag);
    sce_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(log_prob),
                                                               static_cast<T*>(dscores), a);
    return cudaGetLastError();
  });
}

}  // namespace cuda
}  // namespace singa
