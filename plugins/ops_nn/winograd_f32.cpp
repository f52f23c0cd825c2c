#include "winograd_f32.hpp"

#include <avx512_region.hpp>
#include <env_switch.hpp>
#include <line_aligned.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>
#include <cstdlib>

namespace singa {
namespace nn {

bool winograd_on() {
  static const bool on = fast::avx512() && !ops::env_switched_off("SINGA_WINOGRAD_F2");
  return on;
}

bool winograd_fits(const Geometry& g, int64_t group) {
  if (g.rank != 2 || group != 1) return false;
  for (int i = 1; i < kMaxSpatial; ++i)
    if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.out[i] <= 0) return false;
  return true;
}

bool winograd_pays(int64_t C, int64_t M) { return C <= 16 && M >= kWinogradPanel; }

int winograd_tile(int64_t OW) {
  static const int forced = [] {
    const char* e = std::getenv("SINGA_WINOGRAD_TILE");
    return e ? std::atoi(e) : 0;
  }();
  if (forced == 2 || forced == 4) return forced;
  if (OW <= 0) return 2;
  // Products per output pixel (A * A / (tile * tile)) over the share of lanes
  // that hold tiles; F(4x4)'s transforms cost about a tenth more.
  auto cost = [&](int tile) {
    const int64_t tiles = (OW + tile - 1) / tile, lanes = (tiles + 15) / 16 * 16;
    return double((tile + 2) * (tile + 2)) / (tile * tile) * double(lanes) / double(tiles) * (tile == 4 ? 1.1 : 1.0);
  };
  return cost(4) < cost(2) ? 4 : 2;
}

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C, int tile) {
  static const double G2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static const double G4[6][3] = {{1. / 4, 0, 0},           {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6},
                                  {1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}};
  WinogradWeights p;
  p.M = M;
  p.C = C;
  p.tile = tile;
  const int A = tile + 2;
  auto G = [&](int a, int i) { return tile == 2 ? G2[a][i] : G4[a][i]; };
  const int64_t panels = (M + kWinogradPanel - 1) / kWinogradPanel;
  p.u.assign(size_t(panels * A * A * C * kWinogradPanel), 0.f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double t[6][3];
      for (int a = 0; a < A; ++a)
        for (int j = 0; j < 3; ++j) t[a][j] = G(a, 0) * g[j] + G(a, 1) * g[3 + j] + G(a, 2) * g[6 + j];
      for (int a = 0; a < A; ++a)
        for (int b = 0; b < A; ++b) {
          const double u = t[a][0] * G(b, 0) + t[a][1] * G(b, 1) + t[a][2] * G(b, 2);
          p.u[size_t(((m / kWinogradPanel * A * A + a * A + b) * C + c) * kWinogradPanel + m % kWinogradPanel)] =
              float(u);
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

inline __m512i lanes(int a0, int step) {
  return _mm512_set_epi32(a0 + 15 * step, a0 + 14 * step, a0 + 13 * step, a0 + 12 * step, a0 + 11 * step,
                          a0 + 10 * step, a0 + 9 * step, a0 + 8 * step, a0 + 7 * step, a0 + 6 * step, a0 + 5 * step,
                          a0 + 4 * step, a0 + 3 * step, a0 + 2 * step, a0 + step, a0);
}
// Lanes 0..15 of a and b interleaved: lo a0 b0 a1 b1 .. a7 b7, hi a8 b8 .. a15 b15.
inline __m512 weave_lo(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(a, _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0), b);
}
inline __m512 weave_hi(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(a, _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8), b);
}

// The transforms of F(R x R, 3x3), R = 2 or 4, along one axis, on 16 tiles
// at once: the input's B^T d, the output's A^T m, and the load of one input
// row's A columns per tile (lane t: columns col + R t + 0..A-1).
template <int R>
struct Wino;

template <>
struct Wino<2> {
  static constexpr int R = 2, A = 4;
  static void row(const float* r, int64_t col, int64_t W, __m512 (&d)[A]) {
    const __m512 l0 = span(r, col, W), h0 = span(r, col + 16, W), l1 = span(r, col + 2, W), h1 = span(r, col + 18, W);
    d[0] = _mm512_permutex2var_ps(l0, lanes(0, 2), h0);
    d[1] = _mm512_permutex2var_ps(l0, lanes(1, 2), h0);
    d[2] = _mm512_permutex2var_ps(l1, lanes(0, 2), h1);
    d[3] = _mm512_permutex2var_ps(l1, lanes(1, 2), h1);
  }
  static void in(const __m512 (&d)[A], __m512 (&r)[A]) {
    r[0] = _mm512_sub_ps(d[0], d[2]);
    r[1] = _mm512_add_ps(d[1], d[2]);
    r[2] = _mm512_sub_ps(d[2], d[1]);
    r[3] = _mm512_sub_ps(d[1], d[3]);
  }
  static void out(const __m512 (&m)[A], __m512 (&o)[R]) {
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
    o[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
  }
  // Output columns R t + j (o[j], lane t) in order, from column col on.
  static void store(float* r, int64_t col, int64_t OW, const __m512 (&o)[R]) {
    store_span(r, col, OW, weave_lo(o[0], o[1]));
    store_span(r, col + 16, OW, weave_hi(o[0], o[1]));
  }
};

template <>
struct Wino<4> {
  static constexpr int R = 4, A = 6;
  static void row(const float* r, int64_t col, int64_t W, __m512 (&d)[A]) {
    const __m512 v0 = span(r, col, W), v1 = span(r, col + 16, W), v2 = span(r, col + 32, W),
                 v3 = span(r, col + 48, W), e = span(r, col + 64, W);
    const __m512i even = lanes(0, 2), odd = lanes(1, 2);
    const __m512 e01 = _mm512_permutex2var_ps(v0, even, v1), o01 = _mm512_permutex2var_ps(v0, odd, v1);
    const __m512 e23 = _mm512_permutex2var_ps(v2, even, v3), o23 = _mm512_permutex2var_ps(v2, odd, v3);
    d[0] = _mm512_permutex2var_ps(e01, even, e23);
    d[2] = _mm512_permutex2var_ps(e01, odd, e23);
    d[1] = _mm512_permutex2var_ps(o01, even, o23);
    d[3] = _mm512_permutex2var_ps(o01, odd, o23);
    // The next tile's first two columns; the last lane's come from e.
    d[4] = _mm512_permutex2var_ps(d[0], lanes(1, 1), e);
    d[5] = _mm512_permutex2var_ps(d[1], _mm512_mask_blend_epi32(0x8000, lanes(1, 1), _mm512_set1_epi32(17)), e);
  }
  static void in(const __m512 (&d)[A], __m512 (&r)[A]) {
    const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f), two = _mm512_set1_ps(2.f);
    const __m512 t0 = _mm512_fnmadd_ps(four, d[2], d[4]);  // d4 - 4 d2
    const __m512 t1 = _mm512_fnmadd_ps(four, d[1], d[3]);  // d3 - 4 d1
    const __m512 t2 = _mm512_sub_ps(d[4], d[2]);
    const __m512 t3 = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
    r[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    r[1] = _mm512_add_ps(t0, t1);
    r[2] = _mm512_sub_ps(t0, t1);
    r[3] = _mm512_add_ps(t2, t3);
    r[4] = _mm512_sub_ps(t2, t3);
    r[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
  }
  static void out(const __m512 (&m)[A], __m512 (&o)[R]) {
    const __m512 a = _mm512_add_ps(m[1], m[2]), b = _mm512_sub_ps(m[1], m[2]);
    const __m512 c = _mm512_add_ps(m[3], m[4]), d = _mm512_sub_ps(m[3], m[4]);
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], a), c);
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.f), d, b);
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.f), c, a);
    o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.f), d, b), m[5]);
  }
  static void store(float* r, int64_t col, int64_t OW, const __m512 (&o)[R]) {
    const __m512 l02 = weave_lo(o[0], o[2]), h02 = weave_hi(o[0], o[2]);
    const __m512 l13 = weave_lo(o[1], o[3]), h13 = weave_hi(o[1], o[3]);
    store_span(r, col, OW, weave_lo(l02, l13));
    store_span(r, col + 16, OW, weave_hi(l02, l13));
    store_span(r, col + 32, OW, weave_lo(h02, h13));
    store_span(r, col + 48, OW, weave_hi(h02, h13));
  }
};

