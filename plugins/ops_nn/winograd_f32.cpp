#include "winograd_f32.hpp"

#include <avx512_region.hpp>
#include <line_aligned.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>
#include <cstdlib>

namespace singa {
namespace nn {

bool winograd_on() {
  return fast::avx512();
}

bool winograd_fits(const Geometry& g, int64_t group) {
  if (g.rank != 2 || group != 1) return false;
  for (int i = 1; i < kMaxSpatial; ++i)
    if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.out[i] <= 0) return false;
  return true;
}

bool winograd_pays(int64_t C, int64_t M, int tile, int64_t N, int64_t H, int64_t W) {
  if (C > 256 || M < kWinogradPanel || N <= 0 || H <= 0 || W <= 0) return false;
  return (tile + 2) * (tile + 2) * C * M <= 2 * N * H * W * (C + M);
}

int winograd_tile(int64_t OH, int64_t OW) {
  if (OH <= 0 || OW <= 0) return 2;
  // The products of a plane: A * A per lane of every tile vector, the empty
  // lanes included (tile rows of up to 8 or 4 tiles share a vector, as
  // conv_winograd groups them); F(4x4)'s transforms cost about a tenth more.
  auto cost = [&](int tile) {
    const int64_t TH = (OH + tile - 1) / tile, TW = (OW + tile - 1) / tile;
    int64_t G = 1;
    while (G < (tile == 4 ? 4 : 2) && TW <= 8 / G) G *= 2;
    const int64_t vectors = (TH + G - 1) / G * ((TW + 16 / G - 1) / (16 / G));
    return double((tile + 2) * (tile + 2)) * double(vectors) * (tile == 4 ? 1.1 : 1.0);
  };
  return cost(4) < cost(2) ? 4 : 2;
}

WinogradWeights winograd_weights(const float* w, int64_t M, int64_t C, int tile) {
  static const double G2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static const double G4[6][3] = {{1. / 4, 0, 0},           {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6},
                                  {1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}};
  const double(*G)[3] = tile == 2 ? G2 : G4;
  WinogradWeights p;
  p.M = M;
  p.C = C;
  p.tile = tile;
  const int A = tile + 2;
  const int64_t panels = (M + kWinogradPanel - 1) / kWinogradPanel;
  p.u.assign(size_t(panels * A * A * C * kWinogradPanel), 0.f);
  for (int64_t m = 0; m < M; ++m) {
    float* um = p.u.data() + m / kWinogradPanel * A * A * C * kWinogradPanel + m % kWinogradPanel;
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double t[6][3];
      for (int a = 0; a < A; ++a)
        for (int j = 0; j < 3; ++j) t[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
      for (int a = 0; a < A; ++a)
        for (int b = 0; b < A; ++b)
          um[((a * A + b) * C + c) * kWinogradPanel] = float(t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2]);
    }
  }
  return p;
}

}  // namespace nn
}  // namespace singa

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include <product_tiles_avx512.hpp>
#include "vec_activation_avx512.hpp"

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

using Kind = ops::FusedActivation::Kind;
constexpr int kRows = int(kWinogradPanel);
constexpr int kMaxVecs = 3;  // tile vectors per block: 8 x 3 accumulators

// The planes' sizes, the first input row and column that output tile (0, 0)
// reads (negative inside the padding), the tile rows and columns, and how
// many tile rows share a vector (G: narrow planes put 2 or 4 tile rows of
// 16 / G tiles each side by side).
struct Plane {
  int64_t C, M, H, W, OH, OW, top, left, TH, TW;
  int G;
  // Chunk k of a vector's columns (see Chunks): its group and its first
  // column past the group's first tile's, for NC = 2 or 4 chunks (no
  // division by G in the loops).
  int group[2][4], offset[2][4];
  void set_groups(int g) {
    G = g;
    for (int nc = 2, i = 0; nc <= 4; nc *= 2, ++i)
      for (int k = 0; k < nc; ++k)  // F(2x2) (nc 2) shares vectors among 2 tile rows at most
        group[i][k] = k * G / nc, offset[i][k] = nc >= G ? k % (nc / G) * 16 : 0;
  }
};

// A vector of 16 tiles in G groups of 16 / G lanes: group g holds tiles
// tx0 .. tx0 + 16 / G - 1 of tile row ty0 + g of image n.
struct TileVec {
  int64_t n, ty0, tx0;
};

