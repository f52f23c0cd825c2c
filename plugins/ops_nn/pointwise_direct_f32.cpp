#include "pointwise_direct_f32.hpp"

#include <avx512_region.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>

namespace singa {
namespace nn {

bool pointwise_direct_on() {
  return fast::avx512();
}

PointwiseWeights pointwise_panels(const float* w, int64_t M, int64_t C, int64_t panel) {
  PointwiseWeights p;
  p.M = M;
  p.C = C;
  const int64_t panels = (M + panel - 1) / panel;
  p.packed.assign(size_t(panels * C * panel), 0.f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < C; ++k) p.packed[size_t((m / panel * C + k) * panel + m % panel)] = w[m * C + k];
  return p;
}

PointwiseWeights pointwise_weights(const float* w, int64_t M, int64_t C) {
  return pointwise_panels(w, M, C, kPointwisePanel);
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
constexpr int kRows = int(kPointwisePanel);
constexpr int64_t kTileCols = kPointwiseTileCols;  // three vectors of pixels

// One panel of `rows` (<= 8) output channels by NV vectors of pixels; with
// kTail the last vector holds only the pixels of `last` (masked loads and
// stores are slow on AMD's family 1Ah, so full tiles use plain ones).
// The accumulator loops are unrolled by pragma: without it GCC 12 kept the
// array in memory and stored all 24 vectors on every step of k, which ran
// the kernel at a third of the FMA rate.
template <int NV, bool kTail, Kind A>
void tile(const float* wp, int64_t K, const float* x, int64_t ldx, const float* bias8, float* y, int64_t ldy,
          int rows, __mmask16 last, const VecActivation<A>& f, const float* z) {
  __m512 acc[kRows][NV];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    const __m512 b = _mm512_set1_ps(bias8[i]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = b;
  }
  fast::accumulate_rows<kRows, NV, kTail>(wp, x, ldx, K, acc, last);
  if (z) {
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      if (i >= rows) break;
      const float* zi = z + i * ldy;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_add_ps(acc[i][v], kTail && v == NV - 1 ? _mm512_maskz_loadu_ps(last, zi + 16 * v)
                                                                  : _mm512_loadu_ps(zi + 16 * v));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    if (i >= rows) break;
    float* yi = y + i * ldy;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (kTail && v == NV - 1)
        _mm512_mask_storeu_ps(yi + 16 * v, last, f(acc[i][v]));
      else
        _mm512_storeu_ps(yi + 16 * v, f(acc[i][v]));
    }
  }
}

template <Kind A>
void run(const PointwiseWeights& w, int64_t m0, int64_t mn, const float* x, int64_t ldx, const float* bias, float* y,
         int64_t ldy, int64_t cols, const ops::FusedActivation& act, const float* z) {
  const VecActivation<A> f(act);
  const int64_t K = w.C, p0 = m0 / kRows, p1 = (m0 + mn + kRows - 1) / kRows;
  for (int64_t c = 0; c < cols; c += kTileCols) {
    const int64_t n = std::min(kTileCols, cols - c);
    const int64_t r = n % 16;
    const __mmask16 last = __mmask16(r ? (1u << r) - 1u : 0xFFFFu);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t first = p * kRows;
      const int rows = int(std::min<int64_t>(kRows, m0 + mn - first));
      float b8[kRows] = {};
      if (bias) std::copy(bias + first, bias + first + rows, b8);
      const float* wp = w.packed.data() + p * K * kRows;
      float* yp = y + (first - m0) * ldy + c;
      const float* zp = z ? z + (first - m0) * ldy + c : nullptr;
      const float* xp = x + c;
      if (n == kTileCols)
        tile<3, false, A>(wp, K, xp, ldx, b8, yp, ldy, rows, last, f, zp);
      else if (n > 32)
        tile<3, true, A>(wp, K, xp, ldx, b8, yp, ldy, rows, last, f, zp);
      else if (n > 16)
        tile<2, true, A>(wp, K, xp, ldx, b8, yp, ldy, rows, last, f, zp);
      else
        tile<1, true, A>(wp, K, xp, ldx, b8, yp, ldy, rows, last, f, zp);
    }
  }
}

}  // namespace

void pointwise_direct_f32(const PointwiseWeights& w, int64_t m0, int64_t mn, const float* x, int64_t ldx,
                          const float* bias, float* y, int64_t ldy, int64_t cols, const ops::FusedActivation& act,
                          const float* z) {
  with_kind(act, [&](auto k) { run<decltype(k)::value>(w, m0, mn, x, ldx, bias, y, ldy, cols, act, z); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
