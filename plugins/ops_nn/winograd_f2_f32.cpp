#include "winograd_f2_f32.hpp"

#include <avx512_region.hpp>
#include <env_switch.hpp>
#include <line_aligned.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>

namespace singa {
namespace nn {

bool winograd_f2_on() {
  static const bool on = fast::avx512() && !ops::env_switched_off("SINGA_WINOGRAD_F2");
  return on;
}

bool winograd_f2_fits(const Geometry& g, int64_t group) {
  if (g.rank != 2 || group != 1) return false;
  for (int i = 1; i < kMaxSpatial; ++i)
    if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.out[i] <= 0) return false;
  return true;
}

bool winograd_f2_pays(int64_t C, int64_t M) { return C <= 16 && M >= kWinogradPanel; }

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C) {
  WinogradWeights p;
  p.M = M;
  p.C = C;
  const int64_t panels = (M + kWinogradPanel - 1) / kWinogradPanel;
  p.u.assign(size_t(panels * 16 * C * kWinogradPanel), 0.f);
  static const double G[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double t[4][3];
      for (int a = 0; a < 4; ++a)
        for (int j = 0; j < 3; ++j) t[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
          const double u = t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2];
          p.u[size_t(((m / kWinogradPanel * 16 + a * 4 + b) * C + c) * kWinogradPanel + m % kWinogradPanel)] = float(u);
        }
    }
  return p;
}

}  // namespace nn
}  // namespace singa

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include "vec_activation_avx512.hpp"

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

using Kind = ops::FusedActivation::Kind;
constexpr int kRows = int(kWinogradPanel);
constexpr int kMaxVecs = 3;  // tile vectors per block: 8 x 3 accumulators

// The planes' sizes and the first input row and column that output tile
// (0, 0) reads (negative inside the padding).
struct Plane {
  int64_t C, M, H, W, OH, OW, top, left;
};

// 16 tiles side by side: tiles tx0 .. tx0 + 15 of tile row ty in image n.
struct TileVec {
  int64_t n, ty, tx0;
};

// 16 floats of a row from column col on, zero outside [0, W). Masked loads
// are slower than plain ones on AMD's family 1Ah: only the edges take them.
inline __m512 span(const float* row, int64_t col, int64_t W) {
  if (col >= 0 && col + 16 <= W) return _mm512_loadu_ps(row + col);
  const int64_t lo = std::max<int64_t>(0, -col), hi = std::min<int64_t>(16, W - col);
  if (hi <= lo) return _mm512_setzero_ps();
  const __mmask16 m = __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
  return _mm512_maskz_loadu_ps(m, row + col);
}

// Stores the first OW - col (at most 16) floats of v at row + col.
inline void store_span(float* row, int64_t col, int64_t OW, __m512 v) {
  if (col + 16 <= OW)
    _mm512_storeu_ps(row + col, v);
  else if (col < OW)
    _mm512_mask_storeu_ps(row + col, __mmask16((1u << (OW - col)) - 1), v);
}

