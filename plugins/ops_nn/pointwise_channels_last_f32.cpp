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

// NP pixels by NV vectors of channels from the panel's first; x and e
// offset to the tile's first pixel, wt and b to the panel's first channel.
template <int NV, int NP, Kind A>
void tile(const float* x, int64_t plane, int64_t C, const float* wt, int64_t ld, const __m512 (&bias)[kMaxVecs],
          float* e, const VecActivation<A>& f) {
  __m512 acc[NV][NP];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[j][p] = bias[j];
  accumulate_tile<NV, NP>(wt, ld, x, plane, C, acc);
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(e + p * ld + 16 * j, f(acc[j][p]));
}

template <int NV, Kind A>
void panel(const float* x, int64_t plane, int64_t P, int64_t C, const float* wt, int64_t ld, const float* b,
           float* e, const VecActivation<A>& f) {
  __m512 bias[kMaxVecs];
  for (int j = 0; j < kMaxVecs; ++j) bias[j] = b && j < NV ? _mm512_loadu_ps(b + 16 * j) : _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + kTilePixels <= P; p += kTilePixels) tile<NV, kTilePixels, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f);
  switch (P - p) {
    case 5: tile<NV, 5, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f); break;
    case 4: tile<NV, 4, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f); break;
    case 3: tile<NV, 3, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f); break;
    case 2: tile<NV, 2, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f); break;
    case 1: tile<NV, 1, A>(x + p, plane, C, wt, ld, bias, e + p * ld, f); break;
    default: break;
  }
}

template <Kind A>
void run(const float* x, int64_t plane, int64_t P, int64_t C, const float* wt, int64_t M, int64_t ld,
         const float* b, const ops::FusedActivation& act, float* e) {
  const VecActivation<A> f(act);
  for (int64_t m0 = 0; m0 < M; m0 += 16 * kMaxVecs) {
    const float* bp = b ? b + m0 : nullptr;
    switch (std::min<int64_t>(kMaxVecs, (M - m0) / 16)) {
      case 4: panel<4, A>(x, plane, P, C, wt + m0, ld, bp, e + m0, f); break;
      case 3: panel<3, A>(x, plane, P, C, wt + m0, ld, bp, e + m0, f); break;
      case 2: panel<2, A>(x, plane, P, C, wt + m0, ld, bp, e + m0, f); break;
      default: panel<1, A>(x, plane, P, C, wt + m0, ld, bp, e + m0, f); break;
    }
  }
}

}  // namespace

void pointwise_to_channels_last(const float* x, int64_t plane, int64_t P, int64_t C, const float* wt, int64_t M,
                                int64_t ld, const float* b, const ops::FusedActivation& act, float* e) {
  with_kind(act, [&](auto k) { run<decltype(k)::value>(x, plane, P, C, wt, M, ld, b, act, e); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
