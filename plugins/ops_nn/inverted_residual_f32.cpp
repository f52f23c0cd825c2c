#include "inverted_residual_f32.hpp"

#include "conv_nchw_f32.hpp"
#include "channels_last_f32.hpp"
#include "im2col.hpp"
#include "pointwise_channels_last_f32.hpp"
#include "vec_activation_avx512.hpp"

#include <avx512_region.hpp>
#include <dnnl_sgemm.hpp>
#include <line_aligned.hpp>
#include <sgemm.hpp>  // fast::avx512
#include <transpose16_f32.hpp>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {

using ops::FusedActivation;

namespace {

// The [cols, rows] transposes of `batch` row-major [rows, cols] matrices
// one after the other: weights into the band kernel's layouts, and NCHW
// planes to channels-last rows (rows the channels, cols the pixels) and back.
std::vector<float> transposed(const float* a, int64_t rows, int64_t cols, int64_t batch = 1) {
  std::vector<float> t(size_t(batch * rows * cols));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[size_t((n * cols + c) * rows + r)] = a[(n * rows + r) * cols + c];
  return t;
}

// a [rows, cols] as [rows_p, cols_p], the new rows and columns zero: the
// band kernel's buffers hold whole vectors of expanded channels, and the
// padded channels' zero weights keep them out of every sum.
std::vector<float> zero_padded(const float* a, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p) {
  std::vector<float> t(size_t(rows_p * cols_p), 0.f);
  for (int64_t r = 0; r < rows; ++r) std::copy(a + r * cols, a + (r + 1) * cols, t.begin() + r * cols_p);
  return t;
}

// The expanded channels as the band kernel's buffers hold them: Me rounded
// up to whole vectors (kws-style nets' 172 channels take 176). The padded
// channels get zero weights and biases, so each holds act(0) (finite) and
// the project stage's zero columns drop it.
int64_t band_channels(int64_t Me) { return (Me + 15) / 16 * 16; }

// A stem stage's outputs as its register tile writes them: whole groups of
// 32 (conv_thin_f32.hpp), the padded ones with zero weights and biases (a
// keyword spotting CNN's 1 -> 172 stem runs 192 wide); the stencil reads
// the rows that far apart.
int64_t stem_channels(int64_t Me) { return (Me + 31) / 32 * 32; }

// The squeeze-and-excitation's gates of one image from its depthwise
// result's means: gate[m] = gate_act(b2[m] + sum_j w2[m, j] act(b1[j] +
// sum_k w1[j, k] mean[k])) for the Me channels. The dot products run in 16
// independent lanes and the second product as sums of scaled rows of w2's
// transpose (where given), so that the compiler can vectorize both (a
// single running sum may not be reordered).
void squeeze_excite_gates(const SqueezeExcite& se, const float* mean, int64_t Me, float* gate) {
  constexpr int64_t kLanes = 16;
  std::vector<float> h(size_t(se.R));
  for (int64_t j = 0; j < se.R; ++j) {
    const float* w = se.w1 + j * Me;
    float lanes[kLanes] = {};
    int64_t k = 0;
    for (; k + kLanes <= Me; k += kLanes)
      for (int64_t i = 0; i < kLanes; ++i) lanes[i] += w[k + i] * mean[k + i];
    float v = 0.f;
    for (; k < Me; ++k) v += w[k] * mean[k];
    for (int64_t i = 0; i < kLanes; ++i) v += lanes[i];
    h[size_t(j)] = v + (se.b1 ? se.b1[j] : 0.f);
  }
  se.act.apply_rows(h.data(), 1, se.R, se.R, nullptr);
  for (int64_t m = 0; m < Me; ++m) gate[m] = se.b2 ? se.b2[m] : 0.f;
  if (se.w2t) {
    for (int64_t j = 0; j < se.R; ++j) {
      const float* w = se.w2t + j * Me;
      const float hj = h[size_t(j)];
      for (int64_t m = 0; m < Me; ++m) gate[m] += w[m] * hj;
    }
  } else {
    for (int64_t m = 0; m < Me; ++m)
      for (int64_t j = 0; j < se.R; ++j) gate[m] += se.w2[m * se.R + j] * h[size_t(j)];
  }
  se.gate_act.apply_rows(gate, 1, Me, Me, nullptr);
}

// The three stages one after the other on whole NCHW tensors: where AVX-512
// is missing, or a node without a project stage has expanded channels that
// are not whole vectors (channels-last
// X and Y are converted, a rare case not worth its own loops).
void run_staged(const sdk::Context& ctx, const float* x, const float* w1, const float* b1, const float* wd,
                const float* bd, const float* w2, const float* b2, float* y, const InvertedResidual& s) {
  const Geometry& g = s.dw;
  const int64_t x_plane = s.stem_conv ? s.stem.in_size() : g.in_size();
  std::vector<float> x_nchw, y_nchw;
  if (s.x_channels_last) {
    x_nchw = transposed(x, x_plane, s.C, s.N);
    x = x_nchw.data();
  }
  float* y_out = y;
  if (s.y_channels_last) {
    y_nchw.resize(size_t(s.N * s.M * g.out_size()));
    y = y_nchw.data();
  }
  std::vector<float> expanded, dw(size_t(s.project ? s.N * s.Me * g.out_size() : 0));
  const float* e = x;
  if (s.stem_conv) {
    // The stem as one product per image over its unfolded windows.
    const int64_t taps = s.C * s.stem.k_size(), P = s.stem.out_size();
    expanded.resize(size_t(s.N * s.Me * P));
    std::vector<float> cols(size_t(taps * P));
    for (int64_t n = 0; n < s.N; ++n) {
      im2col(ctx, x + n * s.C * s.stem.in_size(), s.stem, s.C, 0, P, cols.data());
      conv_pointwise_f32(ctx, cols.data(), w1, b1, expanded.data() + n * s.Me * P, 1, taps, s.Me, P, s.expand_act);
    }
    e = expanded.data();
  } else if (s.expand) {
    expanded.resize(size_t(s.N * s.Me * g.in_size()));
    conv_pointwise_f32(ctx, x, w1, b1, expanded.data(), s.N, s.C, s.Me, g.in_size(), s.expand_act);
    e = expanded.data();
  }
  if (!s.project) {
    conv_depthwise_f32(ctx, e, wd, bd, y, s.N, s.Me, g, s.dw_act, s.depthwise_blocked);
    const int64_t P = g.out_size();
    if (s.means)
      for (int64_t i = 0; i < s.N * s.Me; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < P; ++p) sum += y[i * P + p];
        s.means[i] = float(sum / double(P));
      }
  } else {
    conv_depthwise_f32(ctx, e, wd, bd, dw.data(), s.N, s.Me, g, s.dw_act, s.depthwise_blocked);
    if (s.se) {  // each plane times its channel's gate
      const int64_t P = g.out_size();
      std::vector<float> mean(size_t(s.Me)), gate(size_t(s.Me));
      for (int64_t n = 0; n < s.N; ++n) {
        float* dn = dw.data() + n * s.Me * P;
        for (int64_t m = 0; m < s.Me; ++m) {
          double sum = 0;
          for (int64_t p = 0; p < P; ++p) sum += dn[m * P + p];
          mean[size_t(m)] = float(sum / double(P));
        }
        squeeze_excite_gates(*s.se, mean.data(), s.Me, gate.data());
        for (int64_t m = 0; m < s.Me; ++m)
          for (int64_t p = 0; p < P; ++p) dn[m * P + p] *= gate[size_t(m)];
      }
    }
    conv_pointwise_f32(ctx, dw.data(), w2, b2, y, s.N, s.Me, s.M, g.out_size(), s.project_act);
  }
  if (s.residual)
    for (int64_t i = 0, n = s.N * s.M * g.out_size(); i < n; ++i) y[i] += x[i];
  if (s.y_channels_last) {
    const std::vector<float> rows = transposed(y, s.M, g.out_size(), s.N);
    std::copy(rows.begin(), rows.end(), y_out);
  }
}

}  // namespace

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
namespace {

constexpr int64_t kL = 16;  // channels per vector

// NB channel blocks from c0 of every output row (NB * K * K weight vectors
// stay in registers). Inside the image, T neighbouring outputs at a time
// share their inputs: at stride 1, T + K - 1 loads a window row instead of
// T * K (MobileNetV2's 56x56 stencil 20% faster at T = 6, one block).
// Input pixels are ldi floats apart (Me for the band's rows, C where the
// stencil reads a block's channels-last X in place); Masked loads only the
// `mask` lanes of the inputs, for a last block of channels that is not a
// whole vector of X (the lanes past it would be the next pixel's channels).
template <int K, int S, FusedActivation::Kind A, int NB, int T, bool Masked = false>
void stencil_blocks(const float* e, int64_t cap, int64_t ldi, const float* wt, const float* bd, float* d, int64_t oy0,
                    int64_t rows, const Geometry& g, int64_t Me, const VecActivation<A>& f, int64_t c0,
                    __mmask16 mask = 0xffff) {
  auto load = [mask](const float* p) {
    if constexpr (Masked)
      return _mm512_maskz_loadu_ps(mask, p);
    else
      return _mm512_loadu_ps(p);
  };
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], pt = g.pb[1], pl = g.pb[2];
  // Output columns whose K taps all lie inside the row: [ox_lo, ox_hi).
  const int64_t ox_lo = std::min(OW, (pl + S - 1) / S);
  const int64_t ox_hi = std::max(ox_lo, std::min(OW, W - K + pl >= 0 ? (W - K + pl) / S + 1 : 0));
  __m512 wv[NB][K * K], bv[NB];
  for (int b = 0; b < NB; ++b) {
    for (int t = 0; t < K * K; ++t) wv[b][t] = _mm512_loadu_ps(wt + t * Me + c0 + b * kL);
    bv[b] = bd ? _mm512_loadu_ps(bd + c0 + b * kL) : _mm512_setzero_ps();
  }
  // A row of zeros as wide as the input's rows, for the padded rows.
  thread_local std::vector<float> zeros;
  const size_t zero_floats = size_t(W * std::max(Me, ldi) + kL);
  if (zeros.size() < zero_floats) zeros.assign(zero_floats, 0.f);
  const float* zero_row = zeros.data() + c0;
  for (int64_t o = 0; o < rows; ++o) {
    const int64_t iy0 = (oy0 + o) * S - pt;
    const int ky0 = int(std::max<int64_t>(0, -iy0)), ky1 = int(std::min<int64_t>(K, H - iy0));
    // Input row iy0 + ky; rows above or below the image read zeros, so that
    // every output row runs the strips below (on 14x14 and 7x7 planes with a
    // 5x5 window, over half of the outputs touch a padded row or column).
    const float* row[K];
    for (int ky = 0; ky < K; ++ky) row[ky] = ky >= ky0 && ky < ky1 ? e + (iy0 + ky) % cap * W * ldi + c0 : zero_row;
    float* out = d + o * OW * Me + c0;
    // Outputs whose window crosses the left or right border: the taps inside,
    // in two accumulator chains (one chain of up to K * K dependent FMAs
    // waited on each FMA's latency).
    auto edge = [&](int64_t ox) {
      const int64_t ix0 = ox * S - pl;
      const int kx0 = int(std::max<int64_t>(0, -ix0)), kx1 = int(std::min<int64_t>(K, W - ix0));
      for (int b = 0; b < NB; ++b) {
        __m512 acc = bv[b], acc2 = _mm512_setzero_ps();
        for (int ky = ky0; ky < ky1; ++ky) {
          const float* in = row[ky] + ix0 * ldi + b * kL;
          int kx = kx0;
          for (; kx + 1 < kx1; kx += 2) {
            acc = _mm512_fmadd_ps(wv[b][ky * K + kx], load(in + kx * ldi), acc);
            acc2 = _mm512_fmadd_ps(wv[b][ky * K + kx + 1], load(in + (kx + 1) * ldi), acc2);
          }
          if (kx < kx1) acc = _mm512_fmadd_ps(wv[b][ky * K + kx], load(in + kx * ldi), acc);
        }
        _mm512_storeu_ps(out + ox * Me + b * kL, f(_mm512_add_ps(acc, acc2)));
      }
    };
    // TT neighbouring outputs from ox whose windows lie inside the row.
    auto strip = [&](auto tt, int64_t ox) {
      constexpr int TT = decltype(tt)::value;
      const int64_t at = (ox * S - pl) * ldi;
      __m512 acc[NB][TT];
      for (int b = 0; b < NB; ++b)
        for (int t = 0; t < TT; ++t) acc[b][t] = bv[b];
      for (int ky = 0; ky < K; ++ky)
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 16
          for (int i = 0; i < (TT - 1) * S + K; ++i) {  // input column i of the strip, for each output it is a tap of
            const __m512 in = load(row[ky] + at + i * ldi + b * kL);
#pragma GCC unroll 8
            for (int t = 0; t < TT; ++t)
              if (i - t * S >= 0 && i - t * S < K)
                acc[b][t] = _mm512_fmadd_ps(wv[b][ky * K + i - t * S], in, acc[b][t]);
          }
      for (int b = 0; b < NB; ++b)
        for (int t = 0; t < TT; ++t) _mm512_storeu_ps(out + (ox + t) * Me + b * kL, f(acc[b][t]));
    };
    for (int64_t ox = 0; ox < ox_lo; ++ox) edge(ox);
    int64_t ox = ox_lo;
    for (; ox + T <= ox_hi; ox += T) strip(std::integral_constant<int, T>(), ox);
    if constexpr (T > 2)
      for (; ox + 2 <= ox_hi; ox += 2) strip(std::integral_constant<int, 2>(), ox);
    for (; ox < ox_hi; ++ox) strip(std::integral_constant<int, 1>(), ox);
    for (; ox < OW; ++ox) edge(ox);
  }
}

