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
// The half vector's 256-bit FMAs (every AVX-512 CPU has FMA3).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("fma")
#endif

namespace {

using Kind = ops::FusedActivation::Kind;
constexpr int kMaxVecs = 4;
constexpr int kTilePixels = 6;
constexpr int64_t kLongK = 256;

// Y[p][m] = act(sum_k X[k][p] W[k][m] + b[m]) for the channels from the
// first: X[k][p] at x[k * ldx + p * ldp], channel vector v of W at w + v *
// ldv with its rows 16 apart, Y[p][m] at y[p * ldy + m], b[m] at b[m], and
// where `add` is not null add[p * ldy + m] added after the activation.
// Vector `last` (or none: -1) holds only the channels of `lanes`: it is
// loaded and stored masked (its packed weights are zero-padded).
struct Product {
  const float* x;
  int64_t ldx, ldp, K;
  const float* w;
  int64_t ldv;
  float* y;
  int64_t ldy;
  const float* b;
  const float* add;
  int64_t last = -1;
  __mmask16 lanes = 0xFFFF;
};

// NP pixels from p0 by NV vectors of channels from vector v0, and where
// kHalf the first 8 channels of the vector after them (256-bit FMAs).
template <int NV, bool kHalf, int NP, Kind A>
void tile(const Product& q, int64_t p0, int64_t v0, const __m512 (&bias)[kMaxVecs], __m256 half_bias,
          const VecActivation<A>& f) {
  __m512 acc[NV][NP];
  __m256 half[NP];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[j][p] = bias[j];
  const float* w = q.w + v0 * q.ldv;
  const float* x = q.x + p0 * q.ldp;
  if constexpr (!kHalf) {
    fast::accumulate_tile<NV, NP>(w, kChannelsLastPanel, x, q.ldx, q.K, acc, q.ldp, q.ldv);
  } else {
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) half[p] = half_bias;
    const float* wh = w + NV * q.ldv;
    for (int64_t k = 0; k < q.K; ++k) {
      const float* wk = w + k * kChannelsLastPanel;
      const float* xk = x + k * q.ldx;
      __m512 wv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) wv[j] = _mm512_loadu_ps(wk + j * q.ldv);
      const __m256 hv = _mm256_loadu_ps(wh + k * kChannelsLastPanel);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        const __m512 xv = _mm512_set1_ps(xk[p * q.ldp]);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[j][p] = _mm512_fmadd_ps(wv[j], xv, acc[j][p]);
        half[p] = _mm256_fmadd_ps(hv, _mm256_set1_ps(xk[p * q.ldp]), half[p]);
      }
    }
  }
  const int64_t at = p0 * q.ldy + v0 * 16;
  float* y = q.y + at;
  const float* add = q.add ? q.add + at : nullptr;
  // Only a last partial vector masks (masked stores are slow on AMD's family 1Ah).
  const int partial = q.last >= v0 && q.last < v0 + NV ? int(q.last - v0) : -1;
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      __m512 v = f(acc[j][p]);
      float* at = y + p * q.ldy + 16 * j;
      if (j == partial) {
        if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(q.lanes, add + p * q.ldy + 16 * j));
        _mm512_mask_storeu_ps(at, q.lanes, v);
        continue;
      }
      if (add) v = _mm512_add_ps(v, _mm512_loadu_ps(add + p * q.ldy + 16 * j));
      _mm512_storeu_ps(at, v);
    }
    if constexpr (kHalf) {
      __m256 v = half[p];
      if constexpr (A != Kind::kNone) {
        // The activation on the half's lanes in a zero-extended vector (the
        // maskz insert and extract: the plain ones start from an
        // "undefined" register that -Wmaybe-uninitialized reports).
        const __m512d wide = _mm512_maskz_insertf64x4(0xFF, _mm512_setzero_pd(), _mm256_castps_pd(v), 0);
        v = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(f(_mm512_castpd_ps(wide))), 0));
      }
      if (add) v = _mm256_add_ps(v, _mm256_loadu_ps(add + p * q.ldy + 16 * NV));
      _mm256_storeu_ps(y + p * q.ldy + 16 * NV, v);
    }
  }
}

