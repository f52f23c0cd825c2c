#include "conv_relu_pool_sparse_f32.hpp"

#include <avx512_region.hpp>
#include <sgemm.hpp>
#include <unfold_f32.hpp>
#include <vec_math.hpp>  // SINGA_VEC_CLONES

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>
#endif

namespace singa {
namespace grad {

bool conv_relu_pool_sparse_fits(const nn::ConvReluPoolShape& s) {
  const nn::Geometry& g = s.conv;
  return fast::avx512() && s.group == 1 && g.rank == 2 && g.no_padding() && g.d[1] == 1 && g.d[2] == 1;
}

#ifdef SINGA_AVX512_BEGIN

namespace {

// A window whose gradient is nonzero: the gradient, and where the unfolded
// row of its maximum starts in the channels-last image.
struct Hit {
  float g;
  int64_t at;
};

constexpr int kMaxVecs = 8;  // floats of a kernel row summed per pass: 8 vectors

SINGA_AVX512_BEGIN

// dst[0, 16 NV) (the last vector's `tail` lanes only) += sum over hits of
// g * xt[at + off, ...). The last vector reads past the run (into the next
// pixel, or the buffer's slack) but only its tail lanes are stored. Short
// rows (the first conv's 5 taps) take hits into several sets of sums, so
// that the multiply-adds do not wait on one another's latency.
template <int NV>
void gather_rows(const Hit* hits, size_t n, const float* xt, int64_t off, float* dst, __mmask16 tail) {
  constexpr int kSets = NV >= 4 ? 1 : (4 + NV - 1) / NV;
  __m512 acc[kSets][NV];
#pragma GCC unroll 4
  for (int k = 0; k < kSets; ++k)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[k][v] = _mm512_setzero_ps();
  size_t h = 0;
  for (; h + kSets <= n; h += kSets)
#pragma GCC unroll 4
    for (int k = 0; k < kSets; ++k) {
      const __m512 g = _mm512_set1_ps(hits[h + k].g);
      const float* src = xt + hits[h + k].at + off;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[k][v] = _mm512_fmadd_ps(g, _mm512_loadu_ps(src + 16 * v), acc[k][v]);
    }
  for (; h < n; ++h) {
    const __m512 g = _mm512_set1_ps(hits[h].g);
    const float* src = xt + hits[h].at + off;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[0][v] = _mm512_fmadd_ps(g, _mm512_loadu_ps(src + 16 * v), acc[0][v]);
  }
#pragma GCC unroll 4
  for (int k = 1; k < kSets; ++k)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[0][v] = _mm512_add_ps(acc[0][v], acc[k][v]);
#pragma GCC unroll 8
  for (int v = 0; v < NV - 1; ++v)
    _mm512_storeu_ps(dst + 16 * v, _mm512_add_ps(_mm512_loadu_ps(dst + 16 * v), acc[0][v]));
  const __m512 last = _mm512_add_ps(_mm512_maskz_loadu_ps(tail, dst + 16 * (NV - 1)), acc[0][NV - 1]);
  _mm512_mask_storeu_ps(dst + 16 * (NV - 1), tail, last);
}

SINGA_AVX512_END

// Relu's mask: the pooled gradient where the pooled value is positive.
SINGA_VEC_CLONES void relu_mask(const float* __restrict dy, const float* __restrict y, int64_t n,
                                float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = y[i] > 0.f ? dy[i] : 0.f;
}

using GatherFn = void (*)(const Hit*, size_t, const float*, int64_t, float*, __mmask16);
constexpr GatherFn kGather[kMaxVecs] = {gather_rows<1>, gather_rows<2>, gather_rows<3>, gather_rows<4>,
                                        gather_rows<5>, gather_rows<6>, gather_rows<7>, gather_rows<8>};

}  // namespace

// A kernel row (run floats) of the nonzero windows' contributions,
// g x src[at + off, ...], added into dst, in passes of at most 8 vectors.
void add_rows(const Hit* hits, size_t count, const float* src, int64_t off, int64_t run, float* dst) {
  for (int64_t j0 = 0; j0 < run; j0 += 16 * kMaxVecs) {
    const int64_t len = std::min<int64_t>(16 * kMaxVecs, run - j0), nv = (len + 15) / 16;
    const int64_t last = len - 16 * (nv - 1);
    const __mmask16 tail = __mmask16(last == 16 ? 0xFFFF : (1u << last) - 1);
    kGather[nv - 1](hits, count, src, off + j0, dst + j0, tail);
  }
}

bool conv_relu_pool_sparse_f32(const sdk::Context& ctx, const float* dy, const float* y, const int64_t* idx,
                               const float* x, const float* w, const nn::ConvReluPoolShape& s, float* dx, float* dw,
                               float* db) {
  const nn::Geometry& g = s.conv;
  const int64_t N = s.N, C = s.C, M = s.M, KH = g.k[1], KW = g.k[2], W = g.in[2], OW = g.out[2];
  const int64_t P = s.conv_plane(), Q = s.pool_plane(), in_size = g.in_size(), run = KW * C, K = C * KH * KW;
  // A few tasks per thread balance a busy machine; one thread needs one.
  const int threads = std::max(1, ctx.num_threads());
  const int64_t tasks = std::min<int64_t>(N, threads == 1 ? 1 : 4 * threads);
  std::atomic<bool> ok{true};
  std::mutex mu;
  // The tasks' dW summed in their layout (kernel rows' taps as (kw,
  // channel)), reordered into W's once at the end.
  std::vector<float> dw_rows(dw ? size_t(M * K) : 0, 0.f);
  std::vector<double> bias(db ? size_t(M) : 0, 0.0);
  // Where the unfolded row of each conv output position starts in a
  // channels-last image (a table: a division per window cost more than the
  // rest of the bookkeeping).
  std::vector<int64_t> offset(static_cast<size_t>(P));
  for (int64_t p = 0; p < P; ++p) offset[size_t(p)] = ((p / OW) * g.s[1] * W + (p % OW) * g.s[2]) * C;
  // W with each kernel row's taps as (kw, channel), for dX (+ the slack
  // gather_rows reads into).
  std::vector<float> wt(dx ? size_t(M * K + 16) : 0, 0.f);
  for (int64_t m = 0; m < (dx ? M : 0); ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          wt[size_t(m * K + kh * run + kw * C + c)] = w[((m * C + c) * KH + kh) * KW + kw];
  ctx.parallel_for(tasks, 1, [&](int64_t tb, int64_t te) {
    // Per image: the channels-last input (dW) or input gradient (dX), + the
    // slack gather_rows reads into; the nonzero windows of one channel (dW)
    // and of the whole image by conv output position (dX).
    thread_local std::vector<float> xt, masked_buf;
    thread_local std::vector<Hit> hits, by_pos;
    thread_local std::vector<int64_t> where, first;
    xt.resize(std::max(xt.size(), size_t(in_size * C + 16)));
    masked_buf.resize(std::max(masked_buf.size(), size_t(Q)));
    hits.resize(std::max(hits.size(), size_t(M * Q)));
    where.resize(std::max(where.size(), size_t(M * Q)));
    by_pos.resize(std::max(by_pos.size(), size_t(M * Q)));
    first.resize(std::max(first.size(), size_t(P + 1)));
    float* masked = masked_buf.data();
    for (int64_t task = tb; task < te; ++task) {
      // dW with each kernel row's taps as (kw, channel), the order of the
      // channels-last image; reordered into W's layout at the end.
      std::vector<float> local(dw ? size_t(M * K) : 0, 0.f);
      std::vector<double> local_db(db ? size_t(M) : 0, 0.0);
      for (int64_t n = N * task / tasks; n < N * (task + 1) / tasks; ++n) {
        if (dw) {
          if (C == 1)
            std::copy(x + n * in_size, x + (n + 1) * in_size, xt.data());
          else
            nn::to_channels_last_f32(x + n * C * in_size, C, in_size, xt.data());
        }
        size_t total = 0;  // nonzero windows of this image so far, in hits
        for (int64_t m = 0; m < M; ++m) {
          const int64_t plane = n * M + m, base = plane * P;
          relu_mask(dy + plane * Q, y + plane * Q, Q, masked);
          if (db) local_db[size_t(m)] += double(vec::lane_sum(masked, Q));
          // Compacted without a branch per window (which half of them would
          // mispredict).
          Hit* hit = hits.data() + total;
          int64_t* at = where.data() + total;
          size_t count = 0;
          bool inside = true;
          for (int64_t q = 0; q < Q; ++q) {
            const int64_t rel = idx[plane * Q + q] - base;
            const bool in = uint64_t(rel) < uint64_t(P);
            inside &= in;
            hit[count] = Hit{masked[q], offset[size_t(in ? rel : 0)]};
            at[count] = in ? rel : 0;
            count += masked[q] != 0.f;
          }
          if (!inside) ok = false;
          if (dw && count) {
            for (int64_t kh = 0; kh < KH; ++kh)
              add_rows(hit, count, xt.data(), kh * W * C, run, local.data() + m * K + kh * run);
          }
          if (dx) {
            for (size_t h = 0; h < count; ++h) hit[h].at = m * K;  // now: where channel m's taps start in wt
            total += count;
          }
        }
        if (!dx) continue;
        // dX: each conv output position's windows (a counting sort of the
        // image's nonzero windows), their kernels scaled by g summed into
        // the channels-last input gradient, which is then transposed.
        std::fill(first.begin(), first.begin() + P + 1, 0);
        for (size_t h = 0; h < total; ++h) ++first[size_t(where[h] + 1)];
        for (int64_t p = 0; p < P; ++p) first[size_t(p + 1)] += first[size_t(p)];
        for (size_t h = 0; h < total; ++h) by_pos[size_t(first[size_t(where[h])]++)] = hits[h];
        for (int64_t p = P; p > 0; --p) first[size_t(p)] = first[size_t(p - 1)];
        first[0] = 0;
        float* dxt = xt.data();
        std::fill(dxt, dxt + in_size * C, 0.f);
        for (int64_t p = 0; p < P; ++p) {
          const size_t b = size_t(first[size_t(p)]), e = size_t(first[size_t(p + 1)]);
          if (b == e) continue;
          for (int64_t kh = 0; kh < KH; ++kh)
            add_rows(by_pos.data() + b, e - b, wt.data(), kh * run, run, dxt + offset[size_t(p)] + kh * W * C);
        }
        nn::to_channels_last_f32(dxt, in_size, C, dx + n * C * in_size);
      }
      std::lock_guard<std::mutex> lock(mu);
      for (size_t m = 0; m < local_db.size(); ++m) bias[m] += local_db[m];
      for (size_t i = 0; i < local.size(); ++i) dw_rows[i] += local[i];
    }
  });
  for (int64_t m = 0; m < (dw ? M : 0); ++m)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t c = 0; c < C; ++c)
          dw[((m * C + c) * KH + kh) * KW + kw] = dw_rows[size_t(m * K + kh * run + kw * C + c)];
  for (int64_t m = 0; m < (db ? M : 0); ++m) db[m] = float(bias[size_t(m)]);
  return ok;
}

#else

bool conv_relu_pool_sparse_f32(const sdk::Context&, const float*, const float*, const int64_t*, const float*,
                               const float*, const nn::ConvReluPoolShape&, float*, float*, float*) {
  return false;  // never called: conv_relu_pool_sparse_fits() is false without AVX-512
}

#endif

}  // namespace grad
}  // namespace singa