// The expand stage into channels-last rows: e[p * Me + m] = act(sum_c
// x[c * plane + p] w1[c0 + m, c] + b1[c0 + m]) for pixels [0, P) and the
// expanded channels [c0, c1), e pointing at channel c0; the project stage:
// yt[p * M + m] = sum_k d[p * Me + k] w2[m, k]. Through the register tile
// of pointwise_channels_last_f32.hpp (MobileNetV2: blocks 2-7's expand 3-7%
// faster each at 1 thread than through sgemm, blocks 8-17's 2-13%; the
// project stage 3-7% on the blocks with 64 and 96 outputs; on blocks 2 and
// 3's 24 outputs, a vector and a half, the whole blocks ran 8-9% faster at
// 1 and 2 threads than with sgemm, block 3 13% with the half's tiles of 8
// pixels; other counts, such as kws_cnn's 172, end in a masked vector); with
// option cpu.band_tiles=0 (to compare), through oneDNN's sgemm.
// X is read as NCHW planes (ldx the plane, ldp 1) or channels-last rows
// (ldx 1, ldp C).
void expand(const float* x, int64_t ldx, int64_t ldp, int64_t P, int64_t C, const InvertedResidualWeights& pw,
            int64_t c0, int64_t c1, int64_t Me, const float* b1, const FusedActivation& act, float* e) {
  if (!pw.w1p.packed.empty()) return channels_last_product(x, ldx, ldp, P, pw.w1p, c0, c1, b1, act, e, Me);
  if (ldp == 1)
    ops::check_sgemm(dnnl_sgemm('T', 'N', P, c1 - c0, C, 1.f, x, ldx, pw.w1t.data() + c0, Me, 0.f, e, Me));
  else
    ops::check_sgemm(dnnl_sgemm('N', 'N', P, c1 - c0, C, 1.f, x, ldp, pw.w1t.data() + c0, Me, 0.f, e, Me));
  bias_act_channels_last(e, P, c1 - c0, Me, b1 ? b1 + c0 : nullptr, act);
}

