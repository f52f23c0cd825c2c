#include "conv_thin_f32.hpp"

#include "blocked16_f32.hpp"
#include "pool_blocked16_f32.hpp"
#include "vec_activation_avx512.hpp"

#include <avx512_region.hpp>
#include <line_aligned.hpp>
#include <sgemm.hpp>  // fast::avx512

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and conv_thin_f32 is never called
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace singa {
namespace nn {

using ops::FusedActivation;

bool conv_thin_fits(const Geometry& g, int64_t C, int64_t M, int64_t group, const FusedActivation& act,
                    const Geometry* pool) {
  if (!fast::avx512() || g.rank != 2 || group != 1 || C < 1 || C > 4 || M <= 0 || M % 32 != 0) return false;
  if (g.s[1] != g.s[2] || (g.s[1] != 1 && g.s[1] != 2) || !g.unit_dilations() || g.out[1] <= 0 || g.out[2] <= 0)
    return false;
  if (!pool) return true;
  // The activation runs after the pool: it must keep the order of values.
  if (act.kind == FusedActivation::kLeakyRelu && !(act.alpha >= 0.f)) return false;
  if (act.kind == FusedActivation::kClip && !(act.lo <= act.hi)) return false;
  if (pool->rank != 2 || pool->out[1] <= 0 || pool->out[2] <= 0 || !pool->unit_dilations()) return false;
  for (int i = 1; i < 3; ++i)
    if (pool->pb[i] >= pool->k[i] || pool->pe[i] >= pool->k[i]) return false;  // no window wholly in the padding
  return true;
}

ThinConvWeights conv_thin_weights(const float* w, int64_t M, int64_t C, int64_t KH, int64_t KW) {
  ThinConvWeights t;
  t.C = C, t.M = M, t.KH = KH, t.KW = KW, t.group_width = M % 64 == 0 ? 64 : 32;
  const int64_t taps = C * KH * KW, G = t.group_width;
  t.packed.resize(size_t(M * taps));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < taps; ++i) t.packed[size_t((m / G * taps + i) * G + m % G)] = w[m * taps + i];
  return t;
}

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
namespace {

constexpr int64_t kL = 16;  // channels per vector

// What a call of the row kernel reads and where it writes.
struct Job {
  const float* x;       // the image, C planes
  const float* bias;    // or null
  const Geometry* g;
  const ThinConvWeights* w;
  float* b;             // conv row r0's first pixel of the first 16-channel block
  int64_t block;        // floats between 16-channel blocks in b
  int64_t pixel;        // floats between pixels in b: 16 in blocks, M channels-last
  const FusedActivation* act;  // applied as the rows are stored: conv_rows' A
};

// GCC's predictive commoning (-O3) keeps the input values that the next tap
// reads again (stride 2: tap kx + 2 of pixel p is tap kx of pixel p + 1) in
// registers across taps, and spills the accumulators to make room: the
// MobileNetV2 stem ran at 55% of the peak with it, 85% without.
#if defined(__GNUC__) && !defined(__clang__)
#define SINGA_NO_PREDICTIVE_COMMONING __attribute__((optimize("no-predictive-commoning")))
#else
#define SINGA_NO_PREDICTIVE_COMMONING
#endif

// Output pixels [ox, ox + P) of one output row, whose taps all lie inside the
// input row, for the B 16-channel blocks of group wg; input row iy0 + ky for
// the window rows [ky0, ky1) that lie inside the image.
template <int B, int P, int S, FusedActivation::Kind A>
SINGA_NO_PREDICTIVE_COMMONING void strip(const Job& j, const float* wg, const float* bias, int64_t ky0, int64_t ky1,
                                         int64_t iy0, int64_t ix0, float* out) {
  const int64_t H = j.g->in[1], W = j.g->in[2], KH = j.w->KH, KW = j.w->KW;
  __m512 acc[P][B];
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) {
    const __m512 bv = bias ? _mm512_loadu_ps(bias + b * kL) : _mm512_setzero_ps();
#pragma GCC unroll 24
    for (int p = 0; p < P; ++p) acc[p][b] = bv;
  }
  for (int64_t c = 0; c < j.w->C; ++c)
    for (int64_t ky = ky0; ky < ky1; ++ky) {
      const float* row = j.x + (c * H + iy0 + ky) * W + ix0;
      const float* wk = wg + (c * KH + ky) * KW * B * kL;
      for (int64_t kx = 0; kx < KW; ++kx) {
        __m512 wv[B];
#pragma GCC unroll 8
        for (int b = 0; b < B; ++b) wv[b] = _mm512_loadu_ps(wk + (kx * B + b) * kL);
#pragma GCC unroll 24
        for (int p = 0; p < P; ++p) {
          const __m512 xv = _mm512_set1_ps(row[p * S + kx]);
#pragma GCC unroll 8
          for (int b = 0; b < B; ++b) acc[p][b] = _mm512_fmadd_ps(wv[b], xv, acc[p][b]);
        }
      }
    }
  const VecActivation<A> f(*j.act);
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b)
#pragma GCC unroll 24
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(out + b * j.block + p * j.pixel, f(acc[p][b]));
}

