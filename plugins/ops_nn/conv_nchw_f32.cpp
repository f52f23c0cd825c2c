#include "conv_nchw_f32.hpp"
#include "depthwise_blocked_f32.hpp"

#include "dnnl_sgemm.hpp"
#include "sgemm.hpp"     // fast::avx512
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace nn {

using ops::FusedActivation;

bool pointwise_fits(const Geometry& g, int64_t group) {
  if (group != 1) return false;
  for (int i = 0; i < kMaxSpatial; ++i)
    if (g.k[i] != 1 || g.pb[i] != 0 || g.pe[i] != 0 || g.out[i] <= 0) return false;
  return true;
}

bool pointwise_prefers_dnnl(const Geometry& g, int64_t group, int64_t C, int64_t M) {
  const int64_t HW = g.out_size();
  return pointwise_fits(g, group) && HW < 64 && M * C >= (C + M) * HW;
}

bool strided(const Geometry& g) {
  for (int i = 0; i < kMaxSpatial; ++i)
    if (g.s[i] != 1) return true;
  return false;
}

// A strided 1x1 convolution reads one input pixel in s*s (ResNet's
// downsampling shortcuts): those pixels, gathered into a dense [N, C, out]
// buffer, make it a plain pointwise product. oneDNN ran these through a
// channels-last reorder of the whole input and another of the output, at
// 95 GFLOP/s (ResNet-18's three: 0.36 ms at 1 thread, 0.25 at 2).
void conv_pointwise_strided_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                                int64_t N, int64_t C, int64_t M, const Geometry& g, const FusedActivation& act,
                                const PointwiseWeights* packed, const float* z) {
  if (!strided(g)) return conv_pointwise_f32(ctx, x, w, bias, y, N, C, M, g.in_size(), act, packed, z);
  const int64_t in = g.in_size(), out = g.out_size();
  float* dense = static_cast<float*>(ctx.workspace(size_t(N * C * out) * sizeof(float)));
  ctx.parallel_for(N * C, 16, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* src = x + p * in;
      float* dst = dense + p * out;
      for (int64_t a = 0; a < g.out[0]; ++a)
        for (int64_t b = 0; b < g.out[1]; ++b) {
          const float* row = src + (a * g.s[0] * g.in[1] + b * g.s[1]) * g.in[2];
          for (int64_t c = 0; c < g.out[2]; ++c) *dst++ = row[c * g.s[2]];
        }
    }
  });
  conv_pointwise_f32(ctx, dense, w, bias, y, N, C, M, out, act, packed, z);
}

// FusedActivation::apply_rows compiled for AVX-512 and AVX2 as well (the
// plugin's baseline is SSE2).
SINGA_VEC_CLONES void bias_activation(const FusedActivation& act, float* y, int64_t rows, int64_t n, int64_t ld,
                                      const float* bias) {
  act.apply_rows(y, rows, n, ld, bias);
}

// FusedActivation::apply_sum, cloned likewise.
SINGA_VEC_CLONES void sum_activation(const FusedActivation& act, float* y, const float* z, int64_t n) {
  act.apply_sum(y, z, n);
}