void project(const float* d, int64_t P, const InvertedResidualWeights& pw, int64_t Me, int64_t M, float* yt) {
  if (pw.w2p.M == M) return channels_last_product(d, 1, Me, P, pw.w2p, 0, M, nullptr, FusedActivation(), yt, M);
  ops::check_sgemm(dnnl_sgemm('N', 'N', P, M, Me, 1.f, d, Me, pw.w2t.data(), M, 0.f, yt, M));
}

// The project stage straight into channels-last rows of Y, with its bias,
// activation and the residual `add` (in Y's layout, or null).
void project_rows(const float* d, int64_t P, const InvertedResidualWeights& pw, int64_t Me, int64_t M,
                  const float* b2, const FusedActivation& act, float* y, const float* add) {
  if (pw.w2p.M == M) return channels_last_product(d, 1, Me, P, pw.w2p, 0, M, b2, act, y, M, add);
  ops::check_sgemm(dnnl_sgemm('N', 'N', P, M, Me, 1.f, d, Me, pw.w2t.data(), M, 0.f, y, M));
  store_channels_last(y, P, M, b2, act, y, add);
}

// The project stage of pixels [p0, p0 + P) of one image from their filtered
// rows d into Y's rows (project_rows) or its NCHW planes (through yt, the
// band's result buffer, and store_nchw), with the bias, activation and the
// skip connection from xn (a residual block's X is in Y's layout: run_bands).
void project_pixels(const float* d, int64_t p0, int64_t P, const float* xn, const float* b2,
                    const InvertedResidual& s, const InvertedResidualWeights& pw, float* yt, float* yn) {
  const int64_t Me = band_channels(s.Me), M = s.M;
  if (!s.project) {
    // The filtered rows are the result (Me whole vectors here: inverted_residual_bands).
    if (s.y_channels_last) return static_cast<void>(std::copy(d, d + P * Me, yn + p0 * Me));
    return store_nchw(d, P, Me, nullptr, FusedActivation(), yn + p0, s.dw.out_size());
  }
  if (s.y_channels_last)
    return project_rows(d, P, pw, Me, M, b2, s.project_act, yn + p0 * M, s.residual ? xn + p0 * M : nullptr);
  project(d, P, pw, Me, M, yt);
  store_nchw(yt, P, M, b2, s.project_act, yn + p0, s.dw.out_size(), s.residual ? xn + p0 : nullptr);
}

// The depthwise stencil for output rows [oy0, oy0 + rows) and channels
// [c_begin, c_end): e holds input rows channels-last, row iy at slot iy % cap
// (a ring of cap rows; cap >= H: the whole image), wt the
// weights tap-major ([tap][Me]); d gets the rows channels-last. Padding is
// never stored: the taps that fall outside the input are skipped (rows per
// output row, columns only at the borders). 3x3 windows of stride 1 take
// strips of 6 outputs of one channel block; of stride 2, two channel blocks
// per sweep over the band (each pixel's two lines are adjacent, and there
// are half as many sweeps; strips did not pay there: an input column is a
// tap of at most two outputs).
template <int K, int S, FusedActivation::Kind A>
void stencil(const float* e, int64_t cap, int64_t ldi, int64_t c_valid, const float* wt, const float* bd, float* d,
             int64_t oy0, int64_t rows, const Geometry& g, int64_t Me, int64_t c_begin, int64_t c_end,
             const FusedActivation& act) {
  const VecActivation<A> f(act);
  // Whole vectors of input channels first; a part vector of X (c_valid not
  // a multiple of 16) runs last with masked loads.
  const int64_t c_stop = std::clamp<int64_t>(c_valid / kL * kL, c_begin, c_end);
  constexpr int kStrip = S == 1 ? 4 : K == 5 ? 2 : 1;
  if (c_stop < c_end) {
    const __mmask16 mask = __mmask16((1u << std::clamp<int64_t>(c_valid - c_stop, 0, kL)) - 1);
    for (int64_t c = c_stop; c < c_end; c += kL)
      stencil_blocks<K, S, A, 1, kStrip, true>(e, cap, ldi, wt, bd, d, oy0, rows, g, Me, f, c,
                                               c == c_stop ? mask : __mmask16(0));
  }
  c_end = c_stop;
  int64_t c0 = c_begin;
  // 3x3, 5x5 and 7x7 at stride 1 take strips of 4 outputs. 7x7: its 49
  // weight vectors do not fit the registers, so each FMA loads one; the
  // strips load each input once per row instead of up to 7 times. 5x5: one
  // accumulator per output was a chain of 25 dependent FMAs (4 cycles each);
  // strips of 4 outputs at stride 1 and 2 at stride 2 keep that many chains
  // in flight beside the 25 weight vectors.
  if constexpr (S == 1 || K == 5) {
    for (; c0 < c_end; c0 += kL) stencil_blocks<K, S, A, 1, kStrip>(e, cap, ldi, wt, bd, d, oy0, rows, g, Me, f, c0);
    return;
  }
  if constexpr (K == 3)
    for (; c0 + 2 * kL <= c_end; c0 += 2 * kL)
      stencil_blocks<K, S, A, 2, 1>(e, cap, ldi, wt, bd, d, oy0, rows, g, Me, f, c0);
  for (; c0 < c_end; c0 += kL) stencil_blocks<K, S, A, 1, 1>(e, cap, ldi, wt, bd, d, oy0, rows, g, Me, f, c0);
}

