#include "lstm_step_f32.hpp"

#include <avx512_region.hpp>
#include <exp_avx512.hpp>
#include <line_aligned.hpp>
#include <product_tiles_avx512.hpp>

#include <algorithm>

namespace singa {
namespace ops {
namespace rnn {

namespace {

size_t packed_floats(int64_t H, int64_t K) { return size_t(lstm_panels(H) * K * 4 * kUnitsPerPanel); }

}  // namespace

float* pack_lstm_panels(const float* M, int64_t H, int64_t K, std::vector<float>& buf) {
  const int64_t L = kUnitsPerPanel;
  buf.clear();
  float* out = fast::line_aligned(buf, packed_floats(H, K));  // zero-filled
  for (int64_t u = 0; u < lstm_panels(H); ++u)
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t l = 0; l < L && u * L + l < H; ++l) {
        const float* row = M + (g * H + u * L + l) * K;
        float* dst = out + u * K * 4 * L + g * L + l;
        for (int64_t k = 0; k < K; ++k) dst[k * 4 * L] = row[k];
      }
  return out;
}

const float* packed_lstm_panels(const std::vector<float>& buf, int64_t H, int64_t K) {
  return buf.size() == packed_floats(H, K) + fast::kLineSlack ? fast::line_start(buf.data()) : nullptr;
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

namespace singa {
namespace ops {
namespace rnn {

SINGA_AVX512_BEGIN

namespace {

// NR rows of h against one panel: sum[r][g] gets gate g's 16 units for row
// r. Even and odd k go to separate accumulators: with one row, four chains of
// dependent FMAs would wait on the FMA latency.
template <int NR>
void panel_product(const float* panel, int64_t H, const float* h, __m512 (&sum)[NR][4]) {
  constexpr int64_t L = kUnitsPerPanel;
  __m512 acc[NR][2][4];
  for (int r = 0; r < NR; ++r)
    for (int e = 0; e < 2; ++e)
      for (int g = 0; g < 4; ++g) acc[r][e][g] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 2 <= H; k += 2) {
    const float* w = panel + k * 4 * L;
    for (int e = 0; e < 2; ++e)
      for (int g = 0; g < 4; ++g) {
        const __m512 wv = _mm512_loadu_ps(w + e * 4 * L + g * L);
        for (int r = 0; r < NR; ++r) acc[r][e][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[r * H + k + e]), wv, acc[r][e][g]);
      }
  }
  if (k < H) {
    const float* w = panel + k * 4 * L;
    for (int g = 0; g < 4; ++g) {
      const __m512 wv = _mm512_loadu_ps(w + g * L);
      for (int r = 0; r < NR; ++r) acc[r][0][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[r * H + k]), wv, acc[r][0][g]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int g = 0; g < 4; ++g) sum[r][g] = _mm512_add_ps(acc[r][0][g], acc[r][1][g]);
}

__mmask16 units_mask(int64_t valid) {
  return valid >= kUnitsPerPanel ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
}

// The product of NR rows into z (units j .. j + valid of each gate).
template <int NR>
void panel_rows(const float* panel, int64_t H, const float* h, float* z, int64_t j, int64_t valid) {
  __m512 sum[NR][4];
  panel_product<NR>(panel, H, h, sum);
  const __mmask16 m = units_mask(valid);
  for (int r = 0; r < NR; ++r)
    for (int g = 0; g < 4; ++g) _mm512_mask_storeu_ps(z + r * 4 * H + g * H + j, m, sum[r][g]);
}

// One row's cell for 16 units (m: those that exist) from z, its product
// h * R^T (gates 4 x H apart, as x).
inline void cell16(const float* z, const float* x, const float* bias, bool has_clip, __m512 lo, __m512 hi, float* c,
                   float* h_next, int64_t H, __mmask16 m) {
  __m512 a[4];
  for (int g = 0; g < 4; ++g) {
    a[g] = _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + g * H), _mm512_maskz_loadu_ps(m, z + g * H));
    if (bias) a[g] = _mm512_add_ps(a[g], _mm512_maskz_loadu_ps(m, bias + g * H));
    // max/min return their second operand when either is NaN: a NaN stays one.
    if (has_clip) a[g] = _mm512_maskz_max_ps(vec::kAllLanes, lo, _mm512_maskz_min_ps(vec::kAllLanes, hi, a[g]));
  }
  const __m512 gi = vec::sigmoid16(a[0]), go = vec::sigmoid16(a[1]), gf = vec::sigmoid16(a[2]);
  const __m512 cn = _mm512_fmadd_ps(gf, _mm512_maskz_loadu_ps(m, c), _mm512_mul_ps(gi, vec::tanh16(a[3])));
  _mm512_mask_storeu_ps(c, m, cn);
  _mm512_mask_storeu_ps(h_next, m, _mm512_mul_ps(go, vec::tanh16(cn)));
}

// NP rows of X against one panel of W (K = I inputs): the rows' 16 units of
// each gate into proj.
template <int NP>
void projection_tile(const float* panel, int64_t I, const float* x, float* proj, int64_t G, int64_t H, int64_t j,
                     __mmask16 m) {
  constexpr int64_t L = kUnitsPerPanel;
  __m512 acc[4][NP];
  for (int g = 0; g < 4; ++g)
    for (int p = 0; p < NP; ++p) acc[g][p] = _mm512_setzero_ps();
  fast::accumulate_tile<4, NP>(panel, 4 * L, x, 1, I, acc, I, L);
  for (int p = 0; p < NP; ++p)
    for (int g = 0; g < 4; ++g) _mm512_mask_storeu_ps(proj + p * G + g * H + j, m, acc[g][p]);
}

// One row's product against one panel (panel_product<1>, four k a turn) with
// the share's projection steps [k0, k1) of the same panel of W for its 4 rows
// of X spread evenly through the loop (Bresenham: err counts the turns' share
// of Q; Q steps in all). The 4 x 4 accumulators come from and go back to
// `acc` between steps; with share.store they go to the rows' projections.
void panel_product_projecting(const float* panel, int64_t H, const float* h, __m512 (&sum)[1][4],
                              const float* wpanel, const ProjectionShare& s, float* acc, int64_t j, __mmask16 m) {
  constexpr int64_t L = kUnitsPerPanel;
  __m512 a[2][4], pa[4][4];
  for (int e = 0; e < 2; ++e)
    for (int g = 0; g < 4; ++g) a[e][g] = _mm512_setzero_ps();
  for (int r = 0; r < 4; ++r)
    for (int g = 0; g < 4; ++g) pa[r][g] = s.first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + (r * 4 + g) * L);
  const float *x0 = s.x[0], *x1 = s.x[1], *x2 = s.x[2], *x3 = s.x[3];
  auto project = [&](int64_t k) {
    const float* w = wpanel + k * 4 * L;
    __m512 wv[4];
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) wv[g] = _mm512_loadu_ps(w + g * L);
    const __m512 xv[4] = {_mm512_set1_ps(x0[k]), _mm512_set1_ps(x1[k]), _mm512_set1_ps(x2[k]), _mm512_set1_ps(x3[k])};
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) pa[r][g] = _mm512_fmadd_ps(xv[r], wv[g], pa[r][g]);
  };
  const int64_t turns = H / 4, Q = s.k1 - s.k0;
  int64_t kp = s.k0, err = 0, k = 0;
  for (int64_t t = 0; t < turns; ++t, k += 4) {
    const float* w = panel + k * 4 * L;
#pragma GCC unroll 4
    for (int e = 0; e < 4; ++e)
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g)
        a[e & 1][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[k + e]), _mm512_loadu_ps(w + e * 4 * L + g * L), a[e & 1][g]);
    for (err += Q; err >= turns; err -= turns) project(kp++);
  }
  for (; k < H; ++k)
    for (int g = 0; g < 4; ++g)
      a[0][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[k]), _mm512_loadu_ps(panel + k * 4 * L + g * L), a[0][g]);
  for (; kp < s.k1; ++kp) project(kp);  // H < 4: no turns
  for (int g = 0; g < 4; ++g) sum[0][g] = _mm512_add_ps(a[0][g], a[1][g]);
  for (int r = 0; r < 4; ++r)
    for (int g = 0; g < 4; ++g) {
      if (!s.store)
        _mm512_storeu_ps(acc + (r * 4 + g) * L, pa[r][g]);
      else if (s.proj[r])
        _mm512_mask_storeu_ps(s.proj[r] + g * H + j, m, pa[r][g]);
    }
}