// One output pixel whose window may reach past the row's ends (the padding).
template <int B, FusedActivation::Kind A>
void edge(const Job& j, const float* wg, const float* bias, int64_t ky0, int64_t ky1, int64_t iy0, int64_t ix0,
          float* out) {
  const int64_t H = j.g->in[1], W = j.g->in[2], KH = j.w->KH, KW = j.w->KW;
  const int64_t kx0 = std::max<int64_t>(0, -ix0), kx1 = std::min(KW, W - ix0);
  __m512 acc[B];
  for (int b = 0; b < B; ++b) acc[b] = bias ? _mm512_loadu_ps(bias + b * kL) : _mm512_setzero_ps();
  for (int64_t c = 0; c < j.w->C; ++c)
    for (int64_t ky = ky0; ky < ky1; ++ky) {
      const float* row = j.x + (c * H + iy0 + ky) * W;
      const float* wk = wg + (c * KH + ky) * KW * B * kL;
      for (int64_t kx = kx0; kx < kx1; ++kx) {
        const __m512 xv = _mm512_set1_ps(row[ix0 + kx]);
        for (int b = 0; b < B; ++b) acc[b] = _mm512_fmadd_ps(_mm512_loadu_ps(wk + (kx * B + b) * kL), xv, acc[b]);
      }
    }
  const VecActivation<A> f(*j.act);
  for (int b = 0; b < B; ++b) _mm512_storeu_ps(out + b * j.block, f(acc[b]));
}

// Conv rows [r0, r1), every channel, plus the bias, with activation A (kNone
// where the caller applies it later), into j.b.
template <int B, int S, FusedActivation::Kind A>
void conv_rows(const Job& j, int64_t r0, int64_t r1) {
  constexpr int P = 24 / B;  // 24 accumulators, the weights and one input value: 29 of 32 registers
  const Geometry& g = *j.g;
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], KH = j.w->KH, KW = j.w->KW, pt = g.pb[1], pl = g.pb[2];
  const int64_t taps = j.w->C * KH * KW;
  // Output columns whose taps all lie inside the row: [lo, hi).
  const int64_t lo = std::min(OW, (pl + S - 1) / S);
  const int64_t hi = std::max(lo, std::min(OW, W - KW + pl >= 0 ? (W - KW + pl) / S + 1 : 0));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t iy0 = r * S - pt;
    // The input rows the next output row adds, a row ahead: in a net the
    // image comes from L3, and the C x KH row streams of a stride-2 window
    // outran the hardware prefetcher (MobileNetV2's stem 0.185 -> 0.15 ms).
    const int64_t next_lo = std::max<int64_t>(0, iy0 + KH), next_hi = std::min(H, iy0 + KH + S);
    for (int64_t c = 0; c < j.w->C; ++c)
      for (int64_t iy = next_lo; iy < next_hi; ++iy)
        for (int64_t i = 0; i < W; i += kL)
          _mm_prefetch(reinterpret_cast<const char*>(j.x + (c * H + iy) * W + i), _MM_HINT_T0);
    const int64_t ky0 = std::max<int64_t>(0, -iy0), ky1 = std::max(ky0, std::min(KH, H - iy0));
    // Each group of output channels over the row, its input rows in L1.
    for (int64_t g0 = 0; g0 < j.w->M; g0 += B * kL) {
      const float* wg = j.w->packed.data() + g0 * taps;
      const float* bias = j.bias ? j.bias + g0 : nullptr;
      float* out = j.b + g0 / kL * j.block + (r - r0) * OW * j.pixel;
      const int64_t px = j.pixel;
      for (int64_t ox = 0; ox < lo; ++ox) edge<B, A>(j, wg, bias, ky0, ky1, iy0, ox * S - pl, out + ox * px);
      if (hi - lo >= P) {
        int64_t ox = lo;
        for (; ox + P <= hi; ox += P) strip<B, P, S, A>(j, wg, bias, ky0, ky1, iy0, ox * S - pl, out + ox * px);
        // The last few columns as a strip that ends at hi: it recomputes
        // some of the one before, to the same values.
        if (ox < hi) strip<B, P, S, A>(j, wg, bias, ky0, ky1, iy0, (hi - P) * S - pl, out + (hi - P) * px);
      } else {
        for (int64_t ox = lo; ox < hi; ++ox) edge<B, A>(j, wg, bias, ky0, ky1, iy0, ox * S - pl, out + ox * px);
      }
      for (int64_t ox = hi; ox < OW; ++ox) edge<B, A>(j, wg, bias, ky0, ky1, iy0, ox * S - pl, out + ox * px);
    }
  }
}

using RowsFn = void (*)(const Job&, int64_t, int64_t);