// Channels [c_begin, c_end) of the stencil (multiples of 16), input pixels
// ldi floats apart with c_valid channels each (the rest read as zeros).
using StencilFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, const float*, float*, int64_t,
                           int64_t, const Geometry&, int64_t, int64_t, int64_t, const FusedActivation&);

template <FusedActivation::Kind A>
StencilFn stencil_for(int64_t k, int64_t s) {
  if (k == 3) return s == 1 ? &stencil<3, 1, A> : &stencil<3, 2, A>;
  if (k == 5) return s == 1 ? &stencil<5, 1, A> : &stencil<5, 2, A>;
  return s == 1 ? &stencil<7, 1, A> : &stencil<7, 2, A>;
}

StencilFn stencil_for(const Geometry& g, const FusedActivation& act) {
  return with_kind(act, [&](auto k) { return stencil_for<decltype(k)::value>(g.k[1], g.s[1]); });
}

// The share of the whole block's multiply-adds that the largest of `chunks`
// row chunks of one image does (the expanded rows a chunk reads, the
// depthwise and project work of the rows it writes).
double largest_chunk_share(const InvertedResidual& s, int64_t chunks) {
  const Geometry& g = s.dw;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], K = g.k[1];
  const double in_row = double(W) * (s.expand ? s.C : 0), out_row = double(OW) * (K * K + (s.project ? s.M : 0));
  double largest = 0;
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t oy0 = OH * ch / chunks, oy1 = OH * (ch + 1) / chunks;
    const auto [lo, hi] = g.in_range(1, oy0, oy1);
    largest = std::max(largest, (hi - lo) * in_row + (oy1 - oy0) * out_row);
  }
  return largest / (H * in_row + OH * out_row);
}

// e[p * Cp + c] = x[c * plane + p] for pixels [0, n) and channels [0, C),
// the channels [C, Cp) zero: an NCHW block input of channels that are not
// whole vectors into the band's rows, 16 pixels x 16 channels per register
// transpose (the planes past C and the pixels past n read as zeros; a
// gather per pixel and vector took 3% of kws_cnn).
void to_padded_rows(const float* x, int64_t plane, int64_t n, int64_t C, int64_t Cp, float* e) {
  __m512 v[kL];
  for (int64_t p = 0; p < n; p += kL) {
    const int64_t pn = std::min<int64_t>(kL, n - p);
    const __mmask16 lanes = __mmask16((1u << pn) - 1);
    for (int64_t c0 = 0; c0 < Cp; c0 += kL) {
      const int64_t cn = std::clamp<int64_t>(C - c0, 0, kL);
      for (int64_t i = 0; i < kL; ++i)
        v[i] = i < cn ? _mm512_maskz_loadu_ps(lanes, x + (c0 + i) * plane + p) : _mm512_setzero_ps();
      fast::transpose16(v);
      for (int64_t j = 0; j < pn; ++j) _mm512_storeu_ps(e + (p + j) * Cp + c0, v[j]);
    }
  }
}

// e[p * Cp + c] = x[p * C + c] for pixels [0, n) and channels [0, C), the
// channels [C, Cp) zero: channels-last rows of channels that are not whole
// vectors into the band's rows, a vector at a time with the last one masked
// (per pixel, std::copy and std::fill were two library calls of 172 floats
// or less: 5% of kws_cnn).
void rows_to_padded(const float* x, int64_t n, int64_t C, int64_t Cp, float* e) {
  const int64_t whole = C / kL;
  const __mmask16 last = __mmask16((1u << (C % kL)) - 1);
  for (int64_t p = 0; p < n; ++p) {
    const float* from = x + p * C;
    float* to = e + p * Cp;
    int64_t v = 0;
    for (; v < whole; ++v) _mm512_storeu_ps(to + v * kL, _mm512_loadu_ps(from + v * kL));
    for (; v * kL < Cp; ++v)  // the part vector, then any whole zero ones
      _mm512_storeu_ps(to + v * kL, v == whole ? _mm512_maskz_loadu_ps(last, from + v * kL) : _mm512_setzero_ps());
  }
}

// y[c * plane + p] = d[p * ld + c] for pixels [0, P) and channels [c0, c1)
// (multiples of 16): a slice of the filtered rows to NCHW planes, through
// 16x16 register transposes, where a node without a project stage splits
// its channels.
void slice_to_nchw(const float* d, int64_t ld, int64_t P, int64_t c0, int64_t c1, float* y, int64_t plane) {
  __m512 v[kL];
  for (int64_t c = c0; c < c1; c += kL) {
    int64_t p = 0;
    for (; p + kL <= P; p += kL) {
      for (int i = 0; i < kL; ++i) v[i] = _mm512_loadu_ps(d + (p + i) * ld + c);
      fast::transpose16(v);
      for (int i = 0; i < kL; ++i) _mm512_storeu_ps(y + (c + i) * plane + p, v[i]);
    }
    for (; p < P; ++p)
      for (int64_t i = 0; i < kL; ++i) y[(c + i) * plane + p] = d[p * ld + c + i];
  }
}

// sums[c] += d[p * ld + c] for pixels [0, P) and channels [c0, c1)
// (multiples of 16): the means a node without a project stage writes.
void add_channel_sums(const float* d, int64_t P, int64_t ld, int64_t c0, int64_t c1, float* sums) {
  for (int64_t c = c0; c < c1; c += kL) {
    __m512 acc = _mm512_loadu_ps(sums + c);
    for (int64_t p = 0; p < P; ++p) acc = _mm512_add_ps(acc, _mm512_loadu_ps(d + p * ld + c));
    _mm512_storeu_ps(sums + c, acc);
  }
}

// sums[c] += y[p * M + c] for pixels [0, P) and channels [0, M), any M (the
// last vector masked): Y's means where only they are wanted.
void add_row_sums(const float* y, int64_t P, int64_t M, float* sums) {
  for (int64_t c = 0; c < M; c += kL) {
    const __mmask16 lanes = c + kL <= M ? __mmask16(0xffff) : __mmask16((1u << (M - c)) - 1);
    __m512 acc = _mm512_maskz_loadu_ps(lanes, sums + c), acc2 = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 1 < P; p += 2) {
      acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes, y + p * M + c));
      acc2 = _mm512_add_ps(acc2, _mm512_maskz_loadu_ps(lanes, y + (p + 1) * M + c));
    }
    if (p < P) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes, y + p * M + c));
    _mm512_mask_storeu_ps(sums + c, lanes, _mm512_add_ps(acc, acc2));
  }
}