// 16 floats of a row from column col on, zero outside [0, W) and for a null
// row. Masked loads are slower than plain ones on AMD's family 1Ah: only the
// edges take them.
inline __m512 span(const float* row, int64_t col, int64_t W) {
  if (!row) return _mm512_setzero_ps();
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

// A vector's tiles span NC chunks of 16 columns of its G tile rows (NC / G
// chunks per row): chunk k lies in group k * G / NC, from column (k % (NC /
// G)) * 16 of the group's first tile on. One input row of each group comes
// in as NC chunk rows (null: zero) and first columns.
template <int NC>
struct Chunks {
  const float* row[NC];
  int64_t col[NC];
};

// The permutes that move F(4x4)'s lanes on by one tile within each group,
// the group's last lane taking the two columns after the group's tiles from
// lanes 2 g and 2 g + 1 of a second vector.
struct Shift {
  __m512i next0, next1;
  explicit Shift(int G) {
    alignas(64) int32_t i0[16], i1[16];
    const int L = 16 / G;
    for (int i = 0; i < 16; ++i) {
      const bool last = i % L == L - 1;
      i0[i] = last ? 16 + 2 * (i / L) : i + 1;
      i1[i] = last ? 17 + 2 * (i / L) : i + 1;
    }
    next0 = _mm512_load_si512(i0);
    next1 = _mm512_load_si512(i1);
  }
};

// The transforms of F(R x R, 3x3), R = 2 or 4, along one axis, on 16 tiles
// at once: the input's B^T d, the output's A^T m, the load of one input row's
// A columns per tile (lane t: columns R t + 0..A-1 of its group's columns),
// and the weave of an output row's R columns per tile back into chunks.
template <int R>
struct Wino;

template <>
struct Wino<2> {
  static constexpr int R = 2, A = 4, NC = 2;
  static void row(const Chunks<NC>& c, int64_t W, int, const Shift&, __m512 (&d)[A]) {
    const __m512 l0 = span(c.row[0], c.col[0], W), h0 = span(c.row[1], c.col[1], W);
    const __m512 l1 = span(c.row[0], c.col[0] + 2, W), h1 = span(c.row[1], c.col[1] + 2, W);
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
  static void weave(const __m512 (&o)[R], __m512 (&c)[NC]) {
    c[0] = weave_lo(o[0], o[1]);
    c[1] = weave_hi(o[0], o[1]);
  }
};

template <>
struct Wino<4> {
  static constexpr int R = 4, A = 6, NC = 4;
  static void row(const Chunks<NC>& c, int64_t W, int G, const Shift& shift, __m512 (&d)[A]) {
    const __m512 v0 = span(c.row[0], c.col[0], W), v1 = span(c.row[1], c.col[1], W);
    const __m512 v2 = span(c.row[2], c.col[2], W), v3 = span(c.row[3], c.col[3], W);
    // The two columns after each group's 64 / G, into lanes 2 g and 2 g + 1
    // (a masked load each: a vector load of scalars stored just before
    // stalls on the store forwarding, a sixth of this function's time).
    __m512 e = _mm512_setzero_ps();
    for (int g = 0; g < G; ++g) {
      const int k = g * NC / G;
      const int64_t col = c.col[k] + 64 / G;
      if (!c.row[k] || col + 1 < 0 || col >= W) continue;
      const unsigned in = (col >= 0 ? 1u : 0u) | (col + 1 < W ? 2u : 0u);
      e = _mm512_mask_loadu_ps(e, __mmask16(in << (2 * g)), c.row[k] + col - 2 * g);
    }
    const __m512i even = lanes(0, 2), odd = lanes(1, 2);
    const __m512 e01 = _mm512_permutex2var_ps(v0, even, v1), o01 = _mm512_permutex2var_ps(v0, odd, v1);
    const __m512 e23 = _mm512_permutex2var_ps(v2, even, v3), o23 = _mm512_permutex2var_ps(v2, odd, v3);
    d[0] = _mm512_permutex2var_ps(e01, even, e23);
    d[2] = _mm512_permutex2var_ps(e01, odd, e23);
    d[1] = _mm512_permutex2var_ps(o01, even, o23);
    d[3] = _mm512_permutex2var_ps(o01, odd, o23);
    d[4] = _mm512_permutex2var_ps(d[0], shift.next0, e);
    d[5] = _mm512_permutex2var_ps(d[1], shift.next1, e);
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
  static void weave(const __m512 (&o)[R], __m512 (&c)[NC]) {
    const __m512 l02 = weave_lo(o[0], o[2]), h02 = weave_hi(o[0], o[2]);
    const __m512 l13 = weave_lo(o[1], o[3]), h13 = weave_hi(o[1], o[3]);
    c[0] = weave_lo(l02, l13);
    c[1] = weave_hi(l02, l13);
    c[2] = weave_lo(h02, h13);
    c[3] = weave_hi(h02, h13);
  }
};

// V = B^T d B of the A x A input tiles of one tile vector, every channel:
// v[(xi * C + c) * ld] (ld floats between channels' vectors, one vector of
// 16 tiles each). Rows outside the plane are zero padding.
template <int R>
void transform_input(const float* x, const Plane& p, const TileVec& t, const Shift& shift, float* v, int64_t ld) {
  using T = Wino<R>;
  constexpr int A = T::A, NC = T::NC;
  const int64_t plane = p.H * p.W, xi_stride = p.C * ld;
  const float* xn = x + t.n * p.C * plane;
  for (int64_t c = 0; c < p.C; ++c) {
    __m512 r[A][A];
#pragma GCC unroll 6
    for (int a = 0; a < A; ++a) {
      Chunks<NC> ch;
      bool any = false;
      for (int k = 0; k < NC; ++k) {
        const int64_t ty = t.ty0 + p.group[NC / 4][k], iy = R * ty + p.top + a;
        const bool in = ty < p.TH && iy >= 0 && iy < p.H;
        ch.row[k] = in ? xn + c * plane + iy * p.W : nullptr;
        ch.col[k] = R * t.tx0 + p.left + p.offset[NC / 4][k];
        any = any || in;
      }
      if (!any) {
        for (int b = 0; b < A; ++b) r[a][b] = _mm512_setzero_ps();
        continue;
      }
      __m512 d[A];
      T::row(ch, p.W, p.G, shift, d);
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
// tile vectors j.
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
    fast::accumulate_rows<kRows, NV>(ux, vx, NV * 16, C, acc);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) _mm512_store_ps(ms + ((xi * kRows + r) * NV + j) * 16, acc[r][j]);
  }
}

// Y = A^T M A for the panel's first `rows` channels (output channel m0 + r),
// plus bias, activated, into R rows of Y per tile row of each tile vector.
template <int R, int NV, Kind K>
void transform_output(const float* ms, const Plane& p, const TileVec* tv, int rows, int64_t m0, const float* bias,
                      float* y, const VecActivation<K>& f) {
  using T = Wino<R>;
  constexpr int A = T::A, NC = T::NC;
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
      __m512 o[R][R];  // o[jj][i]: output row i, column R t + jj of lane t's tile
#pragma GCC unroll 4
      for (int jj = 0; jj < R; ++jj) {
        __m512 col[A];
        for (int a = 0; a < A; ++a) col[a] = s[a][jj];
        T::out(col, o[jj]);
      }
      const TileVec& t = tv[j];
      float* out = y + (t.n * p.M + m0 + r) * oplane;
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        __m512 row[R], chunk[NC];
        for (int jj = 0; jj < R; ++jj) row[jj] = f(_mm512_add_ps(o[jj][i], bv));
        T::weave(row, chunk);
        for (int k = 0; k < NC; ++k) {
          const int64_t ty = t.ty0 + p.group[NC / 4][k], oy = R * ty + i;
          if (ty < p.TH && oy < p.OH) store_span(out + oy * p.OW, R * t.tx0 + p.offset[NC / 4][k], p.OW, chunk[k]);
        }
      }
    }
  }
}

