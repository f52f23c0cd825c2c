#include "sources.hpp"

namespace singa {
namespace opencl {

// Softmax over rows, reductions over any set of axes, and BatchNormalization.
const char* const kReduceSource = R"CLC(
// Row (o, j) of [outer, n, inner] for item o*inner + j, normalised over n.
// In place is fine: each element is read before the same item writes it.
__kernel void softmax(IN(float, x), OUT(float, y), const int outer, const int n, const int inner) {
  const int i = get_global_id(0);
  if (i >= outer * inner) return;
  const int o = i / inner, j = i % inner;
  __global const float* xp = AT(x) + (long)o * n * inner + j;
  __global float* yp = AT(y) + (long)o * n * inner + j;
  float mx = -INFINITY;
  for (int t = 0; t < n; ++t) mx = fmax(mx, xp[t * inner]);
  float sum = 0.0f;
  for (int t = 0; t < n; ++t) sum += exp(xp[t * inner] - mx);
  const float inv = 1.0f / sum;
  for (int t = 0; t < n; ++t) yp[t * inner] = exp(xp[t * inner] - mx) * inv;
}

// Output item i walks the kept dims (kd, ks: sizes and input strides) to its
// base, then the `count` inputs of the reduced dims (rd, rs). op: 0 sum,
// 1 mean, 2 max.
__kernel void reduce(IN(float, x), OUT(float, y), const int nout, const int krank, const int8 kd_v, const int8 ks_v,
                     const int rrank, const int8 rd_v, const int8 rs_v, const int count, const int op) {
  const int i = get_global_id(0);
  if (i >= nout) return;
  UNPACK8(kd_v, kd);
  UNPACK8(ks_v, ks);
  UNPACK8(rd_v, rd);
  UNPACK8(rs_v, rs);
  int rem = i, base = 0;
  for (int a = krank - 1; a >= 0; --a) {
    base += (rem % kd[a]) * ks[a];
    rem /= kd[a];
  }
  __global const float* xp = AT(x) + base;
  float acc = op == 2 ? -INFINITY : 0.0f;
  for (int r = 0; r < count; ++r) {
    int q = r, off = 0;
    for (int a = rrank - 1; a >= 0; --a) {
      off += (q % rd[a]) * rs[a];
      q /= rd[a];
    }
    const float v = xp[off];
    acc = op == 2 ? (isnan(v) || v > acc ? v : acc) : acc + v;
  }
  AT(y)[i] = op == 1 ? acc / (float)count : acc;
}

// y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c] for X viewed as
// [N, channels, inner].
__kernel void bn_apply(IN(float, x), OUT(float, y), IN(float, scale), IN(float, bias), IN(float, mean), IN(float, var),
                       const float eps, const int total, const int channels, const int inner) {
  const int i = get_global_id(0);
  if (i >= total) return;
  const int c = (i / inner) % channels;
  const float a = AT(scale)[c] / sqrt(AT(var)[c] + eps);
  AT(y)[i] = (AT(x)[i] - AT(mean)[c]) * a + AT(bias)[c];
}

// Batch statistics per channel (population variance), then the running
// statistics running = input * momentum + batch * (1 - momentum).
__kernel void bn_stats(IN(float, x), OUT(float, mean), OUT(float, var), const int N, const int channels, const int inner) {
  const int c = get_global_id(0);
  if (c >= channels) return;
  float sum = 0.0f;
  for (int n = 0; n < N; ++n) {
    __global const float* xp = AT(x) + ((long)n * channels + c) * inner;
    for (int j = 0; j < inner; ++j) sum += xp[j];
  }
  const float mu = sum / (float)(N * inner);
  float sq = 0.0f;
  for (int n = 0; n < N; ++n) {
    __global const float* xp = AT(x) + ((long)n * channels + c) * inner;
    for (int j = 0; j < inner; ++j) { const float t = xp[j] - mu; sq += t * t; }
  }
  AT(mean)[c] = mu;
  AT(var)[c] = sq / (float)(N * inner);
}

__kernel void bn_running(IN(float, input), IN(float, batch), OUT(float, y), const float momentum, const int n) {
  const int i = get_global_id(0);
  if (i < n) AT(y)[i] = AT(input)[i] * momentum + AT(batch)[i] * (1.0f - momentum);
}
)CLC";

}  // namespace opencl
}  // namespace singa