// Row chunks: each task runs the band kernel over a chunk of one image's
// output rows, R rows at a time, its buffers thread-local. With s.y_means
// (inverted_residual_f32 sends only blocks without a squeeze-and-excitation
// whose skip connection's X is channels-last), each band's result goes to a
// scratch of its rows, channels-last, and is summed there: Y is not stored.
void run_row_chunks(const sdk::Context& ctx, const float* x, const float* b1, const float* bd, const float* b2,
                    float* y, const InvertedResidual& s, const InvertedResidualWeights& pw, StencilFn run_stencil,
                    int64_t chunks) {
  const Geometry& g = s.dw;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], K = g.k[1], S = g.s[1];
  // The buffers' channels: Me in whole vectors (band_channels).
  const int64_t HW = H * W, OHW = OH * OW, Me = band_channels(s.Me), C = s.C, M = s.M;
  const int64_t x_plane = s.stem_conv ? s.stem.in_size() : HW;
  // X's pixels as NCHW planes or channels-last rows (expand's ldx, ldp).
  const int64_t ldx = s.x_channels_last ? 1 : HW, ldp = s.x_channels_last ? C : 1;
  // Bands of R output rows whose expanded input rows and depthwise result
  // take about 512 KiB together (half of a core's L2 here).
  const int64_t Ms = s.stem_conv ? stem_channels(s.Me) : Me;  // the expanded rows' pitch
  const int64_t in_row = W * Ms, out_row = OW * Me, budget = int64_t(128) << 10;  // floats
  const int64_t R = std::clamp<int64_t>((budget - (K - S) * in_row) / (S * in_row + out_row), 1, OH);
  // The expanded rows in a ring of cap rows (row iy at slot iy % cap): the
  // K - S rows a band shares with the next stay where they are (moving them
  // down took 2.8% of MobileNetV2's block 3).
  const int64_t cap = std::min(H, (R - 1) * S + K);
  const bool direct = !s.project && s.y_channels_last && M == Me;
  // A block without an expand stage whose X is channels-last: the stencil
  // reads X's rows in place (the last vector masked where C is not whole
  // vectors) instead of a padded copy of each row (5% of kws_cnn).
  const bool read_x = !s.expand && !s.stem_conv && s.x_channels_last;
  // Each task's channel sums where the means are wanted, added up after.
  std::vector<float> sums(s.means ? size_t(s.N * chunks * Me) : 0, 0.f);
  const bool mean_rows = s.y_means != nullptr && s.project;
  std::vector<float> y_sums(mean_rows ? size_t(s.N * chunks * M) : 0, 0.f);
  ctx.parallel_for(s.N * chunks, 1, [&](int64_t t0, int64_t t1) {
    ops::dnnl_single_thread();
    thread_local std::vector<float> e_buf, d_buf, y_buf, m_buf;
    float* e = fast::line_aligned(e_buf, size_t(read_x ? 0 : cap * in_row));
    float* d = fast::line_aligned(d_buf, size_t(R * out_row));
    // The band's NCHW-bound result, on lines (line_aligned.hpp); none where
    // Y's rows are written directly.
    float* yt = fast::line_aligned(y_buf, size_t(s.y_channels_last || mean_rows ? 0 : R * OW * M));
    float* ym = fast::line_aligned(m_buf, size_t(mean_rows ? R * OW * M : 0));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / chunks, ch = t % chunks;
      const int64_t oy_begin = OH * ch / chunks, oy_end = OH * (ch + 1) / chunks;
      const float* xn = x + n * C * x_plane;
      float* yn = y ? y + n * M * OHW : nullptr;
      int64_t e_hi = 0;  // the rows the ring holds end here
      for (int64_t oy0 = oy_begin; oy0 < oy_end; oy0 += R) {
        const int64_t rows = std::min(R, oy_end - oy0);
        const auto [need_lo, need_hi] = g.in_range(1, oy0, oy0 + rows);
        e_hi = std::max(e_hi, need_lo);  // rows from need_lo up to e_hi are kept
        // The rows the band adds, in runs of slots that do not wrap.
        for (int64_t r0 = read_x ? need_hi : e_hi; r0 < need_hi;) {
          const int64_t r1 = std::min(need_hi, r0 - r0 % cap + cap);
          float* at = e + r0 % cap * in_row;
          const int64_t pixels = (r1 - r0) * W;
          if (s.stem_conv) {
            // The stem's rows straight into the band, channels-last: no
            // blocked output to NCHW and back (MobileNetV2's stem and block 1).
            conv_thin_rows_channels_last(xn, pw.w1thin, b1, s.stem, s.expand_act, r0, r1, at);
          } else if (s.expand) {
            expand(xn + r0 * W * ldp, ldx, ldp, pixels, C, pw, 0, Me, Me, b1, s.expand_act, at);
          } else if (s.x_channels_last && C == Me) {
            std::copy(xn + r0 * W * C, xn + r1 * W * C, at);
          } else if (s.x_channels_last) {
            rows_to_padded(xn + r0 * W * C, pixels, C, Me, at);
          } else if (C == Me) {
            to_channels_last(xn + r0 * W, HW, pixels, Me, at);
          } else {
            to_padded_rows(xn + r0 * W, HW, pixels, C, Me, at);
          }
          r0 = r1;
        }
        e_hi = std::max(e_hi, need_hi);
        // Without a project stage, channels-last rows of whole vectors are
        // the band's result itself: the stencil writes them in place.
        float* db = direct ? yn + oy0 * OW * Me : d;
        if (read_x)
          run_stencil(xn, H, C, C, pw.wdt.data(), bd, db, oy0, rows, g, Me, 0, Me, s.dw_act);
        else
          run_stencil(e, cap, Ms, Ms, pw.wdt.data(), bd, db, oy0, rows, g, Me, 0, Me, s.dw_act);
        if (s.means) add_channel_sums(db, rows * OW, Me, 0, Me, sums.data() + t * Me);
        if (mean_rows) {
          project_rows(d, rows * OW, pw, Me, M, b2, s.project_act, ym, s.residual ? xn + oy0 * OW * M : nullptr);
          add_row_sums(ym, rows * OW, M, y_sums.data() + t * M);
        } else if (!direct) {
          project_pixels(d, oy0 * OW, rows * OW, xn, b2, s, pw, yt, yn);
        }
      }
    }
  });
  for (int64_t n = 0; mean_rows && n < s.N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      float sum = 0.f;
      for (int64_t ch = 0; ch < chunks; ++ch) sum += y_sums[size_t((n * chunks + ch) * M + m)];
      s.y_means[n * M + m] = sum / float(OHW);
    }
  if (!s.means) return;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.Me; ++m) {
      float sum = 0.f;
      for (int64_t ch = 0; ch < chunks; ++ch) sum += sums[size_t((n * chunks + ch) * Me + m)];
      s.means[n * s.Me + m] = sum / float(OHW);
    }
}

void project_gated(const sdk::Context& ctx, const float* x, float* d, int64_t d_image, const float* means,
                   const float* b2, float* y, const InvertedResidual& s, const InvertedResidualWeights& pw,
                   int64_t parts);