// Every panel of the NV tile vectors tv.
template <int R, int NV, Kind K>
void block(const WinogradWeights& w, const float* x, const Plane& p, const TileVec* tv, const Shift& shift, float* v,
           float* ms, const float* bias, float* y, const VecActivation<K>& f) {
  constexpr int XI = Wino<R>::A * Wino<R>::A;
  for (int j = 0; j < NV; ++j) transform_input<R>(x, p, tv[j], shift, v + j * 16, NV * 16);
  const int64_t panels = (p.M + kRows - 1) / kRows;
  for (int64_t k = 0; k < panels; ++k) {
    panel_products<XI, NV>(w.u.data() + k * XI * p.C * kRows, v, p.C, ms);
    transform_output<R, NV, K>(ms, p, tv, int(std::min<int64_t>(kRows, p.M - k * kRows)), k * kRows, bias, y, f);
  }
}

template <int R, Kind K>
void run(const sdk::Context& ctx, const WinogradWeights& w, const float* x, const float* bias, float* y, int64_t N,
         const Geometry& g, const ops::FusedActivation& act) {
  constexpr int XI = Wino<R>::A * Wino<R>::A, NC = Wino<R>::NC;
  const VecActivation<K> f(act);
  Plane p{w.C, w.M, g.in[1], g.in[2], g.out[1], g.out[2], -g.pb[1], -g.pb[2], 0, 0, 1, {}, {}};
  p.TH = (p.OH + R - 1) / R;
  p.TW = (p.OW + R - 1) / R;
  int G = 1;
  while (G < NC && p.TW <= 8 / G) G *= 2;
  p.set_groups(G);
  const Shift shift(p.G);
  const int64_t L = 16 / p.G, groups = (p.TH + p.G - 1) / p.G, per_row = (p.TW + L - 1) / L;
  const int64_t total = N * groups * per_row;
  // One contiguous range of tile vectors per thread, in blocks of three: the
  // pool's chunks would leave blocks of one or two at each chunk's end.
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
          const int64_t i = q + j, rest = i % (groups * per_row);
          tv[j] = TileVec{i / (groups * per_row), rest / per_row * p.G, rest % per_row * L};
        }
        if (nv == 3)
          block<R, 3, K>(w, x, p, tv, shift, v, ms, bias, y, f);
        else if (nv == 2)
          block<R, 2, K>(w, x, p, tv, shift, v, ms, bias, y, f);
        else
          block<R, 1, K>(w, x, p, tv, shift, v, ms, bias, y, f);
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