// V = B^T d B of the A x A input tiles of one tile vector, every channel:
// v[(xi * C + c) * ld] (ld floats between channels' vectors, one vector of
// 16 tiles each). Rows outside the plane are zero padding.
template <int R>
void transform_input(const float* x, const Plane& p, const TileVec& t, float* v, int64_t ld) {
  using T = Wino<R>;
  constexpr int A = T::A;
  const int64_t iy0 = R * t.ty + p.top, ix0 = R * t.tx0 + p.left, plane = p.H * p.W, xi_stride = p.C * ld;
  const float* xn = x + t.n * p.C * plane;
  for (int64_t c = 0; c < p.C; ++c) {
    __m512 r[A][A];
#pragma GCC unroll 6
    for (int a = 0; a < A; ++a) {
      const int64_t iy = iy0 + a;
      if (iy < 0 || iy >= p.H) {
        for (int b = 0; b < A; ++b) r[a][b] = _mm512_setzero_ps();
        continue;
      }
      __m512 d[A];
      T::row(xn + c * plane + iy * p.W, ix0, p.W, d);
      T::in(d, r[a]);
    }
    float* vc = v + c * ld;
#pragma GCC unroll 6
    for (int b = 0; b < A; ++b) {
      __m512 col[A], o[A];
      for (int a = 0; a < A; ++a) col[a] = r[a][b];
      T::in(col, o);
      for (int a = 0; a < A; ++a) _mm512_store_ps(vc + (a * A + b) * xi_stride, o[a]);
    }
  }
}