// Channel slices, for the small planes of blocks with an expand stage: each
// task expands and filters a slice of the expanded channels over a whole
// image into buffers the tasks share; then each task projects a range of the
// image's pixels through all of them. No expanded row is computed twice and
// the slices are even, at the price of a second round of tasks.
void run_channel_slices(const sdk::Context& ctx, const float* x, const float* b1, const float* bd, const float* b2,
                        float* y, const InvertedResidual& s, const InvertedResidualWeights& pw, StencilFn run_stencil,
                        int64_t slices) {
  const Geometry& g = s.dw;
  const int64_t HW = g.in[1] * g.in[2], OHW = g.out[1] * g.out[2], Me = band_channels(s.Me), C = s.C, M = s.M;
  // Per image, its expanded planes then its filtered ones, channels-last;
  // Me is whole vectors, so each starts on a line.
  const int64_t image_floats = (HW + OHW) * Me;
  float* shared = fast::line_start(
      static_cast<float*>(ctx.workspace((size_t(s.N * image_floats) + fast::kLineSlack) * sizeof(float))));
  const int64_t units = Me / kL;
  std::vector<float> se_means(s.se ? size_t(s.N * s.Me) : 0);
  ctx.parallel_for(s.N * slices, 1, [&](int64_t t0, int64_t t1) {
    ops::dnnl_single_thread();
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / slices, j = t % slices;
      const int64_t c0 = units * j / slices * kL, c1 = units * (j + 1) / slices * kL;
      float* e = shared + n * image_floats;
      float* d = e + HW * Me;
      const float* xn = x + n * C * HW;
      expand(xn, s.x_channels_last ? 1 : HW, s.x_channels_last ? C : 1, HW, C, pw, c0, c1, Me, b1, s.expand_act,
             e + c0);
      run_stencil(e, g.in[1], Me, Me, pw.wdt.data(), bd, d, 0, g.out[1], g, Me, c0, c1, s.dw_act);
      // The means of the slice's channels (those below s.Me), for the output or the SE's gates.
      if (float* means = s.se ? se_means.data() : s.means) {
        alignas(64) float sums[kL];
        for (int64_t c = c0; c < c1; c += kL) {
          std::fill(sums, sums + kL, 0.f);
          add_channel_sums(d + c, OHW, Me, 0, kL, sums);
          for (int64_t i = 0; i < kL && c + i < s.Me; ++i) means[n * s.Me + c + i] = sums[i] / float(OHW);
        }
      }
      if (s.project) continue;
      // Without a project stage the slice is the result (Me whole vectors here).
      float* yn = y + n * Me * OHW;
      if (!s.y_channels_last) {
        slice_to_nchw(d, Me, OHW, c0, c1, yn, OHW);
        continue;
      }
      for (int64_t p = 0; p < OHW; ++p) std::copy(d + p * Me + c0, d + p * Me + c1, yn + p * Me + c0);
    }
  });
  if (!s.project) return;
  if (s.se)
    return project_gated(ctx, x, shared + HW * Me, image_floats, se_means.data(), b2, y, s, pw, slices);
  // The project stage by output channels where its weights outweigh the
  // filtered image (MobileNetV2's 7x7 blocks: 614 KiB of weights against 188
  // KiB), so that each task reads a share of them; else by pixels.
  const bool by_channels = pw.w2p.M == M && M % kL == 0 && M / kL >= slices && M > OHW;
  ctx.parallel_for(s.N * slices, 1, [&](int64_t t0, int64_t t1) {
    ops::dnnl_single_thread();
    thread_local std::vector<float> y_buf;
    const int64_t yt_floats = s.y_channels_last ? 0
                              : by_channels     ? OHW * ((M / kL + slices - 1) / slices * kL)
                                                : (OHW + slices - 1) / slices * M;
    float* yt = fast::line_aligned(y_buf, size_t(yt_floats));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / slices, j = t % slices;
      const float* d = shared + n * image_floats + HW * Me;
      const float* xn = x + n * C * HW;
      float* yn = y + n * M * OHW;
      const float* add = s.residual ? xn : nullptr;
      if (by_channels) {
        const int64_t m0 = M / kL * j / slices * kL, m1 = M / kL * (j + 1) / slices * kL;
        if (s.y_channels_last) {
          channels_last_product(d, 1, Me, OHW, pw.w2p, m0, m1, b2, s.project_act, yn + m0, M, add ? add + m0 : nullptr);
          continue;
        }
        channels_last_product(d, 1, Me, OHW, pw.w2p, m0, m1, nullptr, FusedActivation(), yt, m1 - m0);
        store_nchw(yt, OHW, m1 - m0, b2 ? b2 + m0 : nullptr, s.project_act, yn + m0 * OHW, OHW,
                   s.residual ? xn + m0 * OHW : nullptr);
        continue;
      }
      const int64_t p0 = OHW * j / slices, p1 = OHW * (j + 1) / slices;
      project_pixels(d + p0 * Me, p0, p1 - p0, xn, b2, s, pw, yt, yn);
    }
  });
}

// w2 with input channel k times gate[k] (Mp gates): the project weights
// of one image of a block with a squeeze-and-excitation, in the layout the
// project stage reads (packed panels, or sgemm's [Mp][M]).
void gated_project_weights(const InvertedResidualWeights& pw, const float* gate, int64_t Mp,
                           InvertedResidualWeights& out) {
  auto scale_rows = [&](const std::vector<float>& from, int64_t ld, int64_t K, std::vector<float>& to) {
    // from: rows of ld floats, row r of input channel r % K
    to.resize(from.size());
    const int64_t rows = int64_t(from.size()) / ld;
    for (int64_t r = 0; r < rows; ++r) {
      const float gk = gate[r % K];
      for (int64_t j = 0; j < ld; ++j) to[size_t(r * ld + j)] = from[size_t(r * ld + j)] * gk;
    }
  };
  // `out` may hold another node's copies: the layout not written is cleared.
  if (!pw.w2p.packed.empty()) {
    out.w2t.clear();
    out.w2p.M = pw.w2p.M;
    out.w2p.C = pw.w2p.C;
    scale_rows(pw.w2p.packed, kChannelsLastPanel, pw.w2p.C, out.w2p.packed);  // panels [K][16]
  } else {
    out.w2p = PointwiseWeights();
    scale_rows(pw.w2t, int64_t(pw.w2t.size()) / Mp, Mp, out.w2t);  // [Mp][M]
  }
}