// V = B^T d B of the 4x4 input tiles of one tile vector, every channel:
// v[(xi * C + c) * ld] (ld floats between channels' vectors, one vector of
// 16 tiles each). Rows outside the plane are zero padding.
void transform_input(const float* x, const Plane& p, const TileVec& t, float* v, int64_t ld) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const int64_t iy0 = 2 * t.ty + p.top, ix0 = 2 * t.tx0 + p.left, plane = p.H * p.W, xi_stride = p.C * ld;
  const float* xn = x + t.n * p.C * plane;
  for (int64_t c = 0; c < p.C; ++c) {
    __m512 r[4][4];
#pragma GCC unroll 4
    for (int a = 0; a < 4; ++a) {
      const int64_t iy = iy0 + a;
      if (iy < 0 || iy >= p.H) {
        for (int b = 0; b < 4; ++b) r[a][b] = _mm512_setzero_ps();
        continue;
      }
      const float* row = xn + c * plane + iy * p.W;
      const __m512 l0 = span(row, ix0, p.W), h0 = span(row, ix0 + 16, p.W);
      const __m512 l1 = span(row, ix0 + 2, p.W), h1 = span(row, ix0 + 18, p.W);
      // Lane t: columns ix0 + 2t + 0..3 of the row.
      const __m512 d0 = _mm512_permutex2var_ps(l0, even, h0), d1 = _mm512_permutex2var_ps(l0, odd, h0);
      const __m512 d2 = _mm512_permutex2var_ps(l1, even, h1), d3 = _mm512_permutex2var_ps(l1, odd, h1);
      r[a][0] = _mm512_sub_ps(d0, d2);
      r[a][1] = _mm512_add_ps(d1, d2);
      r[a][2] = _mm512_sub_ps(d2, d1);
      r[a][3] = _mm512_sub_ps(d1, d3);
    }
    float* vc = v + c * ld;
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      _mm512_store_ps(vc + (0 + b) * xi_stride, _mm512_sub_ps(r[0][b], r[2][b]));
      _mm512_store_ps(vc + (4 + b) * xi_stride, _mm512_add_ps(r[1][b], r[2][b]));
      _mm512_store_ps(vc + (8 + b) * xi_stride, _mm512_sub_ps(r[2][b], r[1][b]));
      _mm512_store_ps(vc + (12 + b) * xi_stride, _mm512_sub_ps(r[1][b], r[3][b]));
    }
  }
}

// The 16 products of one panel: ms[((xi * 8 + r) * NV + j) * 16] = sum_c
// U[xi][c][r] V[xi][c][j] for the panel's 8 channels r and the block's NV
// tile vectors j. Unrolled by pragma so that the accumulators stay in
// registers (see pointwise_direct_f32.cpp).
template <int NV>
void panel_products(const float* u, const float* v, int64_t C, float* ms) {
  for (int xi = 0; xi < 16; ++xi) {
    const float* ux = u + xi * C * kRows;
    const float* vx = v + xi * C * NV * 16;
    __m512 acc[kRows][NV];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
    for (int64_t c = 0; c < C; ++c) {
      __m512 vv[NV];
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) vv[j] = _mm512_load_ps(vx + (c * NV + j) * 16);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512 b = _mm512_set1_ps(ux[c * kRows + r]);
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(b, vv[j], acc[r][j]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) _mm512_store_ps(ms + ((xi * kRows + r) * NV + j) * 16, acc[r][j]);
  }
}

// Y = A^T M A for the panel's first `rows` channels (output channel m0 + r),
// plus bias, activated, into two rows of Y per tile vector: lane t's 2x2
// tile covers columns 2 (tx0 + t) and 2 (tx0 + t) + 1.
template <int NV, Kind A>
void transform_output(const float* ms, const Plane& p, const TileVec* tv, int rows, int64_t m0, const float* bias,
                      float* y, const VecActivation<A>& f) {
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const int64_t xi_stride = kRows * NV * 16, oplane = p.OH * p.OW;
  for (int r = 0; r < rows; ++r) {
    const __m512 bv = _mm512_set1_ps(bias ? bias[m0 + r] : 0.f);
    for (int j = 0; j < NV; ++j) {
      const float* q = ms + (r * NV + j) * 16;
      __m512 s[4][2];
#pragma GCC unroll 4
      for (int a = 0; a < 4; ++a) {
        const __m512 m0v = _mm512_load_ps(q + (a * 4 + 0) * xi_stride), m1 = _mm512_load_ps(q + (a * 4 + 1) * xi_stride);
        const __m512 m2 = _mm512_load_ps(q + (a * 4 + 2) * xi_stride), m3 = _mm512_load_ps(q + (a * 4 + 3) * xi_stride);
        s[a][0] = _mm512_add_ps(_mm512_add_ps(m0v, m1), m2);
        s[a][1] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      const TileVec& t = tv[j];
      const int64_t oy = 2 * t.ty, ox = 2 * t.tx0;
      float* out = y + (t.n * p.M + m0 + r) * oplane + oy * p.OW;
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        if (oy + i >= p.OH) break;
        __m512 e, o;  // columns 2t and 2t + 1
        if (i == 0) {
          e = _mm512_add_ps(_mm512_add_ps(s[0][0], s[1][0]), s[2][0]);
          o = _mm512_add_ps(_mm512_add_ps(s[0][1], s[1][1]), s[2][1]);
        } else {
          e = _mm512_sub_ps(_mm512_sub_ps(s[1][0], s[2][0]), s[3][0]);
          o = _mm512_sub_ps(_mm512_sub_ps(s[1][1], s[2][1]), s[3][1]);
        }
        e = f(_mm512_add_ps(e, bv));
        o = f(_mm512_add_ps(o, bv));
        float* row = out + i * p.OW;
        store_span(row, ox, p.OW, _mm512_permutex2var_ps(e, lo, o));
        store_span(row, ox + 16, p.OW, _mm512_permutex2var_ps(e, hi, o));
      }
    }
  }
}

