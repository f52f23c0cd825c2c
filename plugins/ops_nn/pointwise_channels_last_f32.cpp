#include "pointwise_channels_last_f32.hpp"

#include <avx512_region.hpp>

#include <algorithm>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include <product_tiles_avx512.hpp>
#include "vec_activation_avx512.hpp"

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

using Kind = ops::FusedActivation::Kind;
constexpr int kMaxVecs = 4;
constexpr int kTilePixels = 6;

// Y[p][m] = act(sum_k X[k][p] W[k][m] + b[m]) for the channels from the
// first: X[k][p] at x[k * ldx + p * ldp], channel vector v of W at w + v *
// ldv with its rows 16 apart, Y[p][m] at y[p * ldy + m], b[m] at b[m].
struct Product {
  const float* x;
  int64_t ldx, ldp, K;
  const float* w;
  int64_t ldv;
  float* y;
  int64_t ldy;
  const float* b;
};

// NP pixels from p0 by NV vectors of channels from vector v0.
template <int NV, int NP, Kind A>
void tile(const Product& q, int64_t p0, int64_t v0, const __m512 (&bias)[kMaxVecs], const VecActivation<A>& f) {
  __m512 acc[NV][NP];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[j][p] = bias[j];
  fast::accumulate_tile<NV, NP>(q.w + v0 * q.ldv, kChannelsLastPanel, q.x + p0 * q.ldp, q.ldx, q.K, acc, q.ldp, q.ldv);
  float* y = q.y + p0 * q.ldy + v0 * 16;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(y + p * q.ldy + 16 * j, f(acc[j][p]));
}

template <int NV, Kind A>
void panel(const Product& q, int64_t P, int64_t v0, const VecActivation<A>& f) {
  __m512 bias[kMaxVecs];
  for (int j = 0; j < kMaxVecs; ++j)
    bias[j] = q.b && j < NV ? _mm512_loadu_ps(q.b + (v0 + j) * 16) : _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + kTilePixels <= P; p += kTilePixels) tile<NV, kTilePixels, A>(q, p, v0, bias, f);
  switch (P - p) {
    case 5: tile<NV, 5, A>(q, p, v0, bias, f); break;
    case 4: tile<NV, 4, A>(q, p, v0, bias, f); break;
    case 3: tile<NV, 3, A>(q, p, v0, bias, f); break;
    case 2: tile<NV, 2, A>(q, p, v0, bias, f); break;
    case 1: tile<NV, 1, A>(q, p, v0, bias, f); break;
    default: break;
  }
}

template <Kind A>
void run(const Product& q, int64_t P, int64_t vectors, const ops::FusedActivation& act) {
  const VecActivation<A> f(act);
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVecs) {
    switch (std::min<int64_t>(kMaxVecs, vectors - v0)) {
      case 4: panel<4, A>(q, P, v0, f); break;
      case 3: panel<3, A>(q, P, v0, f); break;
      case 2: panel<2, A>(q, P, v0, f); break;
      default: panel<1, A>(q, P, v0, f); break;
    }
  }
}

}  // namespace

void channels_last_product(const float* x, int64_t ldx, int64_t ldp, int64_t P, const PointwiseWeights& w,
                           int64_t m0, int64_t m1, const float* b, const ops::FusedActivation& act, float* y,
                           int64_t ldy) {
  const int64_t ldv = w.C * kChannelsLastPanel;
  const Product q{x, ldx, ldp, w.C, w.packed.data() + m0 / kChannelsLastPanel * ldv, ldv, y, ldy, b ? b + m0 : nullptr};
  with_kind(act, [&](auto k) { run<decltype(k)::value>(q, P, (m1 - m0) / 16, act); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