// The project stage of a block with a squeeze-and-excitation, once the
// depthwise result of every image is whole: image n's rows at d + n *
// d_image ([OHW][Mp]), its channel means at means + n * s.Me. The gates of
// each image scale the project weights, or (where that is fewer multiplies:
// more outputs than pixels, as on 7x7 planes) each task's rows of the
// result; then `parts` tasks per image project ranges of pixels.
void project_gated(const sdk::Context& ctx, const float* x, float* d, int64_t d_image, const float* means,
                   const float* b2, float* y, const InvertedResidual& s, const InvertedResidualWeights& pw,
                   int64_t parts) {
  const int64_t Mp = band_channels(s.Me), M = s.M, OHW = s.dw.out_size(), C = s.C;
  const int64_t x_plane = s.stem_conv ? s.stem.in_size() : s.dw.in_size();
  std::vector<float> gates(size_t(s.N * Mp), 0.f);  // the padded channels' weights are zero
  for (int64_t n = 0; n < s.N; ++n) squeeze_excite_gates(*s.se, means + n * s.Me, s.Me, gates.data() + n * Mp);
  parts = std::clamp<int64_t>(parts, 1, OHW);
  // By output channels where the weights outweigh the result (the 7x7
  // planes), as run_channel_slices does: each task gates and reads only its
  // share of the weights.
  if (parts > 1 && pw.w2p.M == M && M % kL == 0 && M / kL >= parts && M > OHW) {
    ctx.parallel_for(s.N * parts, 1, [&](int64_t t0, int64_t t1) {
      ops::dnnl_single_thread();
      thread_local std::vector<float> y_buf;
      thread_local PointwiseWeights gw;
      float* yt = fast::line_aligned(y_buf, size_t(s.y_channels_last ? 0 : OHW * ((M / kL + parts - 1) / parts * kL)));
      gw.M = M;
      const int64_t K = pw.w2p.C;  // the panels' rows: the unpadded input channels
      gw.C = K;
      gw.packed.resize(pw.w2p.packed.size());
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / parts, j = t % parts;
        const int64_t m0 = M / kL * j / parts * kL, m1 = M / kL * (j + 1) / parts * kL;
        const float* gn = gates.data() + n * Mp;
        for (int64_t r = m0 / kL * K; r < m1 / kL * K; ++r)  // panel rows [panel][k][16]
          _mm512_storeu_ps(gw.packed.data() + r * kL,
                           _mm512_mul_ps(_mm512_loadu_ps(pw.w2p.packed.data() + r * kL), _mm512_set1_ps(gn[r % K])));
        const float* dn = d + n * d_image;
        const float* xn = x + n * C * x_plane;
        float* yn = y + n * M * OHW;
        if (s.y_channels_last) {
          channels_last_product(dn, 1, Mp, OHW, gw, m0, m1, b2, s.project_act, yn + m0, M,
                                s.residual ? xn + m0 : nullptr);
          continue;
        }
        channels_last_product(dn, 1, Mp, OHW, gw, m0, m1, nullptr, FusedActivation(), yt, m1 - m0);
        store_nchw(yt, OHW, m1 - m0, b2 ? b2 + m0 : nullptr, s.project_act, yn + m0 * OHW, OHW,
                   s.residual ? xn + m0 * OHW : nullptr);
      }
    });
    return;
  }
  const bool gate_weights = M <= OHW;
  // The gated copies persist on the calling thread: a fresh vector of a few
  // hundred KiB per run would be an mmap and page faults each time.
  // (The tasks on other threads reach this thread's copies through gw.)
  thread_local std::vector<InvertedResidualWeights> gated;
  if (gate_weights && gated.size() < size_t(s.N)) gated.resize(size_t(s.N));
  const InvertedResidualWeights* gw = gated.data();
  for (int64_t n = 0; gate_weights && n < s.N; ++n) gated_project_weights(pw, gates.data() + n * Mp, Mp, gated[size_t(n)]);
  ctx.parallel_for(s.N * parts, 1, [&](int64_t t0, int64_t t1) {
    ops::dnnl_single_thread();
    thread_local std::vector<float> y_buf;
    float* yt = fast::line_aligned(y_buf, size_t(s.y_channels_last ? 0 : (OHW + parts - 1) / parts * M));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / parts, j = t % parts;
      const int64_t p0 = OHW * j / parts, p1 = OHW * (j + 1) / parts;
      float* dn = d + n * d_image + p0 * Mp;
      if (!gate_weights) {
        const float* gn = gates.data() + n * Mp;
        for (int64_t p = 0; p < p1 - p0; ++p)
          for (int64_t c = 0; c < Mp; c += kL)
            _mm512_storeu_ps(dn + p * Mp + c, _mm512_mul_ps(_mm512_loadu_ps(dn + p * Mp + c), _mm512_loadu_ps(gn + c)));
      }
      project_pixels(dn, p0, p1 - p0, x + n * C * x_plane, b2, s, gate_weights ? gw[n] : pw, yt,
                     y + n * M * OHW);
    }
  });
}

// A block with a squeeze-and-excitation on row chunks: the expand and
// depthwise stages write each image's whole result channels-last (with its
// means), then project_gated.
void run_se_row_chunks(const sdk::Context& ctx, const float* x, const float* b1, const float* bd, const float* b2,
                       float* y, const InvertedResidual& s, const InvertedResidualWeights& pw, StencilFn run_stencil,
                       int64_t chunks) {
  const int64_t Mp = band_channels(s.Me), d_image = s.dw.out_size() * Mp;
  float* d = fast::line_start(
      static_cast<float*>(ctx.workspace((size_t(s.N * d_image) + fast::kLineSlack) * sizeof(float))));
  std::vector<float> means(size_t(s.N * s.Me));
  InvertedResidual first = s;  // the expand and depthwise stages into d
  first.project = false;
  first.se = nullptr;
  first.residual = false;
  first.y_channels_last = true;
  first.M = Mp;
  first.means = means.data();
  first.project_act = FusedActivation();
  run_row_chunks(ctx, x, b1, bd, nullptr, d, first, pw, run_stencil, chunks);
  project_gated(ctx, x, d, d_image, means.data(), b2, y, s, pw, std::max(1, ctx.num_threads()));
}

void run_bands(const sdk::Context& ctx, const float* x, const float* b1, const float* bd, const float* b2, float* y,
               const InvertedResidual& s, const InvertedResidualWeights& pw) {
  const StencilFn run_stencil = stencil_for(s.dw, s.dw_act);
  // Biases of the padded channels (band_channels): zero, read a vector at a time.
  const int64_t Mp = band_channels(s.Me);
  std::vector<float> b1p, bdp;
  auto padded = [&](const float* b, std::vector<float>& to, int64_t count) {
    if (!b || count == s.Me) return b;
    to.assign(size_t(count), 0.f);
    std::copy(b, b + s.Me, to.begin());
    return static_cast<const float*>(to.data());
  };
  b1 = padded(b1, b1p, s.stem_conv ? stem_channels(s.Me) : Mp);
  bd = padded(bd, bdp, Mp);
  // Each image's rows in as many chunks as make work for every thread; a
  // chunk recomputes the K - S expanded rows it shares with the one before,
  // and on a small plane one chunk has a row more than the other (MobileNetV2's
  // 7x7 blocks: the larger of two chunks did 62-64% of the work, and the
  // blocks ran 1.56-1.62x faster at 2 threads than at 1). Past 8% above an
  // even share, an expanded block whose image fits in L2 splits its channels.
  const int64_t threads = std::max(1, ctx.num_threads());
  const int64_t chunks = std::clamp<int64_t>((threads + s.N - 1) / s.N, 1, s.dw.out[1]);
  if (s.y_means) return run_row_chunks(ctx, x, b1, bd, b2, y, s, pw, run_stencil, chunks);
  const int64_t image_bytes = (s.dw.in_size() + s.dw.out_size()) * Mp * int64_t(sizeof(float));
  if (chunks > 1 && s.expand && !s.stem_conv && Mp / kL >= chunks && image_bytes <= (int64_t(1) << 20) &&
      largest_chunk_share(s, chunks) * chunks > 1.08)
    return run_channel_slices(ctx, x, b1, bd, b2, y, s, pw, run_stencil, chunks);
  if (s.se) return run_se_row_chunks(ctx, x, b1, bd, b2, y, s, pw, run_stencil, chunks);
  run_row_chunks(ctx, x, b1, bd, b2, y, s, pw, run_stencil, chunks);
}

}  // namespace
SINGA_AVX512_END
#endif