// The cells of rows [0, N) for units [j0, j1) from z, their products.
void step_cells(const float* z, int64_t H, const float* h, int64_t N, const float* const* x, const float* bias,
                bool has_clip, float clip, float* c, float* h_next, int64_t j0, int64_t j1) {
  constexpr int64_t L = kUnitsPerPanel;
  const __m512 hi = _mm512_set1_ps(clip), lo = _mm512_set1_ps(-clip);
  for (int64_t b = 0; b < N; ++b) {
    const float* zb = z + b * 4 * H;
    if (!x[b]) {  // ended: the state stays
      std::copy(h + b * H + j0, h + b * H + j1, h_next + b * H + j0);
      continue;
    }
    for (int64_t j = j0; j < j1; j += L)
      cell16(zb + j, x[b] + j, bias ? bias + j : nullptr, has_clip, lo, hi, c + b * H + j, h_next + b * H + j, H,
             units_mask(j1 - j));
  }
}

// A thread's buffer for one step's products of N rows.
float* step_products(int64_t N, int64_t H) {
  thread_local std::vector<float> buf;
  if (buf.size() < size_t(N * 4 * H)) buf.resize(size_t(N * 4 * H));
  return buf.data();
}

}  // namespace

void lstm_projection(const float* packed_w, int64_t H, int64_t I, const float* x, int64_t rows, float* proj, int64_t u0,
                     int64_t u1) {
  constexpr int64_t L = kUnitsPerPanel, kRows = 6;  // 24 accumulators, 4 weight vectors, a broadcast
  const int64_t G = 4 * H;
  for (int64_t u = u0; u < u1; ++u) {
    const float* panel = packed_w + u * I * 4 * L;
    const int64_t j = u * L;
    const __mmask16 m = units_mask(H - j);
    int64_t r = 0;
    for (; r + kRows <= rows; r += kRows) projection_tile<kRows>(panel, I, x + r * I, proj + r * G, G, H, j, m);
    switch (rows - r) {
      case 5: projection_tile<5>(panel, I, x + r * I, proj + r * G, G, H, j, m); break;
      case 4: projection_tile<4>(panel, I, x + r * I, proj + r * G, G, H, j, m); break;
      case 3: projection_tile<3>(panel, I, x + r * I, proj + r * G, G, H, j, m); break;
      case 2: projection_tile<2>(panel, I, x + r * I, proj + r * G, G, H, j, m); break;
      case 1: projection_tile<1>(panel, I, x + r * I, proj + r * G, G, H, j, m); break;
      default: break;
    }
  }
}