void conv_pointwise_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y, int64_t N,
                        int64_t C, int64_t M, int64_t HW, const FusedActivation& act,
                        const PointwiseWeights* packed, const float* z) {
  if (!pointwise_direct_on() || (packed && (packed->M != M || packed->C != C))) packed = nullptr;
  // Slices of output channels in whole vectors for sgemm, in whole panels for
  // the direct kernel (SqueezeNet's 1000 channels in 512 + 488 were 5% apart);
  // column blocks in whole vectors, or in whole tiles of the direct kernel.
  const int64_t unit = packed ? kPointwisePanel : 16, col_unit = packed ? kPointwiseTileCols : 16;
  // Column blocks small enough that the block of X and of Y stay in L2 for
  // the epilogue, wide enough that sgemm runs near its best.
  const int64_t bytes_per_col = (C + M) * int64_t(sizeof(float));
  int64_t nb = std::max<int64_t>(64, (int64_t(512) << 10) / bytes_per_col) / col_unit * col_unit;
  const int64_t threads = std::max(1, ctx.num_threads());
  int64_t blocks = 0, slices = 1;
  // Weights that outweigh the image's activations (SqueezeNet's 512 -> 1000
  // classifier, MobileNetV2's 320 -> 1280 head): sgemm packs its share of W
  // on every call, so each thread makes one call on all the columns of its
  // slice of output channels (the classifier 0.73-0.76 -> 0.70-0.73 ms at 1
  // thread, 0.39-0.41 -> 0.38-0.39 at 2).
  if (M * C >= (C + M) * HW) {
    nb = HW;
    blocks = 1;
    slices = N >= threads ? 1 : std::min<int64_t>(threads, std::max<int64_t>(1, M / unit));
  } else {
    // Enough blocks for every thread even on a small image.
    while (nb > 64 && N * ((HW + nb - 1) / nb) < 2 * threads)
      nb = std::max<int64_t>(64, nb / 2) / col_unit * col_unit;
    blocks = (HW + nb - 1) / nb;
    // Small planes (one column block) also split the output channels, in
    // whole units of rows, so that every thread has two parts.
    const int64_t parts = N * blocks;
    slices = threads == 1 || parts >= 2 * threads
                 ? 1
                 : std::min((2 * threads + parts - 1) / parts, std::max<int64_t>(1, M / unit));
  }
  const int64_t rows = ((M + slices - 1) / slices + unit - 1) / unit * unit;
  ctx.parallel_for(N * blocks * slices, 1, [&](int64_t b0, int64_t b1) {
    ops::dnnl_single_thread();
    for (int64_t t = b0; t < b1; ++t) {
      const int64_t n = t / (blocks * slices), c0 = t / slices % blocks * nb, cn = std::min(nb, HW - c0);
      const int64_t m0 = std::min(M, t % slices * rows), mn = std::min(rows, M - m0);
      if (mn <= 0) continue;
      const float* xb = x + n * C * HW + c0;
      float* yb = y + (n * M + m0) * HW + c0;
      const float* zb = z ? z + (n * M + m0) * HW + c0 : nullptr;
      if (packed) {
        pointwise_direct_f32(*packed, m0, mn, xb, HW, bias, yb, HW, cn, act, zb);
        continue;
      }
      ops::check_sgemm(dnnl_sgemm('N', 'N', mn, cn, C, 1.f, w + m0 * C, C, xb, HW, 0.f, yb, HW));
      if (!zb) {
        bias_activation(act, yb, mn, cn, HW, bias ? bias + m0 : nullptr);
        continue;
      }
      bias_activation(FusedActivation(), yb, mn, cn, HW, bias ? bias + m0 : nullptr);
      for (int64_t r = 0; r < mn; ++r) sum_activation(act, yb + r * HW, zb + r * HW, cn);
    }
  });
}

bool depthwise_fits(const Geometry& g, int64_t C, int64_t M, int64_t group) {
  if (group != C || M != C || g.rank != 2) return false;
  const int64_t k = g.k[1], s = g.s[1];
  if (g.k[2] != k || (k != 3 && k != 5 && k != 7) || g.s[2] != s || (s != 1 && s != 2)) return false;
  if (g.d[1] != 1 || g.d[2] != 1) return false;
  for (int i = 1; i < kMaxSpatial; ++i)
    if (g.pb[i] < 0 || g.pe[i] < 0 || g.pb[i] >= k || g.pe[i] >= k) return false;
  return g.out[1] > 0 && g.out[2] > 0;
}