namespace {

// Whether the band kernel's weight layouts apply: AVX-512 (expanded
// channels are padded to whole vectors, a stem's to groups of 32).
bool band_layouts(const InvertedResidual&) {
#ifdef SINGA_AVX512_BEGIN
  return fast::avx512();
#else
  return false;
#endif
}

}  // namespace

bool inverted_residual_bands(const InvertedResidual& s) {
  // A stem reads an NCHW image; a residual X is added in Y's layout.
  if ((s.stem_conv && s.x_channels_last) || (s.residual && s.x_channels_last != s.y_channels_last)) return false;
  // Without a project stage the filtered rows go straight to Y: whole vectors only.
  if (!s.project && s.Me % 16 != 0) return false;
  return band_layouts(s) &&
         (!s.stem_conv || conv_thin_fits(s.stem, s.C, stem_channels(s.Me), 1, s.expand_act, nullptr));
}

bool InvertedResidualWeights::fit(const InvertedResidual& s) const {
  auto packed = [](const PointwiseWeights& w, int64_t M, int64_t C) { return w.M == M && w.C == C; };
  const bool stem = w1thin.M == stem_channels(s.Me) && w1thin.C == s.C && w1thin.KH == s.stem.k[1] && w1thin.KW == s.stem.k[2];
  const int64_t Mp = band_channels(s.Me);
  const bool w1 = s.stem_conv ? stem : !s.expand || packed(w1p, s.Me, s.C) || w1t.size() == size_t(s.C * Mp);
  const bool w2 = !s.project || packed(w2p, s.M, s.Me) || w2t.size() == size_t(Mp * s.M);
  return w1 && w2 && wdt.size() == size_t(s.dw.k[1] * s.dw.k[2] * Mp);
}

InvertedResidualWeights inverted_residual_weights(const float* w1, const float* wd, const float* w2,
                                                  const InvertedResidual& s) {
  InvertedResidualWeights p;
  if (!band_layouts(s)) return p;
  // One layout per product: the tiles' packed panels where they run (M may
  // not fit), else sgemm's transposed weights; the expanded channels padded
  // to whole vectors (band_channels), their weights zero.
  const int64_t Me = s.Me, Mp = band_channels(Me), taps = s.dw.k[1] * s.dw.k[2];
  if (s.stem_conv) {
    const int64_t stem_taps = s.C * s.stem.k[1] * s.stem.k[2], Ms = stem_channels(Me);
    p.w1thin = conv_thin_weights(zero_padded(w1, Me, stem_taps, Ms, stem_taps).data(), Ms, s.C, s.stem.k[1],
                                 s.stem.k[2]);
  }
  else if (s.expand && s.band_tiles)
    p.w1p = channels_last_weights(w1, Me, s.C);  // its panels are whole vectors, zero-padded
  else if (s.expand)
    p.w1t = transposed(zero_padded(w1, Me, s.C, Mp, s.C).data(), Mp, s.C);
  p.wdt = transposed(zero_padded(wd, Me, taps, Mp, taps).data(), Mp, taps);
  if (!s.project) return p;
  // The tiles read the Me true input channels of each Mp-wide row (the
  // padded ones' 2% of a kws-style net's 172 -> 176 is not multiplied);
  // sgemm takes the padded rows whole, with zero weights for the padding.
  if (s.band_tiles)
    p.w2p = channels_last_weights(w2, s.M, Me);
  else
    p.w2t = transposed(zero_padded(w2, s.M, Me, s.M, Mp).data(), s.M, Mp);
  return p;
}

// Y's means (s.y_means), Y stored or not: summed band by band in the row
// chunks where Y is not wanted, there is no squeeze-and-excitation and a
// skip connection's X is channels-last; otherwise the block runs whole into
// Y (or a buffer in its place) and Y is summed after.
static void block_means(const sdk::Context& ctx, const float* x, const float* w1, const float* b1, const float* wd,
                        const float* bd, const float* w2, const float* b2, float* y, const InvertedResidual& s,
                        const InvertedResidualWeights* prepared) {
  InvertedResidual t = s;
  if (!y) t.y_channels_last = !s.residual || s.x_channels_last;  // a skip connection adds X in Y's layout
#ifdef SINGA_AVX512_BEGIN
  if (!y && !s.se && t.y_channels_last && inverted_residual_bands(t)) {
    if (prepared) return run_bands(ctx, x, b1, bd, b2, nullptr, t, *prepared);
    return run_bands(ctx, x, b1, bd, b2, nullptr, t, inverted_residual_weights(w1, wd, w2, t));
  }
#endif
  t.y_means = nullptr;
  const int64_t P = s.dw.out_size();
  std::vector<float> buf;
  if (!y) {
    buf.resize(size_t(s.N * s.M * P));
    y = buf.data();
  }
  inverted_residual_f32(ctx, x, w1, b1, wd, bd, w2, b2, y, t, prepared);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m) {
      const float* yn = y + n * s.M * P;
      const int64_t at = t.y_channels_last ? m : m * P, step = t.y_channels_last ? s.M : 1;
      double sum = 0;
      for (int64_t p = 0; p < P; ++p) sum += yn[at + p * step];
      s.y_means[n * s.M + m] = float(sum / double(P));
    }
}

void inverted_residual_f32(const sdk::Context& ctx, const float* x, const float* w1, const float* b1, const float* wd,
                           const float* bd, const float* w2, const float* b2, float* y, const InvertedResidual& s,
                           const InvertedResidualWeights* prepared) {
  if (s.y_means && s.project) return block_means(ctx, x, w1, b1, wd, bd, w2, b2, y, s, prepared);
#ifdef SINGA_AVX512_BEGIN
  if (inverted_residual_bands(s)) {
    if (prepared) return run_bands(ctx, x, b1, bd, b2, y, s, *prepared);
    return run_bands(ctx, x, b1, bd, b2, y, s, inverted_residual_weights(w1, wd, w2, s));
  }
#endif
  run_staged(ctx, x, w1, b1, wd, bd, w2, b2, y, s);
}

}  // namespace nn
}  // namespace singa