void lstm_step_product(const float* packed, int64_t H, const float* h, int64_t N, float* z, int64_t u0, int64_t u1,
                       bool backwards) {
  constexpr int64_t L = kUnitsPerPanel;
  const int64_t G = 4 * H;
  for (int64_t i = u0; i < u1; ++i) {
    const int64_t u = backwards ? u0 + u1 - 1 - i : i;
    const float* panel = packed + u * H * 4 * L;
    const int64_t j = u * L, valid = std::min(L, H - j);
    int64_t b = 0;
    // Three rows share each weight load; 24 of the 32 vector registers.
    for (; b + 3 <= N; b += 3) panel_rows<3>(panel, H, h + b * H, z + b * G, j, valid);
    if (N - b == 2) panel_rows<2>(panel, H, h + b * H, z + b * G, j, valid);
    if (N - b == 1) panel_rows<1>(panel, H, h + b * H, z + b * G, j, valid);
  }
}

void lstm_step(const float* packed, int64_t H, const float* h, int64_t N, const float* const* x, const float* bias,
               bool has_clip, float clip, float* c, float* h_next, int64_t u0, int64_t u1, bool backwards) {
  // The products of all the panels first, then the cells: each cell is a
  // chain of dependent exps and divisions, and after each panel's product
  // (the fused form, tried first) the chains ran one at a time, 9-13% of
  // the step; here the loop's iterations are independent.
  float* z = step_products(N, H);
  lstm_step_product(packed, H, h, N, z, u0, u1, backwards);
  step_cells(z, H, h, N, x, bias, has_clip, clip, c, h_next, u0 * kUnitsPerPanel,
             std::min(H, u1 * kUnitsPerPanel));
}

void lstm_step_projecting(const float* packed, int64_t H, const float* h, const float* x, const float* bias,
                          bool has_clip, float clip, float* c, float* h_next, int64_t u0, int64_t u1, bool backwards,
                          const ProjectionShare& share) {
  constexpr int64_t L = kUnitsPerPanel;
  float* z = step_products(1, H);
  for (int64_t i = u0; i < u1; ++i) {
    const int64_t u = backwards ? u0 + u1 - 1 - i : i;
    const int64_t j = u * L;
    const __mmask16 m = units_mask(H - j);
    __m512 sum[1][4];
    panel_product_projecting(packed + u * H * 4 * L, H, h, sum, share.packed_w + u * share.I * 4 * L, share,
                             share.acc + (u - u0) * 16 * L, j, m);
    for (int g = 0; g < 4; ++g) _mm512_mask_storeu_ps(z + g * H + j, m, sum[0][g]);
  }
  step_cells(z, H, h, 1, &x, bias, has_clip, clip, c, h_next, u0 * L, std::min(H, u1 * L));
}

SINGA_AVX512_END

}  // namespace rnn
}  // namespace ops
}  // namespace singa

#else

#include <cstdlib>

namespace singa {
namespace ops {
namespace rnn {
void lstm_step_product(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool) { std::abort(); }
void lstm_projection(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t) { std::abort(); }
void lstm_step_projecting(const float*, int64_t, const float*, const float*, const float*, bool, float, float*, float*,
                          int64_t, int64_t, bool, const ProjectionShare&) {
  std::abort();
}
void lstm_step(const float*, int64_t, const float*, int64_t, const float* const*, const float*, bool, float, float*,
               float*, int64_t, int64_t, bool) {
  std::abort();
}
}  // namespace rnn
}  // namespace ops
}  // namespace singa

#endif