namespace {

// The K x K stencil over a whole plane as one flat loop: src[i] is where tap i
// reads for output 0, and every output f reads src[i][f]. Rows of the flat
// output are as wide as the phase planes, so each row ends in a few columns of
// garbage that depthwise_plane drops; in exchange the vector loop runs over
// the whole plane, not over rows of 7 or 14 values (MobileNet's deep layers).
// n is a multiple of kLanes, so there is no scalar tail (a 7x7 plane's 63
// outputs would otherwise spend most of their time in it).
constexpr int64_t kLanes = 16;

template <int K>
SINGA_VEC_CLONES void stencil_flat(const float* const* src_in, const float* wk, float b, int64_t n,
                                   float* __restrict out) {
  float wv[K * K];
  const float* src[K * K];
  for (int i = 0; i < K * K; ++i) wv[i] = wk[i], src[i] = src_in[i];
  for (int64_t f0 = 0; f0 < n; f0 += kLanes) {
    float acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = b;
#pragma GCC unroll 25
    for (int i = 0; i < K * K; ++i)
      for (int j = 0; j < kLanes; ++j) acc[j] += wv[i] * src[i][f0 + j];
    for (int j = 0; j < kLanes; ++j) out[f0 + j] = acc[j];
  }
}

// One channel. The zero-padded input plane is split into S x S phase planes
// (phase (a, c) holds padded rows a, a + S, ... and columns c, c + S, ...), so
// with stride S output (oy, ox) reads phase (ky % S, kx % S) at row
// oy + ky / S, column ox + kx / S: unit stride for every tap.
template <int K, int S>
void depthwise_plane(const float* x, const float* wk, float b, float* y, const Geometry& g, std::vector<float>& scratch,
                     const FusedActivation& act) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t pt = g.pb[1], pl = g.pb[2];
  // The padded plane covers input rows -pt .. (OH - 1) * S - pt + K - 1, columns likewise.
  const int64_t PW = (OW - 1) * S + K, PH = (OH - 1) * S + K;
  const int64_t Ws = (PW + S - 1) / S, Hs = (PH + S - 1) / S;
  const int64_t n = (OH * Ws + kLanes - 1) / kLanes * kLanes;  // flat outputs, whole vectors
  // Slack: the garbage columns of the last row, and the last vector, read past the end.
  const int64_t plane = Hs * Ws + Ws + K + kLanes;
  const int64_t inner = std::max<int64_t>(0, std::min(W, S * Ws - pl));  // input columns inside a padded row
  scratch.resize(size_t(S * S * plane + n + S * Ws));
  float* phases = scratch.data();
  float* flat = phases + S * S * plane;
  float* row = flat + n;  // one padded row before it is split into phases
  for (int64_t py = 0; py < S * Hs; ++py) {
    const int64_t iy = py - pt;
    float* dst = phases + (py % S) * S * plane + (py / S) * Ws;  // phase (py % S, 0)
    if (iy < 0 || iy >= H || py >= PH) {
      for (int c = 0; c < S; ++c) std::fill(dst + c * plane, dst + c * plane + Ws, 0.f);
      continue;
    }
    float* padded = S == 1 ? dst : row;
    std::fill(padded, padded + pl, 0.f);
    std::copy(x + iy * W, x + iy * W + inner, padded + pl);
    std::fill(padded + pl + inner, padded + S * Ws, 0.f);
    if (S == 2)
      for (int64_t j = 0; j < Ws; ++j) {
        dst[j] = row[2 * j];
        dst[plane + j] = row[2 * j + 1];
      }
  }
  for (int p = 0; p < S * S; ++p) std::fill(phases + p * plane + Hs * Ws, phases + (p + 1) * plane, 0.f);
  const float* src[K * K];
  for (int ky = 0; ky < K; ++ky)
    for (int kx = 0; kx < K; ++kx) src[ky * K + kx] = phases + ((ky % S) * S + kx % S) * plane + (ky / S) * Ws + kx / S;
  stencil_flat<K>(src, wk, b, n, flat);
  for (int64_t oy = 0; oy < OH; ++oy) std::copy(flat + oy * Ws, flat + oy * Ws + OW, y + oy * OW);
  bias_activation(act, y, 1, OH * OW, 0, nullptr);
}

// Channels [c_begin, C) of each image, one plane at a time.
template <int K, int S>
void depthwise(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y, int64_t N,
               int64_t C, int64_t c_begin, const Geometry& g, const FusedActivation& act) {
  const int64_t in_plane = g.in[1] * g.in[2], out_plane = g.out[1] * g.out[2], nc = C - c_begin;
  ctx.parallel_for(N * nc, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> scratch;
    for (int64_t q = p0; q < p1; ++q) {
      const int64_t c = c_begin + q % nc, p = q / nc * C + c;
      depthwise_plane<K, S>(x + p * in_plane, w + c * K * K, bias ? bias[c] : 0.f, y + p * out_plane, g, scratch, act);
    }
  });
}

}  // namespace

void conv_depthwise_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y, int64_t N,
                        int64_t C, const Geometry& g, const FusedActivation& act, bool blocked) {
  const int64_t k = g.k[1], s = g.s[1];
  // Whole blocks of 16 channels on AVX-512 (depthwise_blocked_f32.hpp says
  // why), the rest plane by plane.
  int64_t c_begin = 0;
  if (blocked && fast::avx512() && C >= 16) {
    depthwise_blocked_f32(ctx, x, w, bias, y, N, C, g, act);
    c_begin = C / 16 * 16;
    if (c_begin == C) return;
  }
  if (k == 3 && s == 1) return depthwise<3, 1>(ctx, x, w, bias, y, N, C, c_begin, g, act);
  if (k == 3 && s == 2) return depthwise<3, 2>(ctx, x, w, bias, y, N, C, c_begin, g, act);
  if (k == 5 && s == 1) return depthwise<5, 1>(ctx, x, w, bias, y, N, C, c_begin, g, act);
  if (k == 5 && s == 2) return depthwise<5, 2>(ctx, x, w, bias, y, N, C, c_begin, g, act);
  if (k == 7 && s == 1) return depthwise<7, 1>(ctx, x, w, bias, y, N, C, c_begin, g, act);
  return depthwise<7, 2>(ctx, x, w, bias, y, N, C, c_begin, g, act);
}

}  // namespace nn
}  // namespace singa
