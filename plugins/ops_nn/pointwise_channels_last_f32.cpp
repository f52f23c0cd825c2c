#include "pointwise_channels_last_f32.hpp"

#include <avx512_region.hpp>

#include <algorithm>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include "pointwise_tile_avx512.hpp"
#include "vec_activation_avx512.hpp"

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

using Kind = ops::FusedActivation::Kind;
constexpr int kMaxVecs = 4;
constexpr int kTilePixels = 6;

// Y[p][m] = act(sum_k X[k][p] W[k][m] + b[m]): X[k][p] at x[k * ldx + p *
// ldp], panel m0's W (64 channels) at w + m0 / 64 * panel_stride + m0 *
// col_step with its rows ldw apart, Y[p][m] at y[p * ldy + m].
struct Product {
  const float* x;
  int64_t ldx, ldp, K;
  const float* w;
  int64_t ldw, panel_stride, col_step;
  float* y;
  int64_t ldy;
  const float* b;
};

// NP pixels from p0 by NV vectors of channels of the panel whose weights are w.
template <int NV, int NP, Kind A>
void tile(const Product& q, int64_t p0, const float* w, int64_t m0, const __m512 (&bias)[kMaxVecs],
          const VecActivation<A>& f) {
  __m512 acc[NV][NP];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[j][p] = bias[j];
  accumulate_tile<NV, NP>(w, q.ldw, q.x + p0 * q.ldp, q.ldx, q.K, acc, q.ldp);
  float* y = q.y + p0 * q.ldy + m0;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(y + p * q.ldy + 16 * j, f(acc[j][p]));
}

template <int NV, Kind A>
void panel(const Product& q, int64_t P, int64_t m0, const VecActivation<A>& f) {
  const float* w = q.w + m0 / (16 * kMaxVecs) * q.panel_stride + m0 * q.col_step;
  __m512 bias[kMaxVecs];
  for (int j = 0; j < kMaxVecs; ++j) bias[j] = q.b && j < NV ? _mm512_loadu_ps(q.b + m0 + 16 * j) : _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + kTilePixels <= P; p += kTilePixels) tile<NV, kTilePixels, A>(q, p, w, m0, bias, f);
  switch (P - p) {
    case 5: tile<NV, 5, A>(q, p, w, m0, bias, f); break;
    case 4: tile<NV, 4, A>(q, p, w, m0, bias, f); break;
    case 3: tile<NV, 3, A>(q, p, w, m0, bias, f); break;
    case 2: tile<NV, 2, A>(q, p, w, m0, bias, f); break;
    case 1: tile<NV, 1, A>(q, p, w, m0, bias, f); break;
    default: break;
  }
}

template <Kind A>
void run(const Product& q, int64_t P, int64_t M, const ops::FusedActivation& act) {
  const VecActivation<A> f(act);
  for (int64_t m0 = 0; m0 < M; m0 += 16 * kMaxVecs) {
    switch (std::min<int64_t>(kMaxVecs, (M - m0) / 16)) {
      case 4: panel<4, A>(q, P, m0, f); break;
      case 3: panel<3, A>(q, P, m0, f); break;
      case 2: panel<2, A>(q, P, m0, f); break;
      default: panel<1, A>(q, P, m0, f); break;
    }
  }
}

void product(const Product& q, int64_t P, int64_t M, const ops::FusedActivation& act) {
  with_kind(act, [&](auto k) { run<decltype(k)::value>(q, P, M, act); });
}

}  // namespace

void pointwise_to_channels_last(const float* x, int64_t plane, int64_t P, int64_t C, const float* wt, int64_t M,
                                int64_t ld, const float* b, const ops::FusedActivation& act, float* e) {
  product(Product{x, plane, 1, C, wt, ld, 0, 1, e, ld, b}, P, M, act);
}

void channels_last_product(const float* d, int64_t P, int64_t ldd, const PointwiseWeights& w, float* y, int64_t ldy) {
  product(Product{d, 1, ldd, w.C, w.packed.data(), kChannelsLastPanel, w.C * kChannelsLastPanel, 0, y, ldy, nullptr},
          P, w.M, ops::FusedActivation());
}

void planes_product(const float* x, int64_t plane, int64_t P, const PointwiseWeights& w, const float* b,
                    const ops::FusedActivation& act, float* y, int64_t ldy) {
  product(Product{x, plane, 1, w.C, w.packed.data(), kChannelsLastPanel, w.C * kChannelsLastPanel, 0, y, ldy, b}, P,
          w.M, act);
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