template <FusedActivation::Kind A>
RowsFn rows_for(int64_t group_width, int64_t stride) {
  if (group_width == 64) return stride == 1 ? &conv_rows<4, 1, A> : &conv_rows<4, 2, A>;
  return stride == 1 ? &conv_rows<2, 1, A> : &conv_rows<2, 2, A>;
}

}  // namespace

void conv_thin_f32(const sdk::Context& ctx, const float* x, const ThinConvWeights& w, const float* bias, float* y,
                   int64_t N, const Geometry& g, const FusedActivation& act, const Geometry* pool, bool blocked_out) {
  const int64_t C = w.C, M = w.M, HW = g.in[1] * g.in[2], OH = g.out[1], OW = g.out[2];
  const RowsFn conv = rows_for<FusedActivation::kNone>(w.group_width, g.s[1]);
  const FusedActivation none;  // store_band16 applies act
  const int64_t YH = pool ? pool->out[1] : OH, YW = pool ? pool->out[2] : OW;  // the rows and columns y gets
  // Steps of output rows whose conv rows take about 192 KiB (L2 holds them
  // until they are pooled or stored).
  const int64_t row_floats = M * OW, budget = (int64_t(192) << 10) / int64_t(sizeof(float));
  int64_t step = 0, cap = 0;  // y rows per step, conv rows the buffer holds
  if (!pool) {
    step = cap = std::clamp<int64_t>(budget / row_floats, 1, OH);
  } else {
    const int64_t ps = pool->s[1], pk = pool->k[1];
    step = std::clamp<int64_t>((budget / row_floats - std::max<int64_t>(0, pk - ps)) / ps, 1, YH);
    cap = std::min(OH, (step - 1) * ps + pk);
  }
  // Each image's y rows in as many bands as make work for every thread.
  const int64_t threads = std::max(1, ctx.num_threads());
  const int64_t bands = std::clamp<int64_t>((threads + N - 1) / N, 1, YH);
  ctx.parallel_for(N * bands, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> conv_buf, pool_buf;
    float* b = fast::line_aligned(conv_buf, size_t(cap * row_floats));
    float* pooled = pool ? fast::line_aligned(pool_buf, size_t(step * M * YW)) : nullptr;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / bands, band = t % bands;
      const int64_t y_begin = YH * band / bands, y_end = YH * (band + 1) / bands;
      const float* xn = x + n * C * HW;
      float* yn = y + n * M * YH * YW;
      if (!pool) {
        for (int64_t r0 = y_begin; r0 < y_end; r0 += step) {
          const int64_t r1 = std::min(y_end, r0 + step);
          conv(Job{xn, bias, &g, &w, b, (r1 - r0) * OW * kL, kL, &none}, r0, r1);
          store_band16(b, yn, blocked_out, 1, M, r1 - r0, OW, OH, r0, act);
        }
        continue;
      }
      // Pooled: the conv rows the step's windows read, keeping those the
      // step before computed (pool windows overlap by k - s rows).
      const int64_t block = cap * OW * kL;
      int64_t have_lo = 0, have_hi = 0;  // the conv rows b holds
      for (int64_t q0 = y_begin; q0 < y_end; q0 += step) {
        const int64_t q1 = std::min(y_end, q0 + step);
        const auto [need_lo, need_hi] = pool->in_range(1, q0, q1);
        if (have_hi > need_lo && have_lo <= need_lo) {
          if (need_lo > have_lo)
            for (int64_t cb = 0; cb < M / kL; ++cb)
              std::memmove(b + cb * block, b + cb * block + (need_lo - have_lo) * OW * kL,
                           size_t((have_hi - need_lo) * OW * kL) * sizeof(float));
          have_lo = need_lo;
        } else {
          have_lo = have_hi = need_lo;
        }
        if (need_hi > have_hi) {
          conv(Job{xn, bias, &g, &w, b + (have_hi - have_lo) * OW * kL, block, kL, &none}, have_hi, need_hi);
          have_hi = need_hi;
        }
        max_pool_blocked16_f32(b, 1, M, cap, have_lo, *pool, q0, q1, pooled);
        store_band16(pooled, yn, blocked_out, 1, M, q1 - q0, YW, YH, q0, act);
      }
    }
  });
}

void conv_thin_rows_channels_last(const float* x, const ThinConvWeights& w, const float* bias, const Geometry& g,
                                  const FusedActivation& act, int64_t r0, int64_t r1, float* y) {
  const RowsFn rows = with_kind(act, [&](auto k) { return rows_for<decltype(k)::value>(w.group_width, g.s[1]); });
  rows(Job{x, bias, &g, &w, y, kL, w.M, &act}, r0, r1);
}

SINGA_AVX512_END
#else
void conv_thin_f32(const sdk::Context&, const float*, const ThinConvWeights&, const float*, float*, int64_t,
                   const Geometry&, const FusedActivation&, const Geometry*, bool) {
  std::abort();
}
void conv_thin_rows_channels_last(const float*, const ThinConvWeights&, const float*, const Geometry&,
                                  const FusedActivation&, int64_t, int64_t, float*) {
  std::abort();
}
#endif

}  // namespace nn
}  // namespace singa