template <int NV, bool kHalf, Kind A, int TP = kTilePixels>
void panel(const Product& q, int64_t P, int64_t v0, const VecActivation<A>& f) {
  __m512 bias[kMaxVecs];
  for (int j = 0; j < kMaxVecs; ++j)
    bias[j] = !q.b || j >= NV    ? _mm512_setzero_ps()
              : v0 + j == q.last ? _mm512_maskz_loadu_ps(q.lanes, q.b + (v0 + j) * 16)
                                 : _mm512_loadu_ps(q.b + (v0 + j) * 16);
  const __m256 half_bias = kHalf && q.b ? _mm256_loadu_ps(q.b + (v0 + NV) * 16) : _mm256_setzero_ps();
  int64_t p = 0;
  // A vector and a half take tiles of 8 pixels (16 accumulators, each
  // weight load serving 8 FMAs): MobileNetV2's block 3 4% faster, block 2 1%.
  if constexpr (kHalf && NV == 1) {
    for (; p + 8 <= P; p += 8) tile<NV, kHalf, 8, A>(q, p, v0, bias, half_bias, f);
    if (P - p == 7) return tile<NV, kHalf, 7, A>(q, p, v0, bias, half_bias, f);
    if (P - p == 6) return tile<NV, kHalf, 6, A>(q, p, v0, bias, half_bias, f);
  }
  for (; p + TP <= P; p += TP) tile<NV, kHalf, TP, A>(q, p, v0, bias, half_bias, f);
  switch (P - p) {
    case 7: if constexpr (TP > 7) tile<NV, kHalf, 7, A>(q, p, v0, bias, half_bias, f); break;
    case 6: if constexpr (TP > 6) tile<NV, kHalf, 6, A>(q, p, v0, bias, half_bias, f); break;
    case 5: tile<NV, kHalf, 5, A>(q, p, v0, bias, half_bias, f); break;
    case 4: tile<NV, kHalf, 4, A>(q, p, v0, bias, half_bias, f); break;
    case 3: tile<NV, kHalf, 3, A>(q, p, v0, bias, half_bias, f); break;
    case 2: tile<NV, kHalf, 2, A>(q, p, v0, bias, half_bias, f); break;
    case 1: tile<NV, kHalf, 1, A>(q, p, v0, bias, half_bias, f); break;
    default: break;
  }
}

// `vectors` vectors of channels (the last masked where q.last says so), then
// a half one where `half` (after a last group of fewer than four).
template <Kind A>
void run(const Product& q, int64_t P, int64_t vectors, bool half, const ops::FusedActivation& act) {
  const VecActivation<A> f(act);
  // Long products (the weights of a group of 4 vectors past L1: a project
  // stage of 1152 inputs streams 295 KiB per tile from L2) take groups of 3
  // vectors by 8 pixels: 3/8 of a vector loaded per FMA instead of 4/6.
  if (q.K >= kLongK && !half) {
    // (A last 4 stay one group of 6-pixel tiles, not 3 + 1.)
    for (int64_t v0 = 0; v0 < vectors; v0 += 3) {
      if (vectors - v0 == kMaxVecs) return panel<kMaxVecs, false, A>(q, P, v0, f);
      switch (std::min<int64_t>(3, vectors - v0)) {
        case 3: panel<3, false, A, 8>(q, P, v0, f); break;
        case 2: panel<2, false, A, 8>(q, P, v0, f); break;
        default: panel<1, false, A, 8>(q, P, v0, f); break;
      }
    }
    return;
  }
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVecs) {
    const int64_t n = std::min<int64_t>(kMaxVecs, vectors - v0);
    if (half && n < kMaxVecs) {
      switch (n) {
        case 3: panel<3, true, A>(q, P, v0, f); break;
        case 2: panel<2, true, A>(q, P, v0, f); break;
        default: panel<1, true, A>(q, P, v0, f); break;
      }
      continue;
    }
    switch (n) {
      case 4: panel<4, false, A>(q, P, v0, f); break;
      case 3: panel<3, false, A>(q, P, v0, f); break;
      case 2: panel<2, false, A>(q, P, v0, f); break;
      default: panel<1, false, A>(q, P, v0, f); break;
    }
  }
}

}  // namespace

void channels_last_product(const float* x, int64_t ldx, int64_t ldp, int64_t P, const PointwiseWeights& w,
                           int64_t m0, int64_t m1, const float* b, const ops::FusedActivation& act, float* y,
                           int64_t ldy, const float* add) {
  const int64_t ldv = w.C * kChannelsLastPanel;
  const float* panels = w.packed.data() + m0 / kChannelsLastPanel * ldv;
  Product q{x, ldx, ldp, w.C, panels, ldv, y, ldy, b ? b + m0 : nullptr, add};
  int64_t vectors = (m1 - m0) / 16;
  const int64_t rest = (m1 - m0) % 16;
  // Eight channels after a last group of one whole vector take the half
  // vector's 256-bit FMAs (24 outputs: 4% faster than a masked second vector
  // here); after two or three, a masked vector: on this Xeon the tiles of
  // two or three vectors and a half ran 1.6x (40 outputs) and 1.26x (120)
  // slower than those of three or four with the last masked. Any other
  // rest, a masked vector.
  const bool half = rest == 8 && vectors % kMaxVecs == 1;
  if (rest && !half) {
    q.last = vectors++;
    q.lanes = __mmask16((1u << rest) - 1);
  }
  with_kind(act, [&](auto k) { run<decltype(k)::value>(q, P, vectors, half, act); });
}

#if defined(__clang__)
#pragma clang attribute pop
#endif
SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