// The XI products of one panel: ms[((xi * 8 + r) * NV + j) * 16] = sum_c
// U[xi][c][r] V[xi][c][j] for the panel's 8 channels r and the block's NV
// tile vectors j. Unrolled by pragma so that the accumulators stay in
// registers (see pointwise_direct_f32.cpp).
template <int XI, int NV>
void panel_products(const float* u, const float* v, int64_t C, float* ms) {
  for (int xi = 0; xi < XI; ++xi) {
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
// plus bias, activated, into R rows of Y per tile vector: lane t's tile
// covers columns R (tx0 + t) + 0..R-1.
template <int R, int NV, Kind K>
void transform_output(const float* ms, const Plane& p, const TileVec* tv, int rows, int64_t m0, const float* bias,
                      float* y, const VecActivation<K>& f) {
  using T = Wino<R>;
  constexpr int A = T::A;
  const int64_t xi_stride = kRows * NV * 16, oplane = p.OH * p.OW;
  for (int r = 0; r < rows; ++r) {
    const __m512 bv = _mm512_set1_ps(bias ? bias[m0 + r] : 0.f);
    for (int j = 0; j < NV; ++j) {
      const float* q = ms + (r * NV + j) * 16;
      __m512 s[A][R];  // s[a] = A^T along the row of tile positions a
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a) {
        __m512 m[A];
        for (int b = 0; b < A; ++b) m[b] = _mm512_load_ps(q + (a * A + b) * xi_stride);
        T::out(m, s[a]);
      }
      const TileVec& t = tv[j];
      const int64_t oy = R * t.ty, ox = R * t.tx0;
      float* out = y + (t.n * p.M + m0 + r) * oplane + oy * p.OW;
      __m512 o[R][R];  // o[jj][i]: output row i, column R t + jj
#pragma GCC unroll 4
      for (int jj = 0; jj < R; ++jj) {
        __m512 col[A];
        for (int a = 0; a < A; ++a) col[a] = s[a][jj];
        T::out(col, o[jj]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < R && oy + i < p.OH; ++i) {
        __m512 row[R];
        for (int jj = 0; jj < R; ++jj) row[jj] = f(_mm512_add_ps(o[jj][i], bv));
        T::store(out + i * p.OW, ox, p.OW, row);
      }
    }
  }
}

template <int R, int NV, Kind K>
void block(const WinogradWeights& w, const float* x, const Plane& p, const TileVec* tv, float* v, float* ms,
           const float* bias, float* y, const VecActivation<K>& f) {
  constexpr int XI = Wino<R>::A * Wino<R>::A;
  for (int j = 0; j < NV; ++j) transform_input<R>(x, p, tv[j], v + j * 16, NV * 16);
  const int64_t panels = (p.M + kRows - 1) / kRows;
  for (int64_t k = 0; k < panels; ++k) {
    panel_products<XI, NV>(w.u.data() + k * XI * p.C * kRows, v, p.C, ms);
    transform_output<R, NV, K>(ms, p, tv, int(std::min<int64_t>(kRows, p.M - k * kRows)), k * kRows, bias, y, f);
  }
}

template <int R, Kind K>
void run(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y, int64_t N,
         const Geometry& g, const ops::FusedActivation& act) {
  constexpr int XI = Wino<R>::A * Wino<R>::A;
  const VecActivation<K> f(act);
  const Plane p{w.C, w.M, g.in[1], g.in[2], g.out[1], g.out[2], -g.pb[1], -g.pb[2]};
  const int64_t TH = (p.OH + R - 1) / R, TW = (p.OW + R - 1) / R, per_row = (TW + 15) / 16, total = N * TH * per_row;
  // One contiguous range of tile vectors per thread, in blocks of three:
  // the pool's chunks would leave blocks of one or two at each chunk's end.
  const int64_t parts = std::min<int64_t>(ctx.num_threads(), total);
  ctx.parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> buf;
    float* v = fast::line_aligned(buf, size_t(XI * (p.C + kRows) * kMaxVecs * 16));
    float* ms = v + XI * p.C * kMaxVecs * 16;
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
          block<R, 3, K>(w, x, p, tv, v, ms, bias, y, f);
        else if (nv == 2)
          block<R, 2, K>(w, x, p, tv, v, ms, bias, y, f);
        else
          block<R, 1, K>(w, x, p, tv, v, ms, bias, y, f);
      }
    }
  });
}

}  // namespace

void conv_winograd(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y,
                   int64_t N, const Geometry& g, const ops::FusedActivation& act) {
  with_kind(act, [&](auto k) {
    if (w.tile == 4)
      run<4, decltype(k)::value>(ctx, w, x, bias, y, N, g, act);
    else
      run<2, decltype(k)::value>(ctx, w, x, bias, y, N, g, act);
  });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