template <int NV, Kind A>
void block(const WinogradWeights& w, const float* x, const Plane& p, const TileVec* tv, float* v, float* ms,
           const float* bias, float* y, const VecActivation<A>& f) {
  for (int j = 0; j < NV; ++j) transform_input(x, p, tv[j], v + j * 16, NV * 16);
  const int64_t panels = (p.M + kRows - 1) / kRows;
  for (int64_t k = 0; k < panels; ++k) {
    panel_products<NV>(w.u.data() + k * 16 * p.C * kRows, v, p.C, ms);
    transform_output<NV, A>(ms, p, tv, int(std::min<int64_t>(kRows, p.M - k * kRows)), k * kRows, bias, y, f);
  }
}

template <Kind A>
void run(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y, int64_t N,
         const Geometry& g, const ops::FusedActivation& act) {
  const VecActivation<A> f(act);
  const Plane p{w.C, w.M, g.in[1], g.in[2], g.out[1], g.out[2], -g.pb[1], -g.pb[2]};
  const int64_t TH = (p.OH + 1) / 2, TW = (p.OW + 1) / 2, per_row = (TW + 15) / 16, total = N * TH * per_row;
  // One contiguous range of tile vectors per thread, in blocks of three:
  // the pool's chunks would leave blocks of one or two at each chunk's end.
  const int64_t parts = std::min<int64_t>(ctx.num_threads(), total);
  ctx.parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> buf;
    float* v = fast::line_aligned(buf, size_t(16 * (p.C + kRows) * kMaxVecs * 16));
    float* ms = v + 16 * p.C * kMaxVecs * 16;
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t q1 = total * (part + 1) / parts;
      for (int64_t q = total * part / parts; q < q1; q += kMaxVecs) {
        TileVec tv[kMaxVecs];
        const int nv = int(std::min<int64_t>(kMaxVecs, q1 - q));
        for (int j = 0; j < nv; ++j) {
          const int64_t i = q + j, rest = i % (TH * per_row);
          tv[j] = TileVec{i / (TH * per_row), rest / per_row, rest % per_row * 16};
        }
        if (nv == 3)
          block<3, A>(w, x, p, tv, v, ms, bias, y, f);
        else if (nv == 2)
          block<2, A>(w, x, p, tv, v, ms, bias, y, f);
        else
          block<1, A>(w, x, p, tv, v, ms, bias, y, f);
      }
    }
  });
}

}  // namespace

void conv_winograd_f2(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y,
                      int64_t N, const Geometry& g, const ops::FusedActivation& act) {
  with_kind(act, [&](auto k) { run<decltype(k)::value>(ctx, w, x, bias, y, N, g, act); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
