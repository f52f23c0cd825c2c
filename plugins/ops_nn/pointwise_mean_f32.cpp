#include "pointwise_mean_f32.hpp"

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
constexpr int kVecs = int(kMeanPanel / 16);
constexpr int kTilePixels = 6;

// Input channels between two rounds of prefetches.
constexpr int64_t kPrefetchStep = 4;

// The lines of a PrefetchRange, a few after every kPrefetchStep input
// channels of every tile.
struct Prefetcher {
  const char* at;
  const char* end;
  int64_t per_step;  // lines
  bool to_l2;

  Prefetcher(PrefetchRange r, int64_t tiles, int64_t K) : at(r.begin), end(r.end), per_step(0), to_l2(r.to_l2) {
    if (at >= end) return;
    const int64_t lines = (end - at + 63) / 64, steps = tiles * ((K + kPrefetchStep - 1) / kPrefetchStep);
    per_step = (lines + steps - 1) / steps;
  }
  void step() {
    if (to_l2)
      for (int64_t i = 0; i < per_step && at < end; ++i, at += 64) _mm_prefetch(at, _MM_HINT_T1);
    else
      for (int64_t i = 0; i < per_step && at < end; ++i, at += 64) _mm_prefetch(at, _MM_HINT_T0);
  }
};

// NP pixels of the plane by the panel's 64 channels, added activated into
// sum. Unrolled by pragma so that the accumulators stay in registers (see
// pointwise_direct_f32.cpp).
template <int NP, Kind A>
void tile(const float* wp, int64_t K, const float* x, int64_t P, const __m512 (&bias)[kVecs], __m512 (&sum)[kVecs],
          const VecActivation<A>& f, Prefetcher& pf) {
  __m512 acc[kVecs][NP];
#pragma GCC unroll 4
  for (int j = 0; j < kVecs; ++j)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[j][p] = bias[j];
  if (pf.per_step == 0) {
    fast::accumulate_tile<kVecs, NP>(wp, kMeanPanel, x, P, K, acc);
  } else {
    for (int64_t k = 0; k < K; k += kPrefetchStep) {
      fast::accumulate_tile<kVecs, NP>(wp + k * kMeanPanel, kMeanPanel, x + k * P, P, std::min(kPrefetchStep, K - k),
                                       acc);
      pf.step();
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < kVecs; ++j) {
    __m512 s = sum[j];
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) s = _mm512_add_ps(s, f(acc[j][p]));
    sum[j] = s;
  }
}

template <Kind A>
void run(const PointwiseWeights& w, int64_t panel, const float* x, int64_t P, const float* bias,
         const ops::FusedActivation& act, float* y, PrefetchRange prefetch) {
  const VecActivation<A> f(act);
  const int64_t K = w.C, first = panel * kMeanPanel, rows = std::min(kMeanPanel, w.M - first);
  alignas(64) float b[kMeanPanel] = {};
  if (bias) std::copy(bias + first, bias + first + rows, b);
  __m512 bv[kVecs], sum[kVecs];
  for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_load_ps(b + 16 * j), sum[j] = _mm512_setzero_ps();
  const float* wp = w.packed.data() + panel * K * kMeanPanel;
  Prefetcher pf(prefetch, (P + kTilePixels - 1) / kTilePixels, K);
  int64_t p = 0;
  for (; p + kTilePixels <= P; p += kTilePixels) tile<kTilePixels, A>(wp, K, x + p, P, bv, sum, f, pf);
  switch (P - p) {
    case 5: tile<5, A>(wp, K, x + p, P, bv, sum, f, pf); break;
    case 4: tile<4, A>(wp, K, x + p, P, bv, sum, f, pf); break;
    case 3: tile<3, A>(wp, K, x + p, P, bv, sum, f, pf); break;
    case 2: tile<2, A>(wp, K, x + p, P, bv, sum, f, pf); break;
    case 1: tile<1, A>(wp, K, x + p, P, bv, sum, f, pf); break;
    default: break;
  }
  const __m512 scale = _mm512_set1_ps(1.f / float(P));
  alignas(64) float mean[kMeanPanel];
  for (int j = 0; j < kVecs; ++j) _mm512_store_ps(mean + 16 * j, _mm512_mul_ps(sum[j], scale));
  std::copy(mean, mean + rows, y + first);
}

}  // namespace

void pointwise_mean_f32(const PointwiseWeights& w, int64_t panel, const float* x, int64_t P, const float* bias,
                        const ops::FusedActivation& act, float* y, PrefetchRange prefetch) {
  with_kind(act, [&](auto k) { run<decltype(k)::value>(w, panel, x, P, bias, act, y, prefetch); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
