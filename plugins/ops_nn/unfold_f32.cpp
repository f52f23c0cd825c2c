#include "unfold_f32.hpp"

#include <avx512_region.hpp>
#include <transpose16_f32.hpp>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

namespace singa {
namespace nn {
namespace {

// Taps t in [0, n) at i0 + t * step that fall inside [0, size): [lo, hi).
void inside(int64_t i0, int64_t step, int64_t n, int64_t size, int64_t& lo, int64_t& hi) {
  lo = i0 >= 0 ? 0 : (-i0 + step - 1) / step;
  hi = i0 + (n - 1) * step < size ? n : (size - 1 - i0 >= 0 ? (size - 1 - i0) / step + 1 : 0);
  if (lo > n) lo = n;
  if (hi < lo) hi = lo;
}

}  // namespace

SINGA_AVX512_BEGIN

namespace {

__mmask16 first(int64_t n) { return __mmask16((1u << n) - 1); }

constexpr int64_t kMaxFoldWidth = 64;  // kernel widths the 2-D paths take

void copy(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(src + i));
  if (i < n) _mm512_mask_storeu_ps(dst + i, first(n - i), _mm512_maskz_loadu_ps(first(n - i), src + i));
}

void zero(float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_setzero_ps());
  if (i < n) _mm512_mask_storeu_ps(dst + i, first(n - i), _mm512_setzero_ps());
}

void add(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 m = first(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + i), _mm512_maskz_loadu_ps(m, src + i)));
  }
}

// Calls run(j, od, oh, ow, len) for the runs of output positions
// [p0, p0 + cols) along the output width; j counts from p0.
template <class F>
void for_each_out_run(const Geometry& g, int64_t p0, int64_t cols, F&& run) {
  const int64_t OH = g.out[1], OW = g.out[2];
  int64_t ow = p0 % OW, oh = (p0 / OW) % OH, od = p0 / (OW * OH);
  for (int64_t j = 0; j < cols;) {
    const int64_t len = cols - j < OW - ow ? cols - j : OW - ow;
    run(j, od, oh, ow, len);
    j += len;
    ow = 0;
    if (++oh == OH) {
      oh = 0;
      ++od;
    }
  }
}

// Calls tap(row, r) for each row r = (channel, kd, kh, kw) of the columns
// layout with the input row it reads and where its taps along the width
// start; row is null when (kd, kh) fall in the padding.
template <class F>
void for_each_col_row(const Geometry& g, int64_t channels, F&& body) {
  const int64_t ks = g.k_size(), KH = g.k[1], KW = g.k[2];
  for (int64_t r = 0; r < channels * ks; ++r) {
    const int64_t c = r / ks, rem = r % ks;
    body(r, c, rem / (KH * KW), (rem / KW) % KH, rem % KW);
  }
}

// Calls run(out_offset, in_row_or_null) for every output row (od, oh) of
// positions [p0, p0 + cols), which must be whole rows: in_row is the input
// row (id, ih) the row's taps (kd, kh) read, null in the padding.
template <class F>
void for_each_out_row(const Geometry& g, int64_t p0, int64_t cols, int64_t kd, int64_t kh, F&& run) {
  const int64_t OH = g.out[1], OW = g.out[2], D = g.in[0], H = g.in[1];
  int64_t q = p0 / OW, od = q / OH, oh = q % OH;
  for (int64_t j = 0; j < cols; j += OW) {
    const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
    run(j, id < 0 || id >= D || ih < 0 || ih >= H ? int64_t(-1) : (id * H + ih) * g.in[2]);
    if (++oh == OH) oh = 0, ++od;
  }
}

void im2col_any(const float* x, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* col) {
  const int64_t W = g.in[2], OW = g.out[2], sw = g.s[2];
  const bool rows = p0 % OW == 0 && cols % OW == 0;
  for_each_col_row(g, channels, [&](int64_t r, int64_t c, int64_t kd, int64_t kh, int64_t kw) {
    const float* xc = x + c * g.in_size();
    float* dst = col + r * cols;
    if (rows) {
      // Whole output rows: the taps inside the width are the same for each.
      const int64_t iw0 = -g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, sw, OW, W, lo, hi);
      for_each_out_row(g, p0, cols, kd, kh, [&](int64_t j, int64_t at) {
        float* out = dst + j;
        if (at < 0) {
          zero(out, OW);
          return;
        }
        if (lo > 0) zero(out, lo);
        const float* row = xc + at + iw0 + lo * sw;  // the first tap inside
        if (sw == 1)
          copy(out + lo, row, hi - lo);
        else
          for (int64_t t = lo; t < hi; ++t) out[t] = row[(t - lo) * sw];
        if (hi < OW) zero(out + hi, OW - hi);
      });
      return;
    }
    for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow, int64_t len) {
      const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      float* out = dst + j;
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
        zero(out, len);
        return;
      }
      const int64_t iw0 = ow * sw - g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, sw, len, W, lo, hi);
      zero(out, lo);
      if (hi > lo) {
        const float* row = xc + (id * g.in[1] + ih) * W + iw0 + lo * sw;
        if (sw == 1)
          copy(out + lo, row, hi - lo);
        else
          for (int64_t t = lo; t < hi; ++t) out[t] = row[(t - lo) * sw];
      }
      zero(out + hi, len - hi);
    });
  });
}

void col2im_any(const float* col, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* dx) {
  const int64_t W = g.in[2], OW = g.out[2], sw = g.s[2];
  const bool rows = p0 % OW == 0 && cols % OW == 0;
  for_each_col_row(g, channels, [&](int64_t r, int64_t c, int64_t kd, int64_t kh, int64_t kw) {
    float* xc = dx + c * g.in_size();
    const float* src = col + r * cols;
    if (rows) {
      const int64_t iw0 = -g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, sw, OW, W, lo, hi);
      if (hi <= lo) return;
      for_each_out_row(g, p0, cols, kd, kh, [&](int64_t j, int64_t at) {
        if (at < 0) return;
        float* row = xc + at + iw0 + lo * sw;
        const float* in = src + j + lo;
        if (sw == 1)
          add(row, in, hi - lo);
        else
          for (int64_t t = 0; t < hi - lo; ++t) row[t * sw] += in[t];
      });
      return;
    }
    for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow, int64_t len) {
      const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) return;
      const int64_t iw0 = ow * sw - g.pb[2] + kw * g.d[2];
      int64_t lo, hi;
      inside(iw0, sw, len, W, lo, hi);
      if (hi <= lo) return;
      float* row = xc + (id * g.in[1] + ih) * W + iw0 + lo * sw;
      const float* in = src + j + lo;
      if (sw == 1)
        add(row, in, hi - lo);
      else
        for (int64_t t = 0; t < hi - lo; ++t) row[t * sw] += in[t];
    });
  });
}

// Lanes [a, b) of a 16-lane mask (clamped to the vector).
__mmask16 lanes(int64_t a, int64_t b) {
  a = a < 0 ? 0 : a > 16 ? 16 : a;
  b = b < a ? a : b > 16 ? 16 : b;
  return __mmask16(((1u << b) - 1) & ~((1u << a) - 1));
}

// The 2-D case with whole output rows and unit width stride, the common one:
// lane t of an output row reads input column iw0 + t, so a row is masked
// vector loads (zeros where the taps fall in the padding) and stores, and
// rows of 8 or fewer are packed several to a vector.
void im2col_2d(const float* x, const Geometry& g, int64_t channels, int64_t q0, int64_t nq, float* col) {
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], KH = g.k[1], KW = g.k[2], s1 = g.s[1];
  const int64_t cols = nq * OW, q1 = q0 + nq, pack = OW <= 8 ? 16 / OW : 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * H * W;
    for (int64_t kh = 0; kh < KH; ++kh) {
      // Output rows whose input row oh * s1 + off lies inside: [a, b).
      const int64_t off = kh * g.d[1] - g.pb[1];
      int64_t a = off >= 0 ? 0 : (-off + s1 - 1) / s1, b = H - 1 - off >= 0 ? (H - 1 - off) / s1 + 1 : 0;
      a = a < q0 ? q0 : a > q1 ? q1 : a;
      b = b < a ? a : b > q1 ? q1 : b;
      for (int64_t kw = 0; kw < KW; ++kw) {
        float* dst = col + ((c * KH + kh) * KW + kw) * cols;
        zero(dst, (a - q0) * OW);
        zero(dst + (b - q0) * OW, (q1 - b) * OW);
        const int64_t iw0 = kw * g.d[2] - g.pb[2];
        const int64_t lo = iw0 >= 0 ? 0 : -iw0, hi = W - iw0 < OW ? W - iw0 : OW;  // taps inside the width
        const float* src = xc + (a * s1 + off) * W + iw0;  // output lane t reads src[t]
        float* out = dst + (a - q0) * OW;
        if (pack > 1) {
          __mmask16 m[16];  // lanes of the k-th packed row
          for (int64_t k = 0; k < pack; ++k) m[k] = lanes(k * OW + lo, k * OW + hi);
          const __mmask16 all = lanes(0, pack * OW);
          int64_t oh = a;
          for (; oh + pack <= b; oh += pack, src += pack * s1 * W, out += pack * OW) {
            __m512 v = _mm512_maskz_loadu_ps(m[0], src);
            for (int64_t k = 1; k < pack; ++k) v = _mm512_mask_loadu_ps(v, m[k], src + k * (s1 * W - OW));
            _mm512_mask_storeu_ps(out, all, v);
          }
          if (oh < b) {
            __m512 v = _mm512_setzero_ps();
            for (int64_t k = 0; k < b - oh; ++k) v = _mm512_mask_loadu_ps(v, m[k], src + k * (s1 * W - OW));
            _mm512_mask_storeu_ps(out, lanes(0, (b - oh) * OW), v);
          }
        } else if (OW <= 16) {
          const __mmask16 in = lanes(lo, hi), all = lanes(0, OW);
          for (int64_t oh = a; oh < b; ++oh, src += s1 * W, out += OW)
            _mm512_mask_storeu_ps(out, all, _mm512_maskz_loadu_ps(in, src));
        } else {
          // Wide rows (two vectors or more): the masks of the first and
          // last vector are worked out once.
          const int64_t last = (OW - 1) / 16 * 16;
          const __mmask16 in0 = lanes(lo, hi), inl = lanes(lo - last, hi - last), outl = lanes(0, OW - last);
          for (int64_t oh = a; oh < b; ++oh, src += s1 * W, out += OW) {
            _mm512_storeu_ps(out, _mm512_maskz_loadu_ps(in0, src));
            for (int64_t j = 16; j < last; j += 16)
              _mm512_storeu_ps(out + j, _mm512_maskz_loadu_ps(lanes(lo - j, hi - j), src + j));
            _mm512_mask_storeu_ps(out + last, outl, _mm512_maskz_loadu_ps(inl, src + last));
          }
        }
      }
    }
  }
}

// im2col_2d for unpadded windows with unit width stride and dilation whose
// output rows are 8 floats or fewer (a small CNN's deeper convs): every tap
// row reads whole input rows, so the masks are the same for all of them and
// are worked out once per call. Per tap row the general loop spent more on
// working out ranges and masks than on its four or so vectors.
template <int PACK>  // 0: any, read from OW
void im2col_2d_narrow(const float* x, const Geometry& g, int64_t channels, int64_t q0, int64_t nq, float* col) {
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], KH = g.k[1], KW = g.k[2], s1 = g.s[1], d1 = g.d[1];
  const int64_t cols = nq * OW, pack = PACK ? PACK : 16 / OW, full = nq / pack, rest = nq - full * pack;
  const int64_t hop = s1 * W - OW;  // from one packed output row's source to the next, past the lanes before it
  __mmask16 m[16];
  for (int64_t k = 0; k < pack; ++k) m[k] = lanes(k * OW, k * OW + OW);
  const __mmask16 all = lanes(0, pack * OW), tail = lanes(0, rest * OW);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < KH; ++kh) {
      const float* row0 = x + c * H * W + (q0 * s1 + kh * d1) * W;
      float* dst = col + (c * KH + kh) * KW * cols;
      for (int64_t kw = 0; kw < KW; ++kw, dst += cols) {
        const float* src = row0 + kw;
        float* out = dst;
        for (int64_t i = 0; i < full; ++i, src += pack * s1 * W, out += pack * OW) {
          if (PACK == 2 && OW == 8) {  // two whole rows: plain loads, no merging
            // Masked loads, zeroing or merging, cost several times a plain
            // one on this machine (AMD family 1Ah). (The mask form of the
            // insert: GCC 12 reports the plain one's undefined source.)
            const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(src)));
            const __m256d hi = _mm256_castps_pd(_mm256_loadu_ps(src + s1 * W));
            _mm512_storeu_ps(out, _mm512_castpd_ps(_mm512_mask_insertf64x4(lo, 0xFF, lo, hi, 1)));
            continue;
          }
          __m512 v = _mm512_maskz_loadu_ps(m[0], src);
          for (int64_t k = 1; k < pack; ++k) v = _mm512_mask_loadu_ps(v, m[k], src + k * hop);
          _mm512_mask_storeu_ps(out, all, v);
        }
        if (rest) {
          __m512 v = _mm512_setzero_ps();
          for (int64_t k = 0; k < rest; ++k) v = _mm512_mask_loadu_ps(v, m[k], src + k * hop);
          _mm512_mask_storeu_ps(out, tail, v);
        }
      }
    }
}

void col2im_2d(const float* col, const Geometry& g, int64_t channels, int64_t q0, int64_t nq, float* dx) {
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], KH = g.k[1], KW = g.k[2], s1 = g.s[1];
  const int64_t cols = nq * OW, q1 = q0 + nq;
  for (int64_t j = 0; j < W; j += 16) {
    // Per kw: the lanes of this piece of an input row that its taps reach,
    // and where in a tap row lane 0 reads (lane u is ow = j + u - iw0).
    __mmask16 m[kMaxFoldWidth];
    int64_t at[kMaxFoldWidth];
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw0 = kw * g.d[2] - g.pb[2];
      m[kw] = lanes((iw0 >= 0 ? iw0 : 0) - j, (iw0 + OW < W ? iw0 + OW : W) - j);
      at[kw] = kw * cols + j - iw0;
    }
    const __mmask16 store = lanes(0, W - j);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t ih = 0; ih < H; ++ih) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t t = ih - (kh * g.d[1] - g.pb[1]);
          if (t < 0 || (s1 > 1 && t % s1)) continue;
          const int64_t oh = s1 > 1 ? t / s1 : t;
          if (oh < q0 || oh >= q1) continue;
          const float* src = col + (c * KH + kh) * KW * cols + (oh - q0) * OW;
          for (int64_t kw = 0; kw < KW; ++kw)
            if (m[kw]) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m[kw], src + at[kw]));
        }
        float* row = dx + (c * H + ih) * W + j;
        _mm512_mask_storeu_ps(row, store, _mm512_add_ps(_mm512_maskz_loadu_ps(store, row), acc));
      }
  }
}

// col2im_2d for unpadded windows with unit width stride and dilation whose
// output rows are 8 floats (the seed CNN's second conv): per input row, the
// taps of each kw are summed over kh in 8-float registers with plain loads,
// then shifted into place (kw lanes) and added, where col2im_2d made one
// masked load per (kh, kw), and masked loads are slow here.
template <int KW>
void col2im_2d_rows8(const float* col, const Geometry& g, int64_t channels, int64_t q0, int64_t nq, float* dx) {
  const int64_t H = g.in[1], W = g.in[2], KH = g.k[1], s1 = g.s[1], d1 = g.d[1];
  const int64_t cols = nq * 8, q1 = q0 + nq;
  __m512i shift[KW];
  __mmask16 place[KW];
  for (int kw = 0; kw < KW; ++kw) {
    shift[kw] = _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                 _mm512_set1_epi32(kw));
    place[kw] = lanes(kw, kw + 8);
  }
  const __mmask16 store = lanes(0, W);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t ih = 0; ih < H; ++ih) {
      __m256 sum[KW];
#pragma GCC unroll 9
      for (int kw = 0; kw < KW; ++kw) sum[kw] = _mm256_setzero_ps();
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t t = ih - kh * d1;
        if (t < 0 || (s1 > 1 && t % s1)) continue;
        const int64_t oh = s1 > 1 ? t / s1 : t;
        if (oh < q0 || oh >= q1) continue;
        const float* src = col + (c * KH + kh) * KW * cols + (oh - q0) * 8;
#pragma GCC unroll 9
        for (int kw = 0; kw < KW; ++kw) sum[kw] = _mm256_add_ps(sum[kw], _mm256_loadu_ps(src + kw * cols));
      }
      __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 9
      for (int kw = 0; kw < KW; ++kw)
        acc = _mm512_add_ps(acc, _mm512_maskz_permutexvar_ps(place[kw], shift[kw], _mm512_castps256_ps512(sum[kw])));
      float* row = dx + (c * H + ih) * W;
      _mm512_mask_storeu_ps(row, store, _mm512_add_ps(_mm512_maskz_loadu_ps(store, row), acc));
    }
}

bool planar(const Geometry& g, int64_t p0, int64_t cols) {
  return g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 && g.s[2] == 1 && g.k[2] <= kMaxFoldWidth && p0 % g.out[2] == 0 &&
         cols % g.out[2] == 0;
}


}  // namespace

void im2col_f32(const float* x, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* col) {
  if (planar(g, p0, cols) && g.out[2] <= 8 && g.no_padding() && g.s[2] == 1 && g.d[2] == 1)
    (g.out[2] > 5 ? im2col_2d_narrow<2> : im2col_2d_narrow<0>)(x, g, channels, p0 / g.out[2], cols / g.out[2], col);
  else if (planar(g, p0, cols))
    im2col_2d(x, g, channels, p0 / g.out[2], cols / g.out[2], col);
  else
    im2col_any(x, g, channels, p0, cols, col);
}

void col2im_add_f32(const float* col, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* dx) {
  const bool rows8 = planar(g, p0, cols) && g.out[2] == 8 && g.no_padding() && g.d[2] == 1;
  if (rows8 && g.k[2] == 5)
    col2im_2d_rows8<5>(col, g, channels, p0 / 8, cols / 8, dx);
  else if (rows8 && g.k[2] == 3)
    col2im_2d_rows8<3>(col, g, channels, p0 / 8, cols / 8, dx);
  else if (planar(g, p0, cols))
    col2im_2d(col, g, channels, p0 / g.out[2], cols / g.out[2], dx);
  else
    col2im_any(col, g, channels, p0, cols, dx);
}

using fast::transpose16;

void to_channels_last_f32(const float* x, int64_t channels, int64_t size, float* out) {
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    const int64_t nc = channels - c0 < 16 ? channels - c0 : 16;
    for (int64_t s0 = 0; s0 < size; s0 += 16) {
      const int64_t ns = size - s0 < 16 ? size - s0 : 16;
      __m512 r[16];
      for (int64_t i = 0; i < 16; ++i)
        r[i] = i < nc ? _mm512_maskz_loadu_ps(lanes(0, ns), x + (c0 + i) * size + s0) : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t j = 0; j < ns; ++j) _mm512_mask_storeu_ps(out + (s0 + j) * channels + c0, lanes(0, nc), r[j]);
    }
  }
}

void im2row_f32(const float* xt, const Geometry& g, int64_t channels, int64_t p0, int64_t cols, float* rows) {
  const int64_t KD = g.k[0], KH = g.k[1], KW = g.k[2], D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t width = g.k_size() * channels, kw_run = KW * channels;
  for_each_out_run(g, p0, cols, [&](int64_t j, int64_t od, int64_t oh, int64_t ow0, int64_t len) {
    for (int64_t t = 0; t < len; ++t) {
      float* dst = rows + (j + t) * width;
      const int64_t iw0 = (ow0 + t) * g.s[2] - g.pb[2];
      int64_t lo, hi;  // kw taps inside the width
      inside(iw0, g.d[2], KW, W, lo, hi);
      for (int64_t kd = 0; kd < KD; ++kd)
        for (int64_t kh = 0; kh < KH; ++kh, dst += kw_run) {
          const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0], ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
          if (id < 0 || id >= D || ih < 0 || ih >= H) {
            zero(dst, kw_run);
            continue;
          }
          zero(dst, lo * channels);
          if (hi > lo) {
            const float* src = xt + ((id * H + ih) * W + iw0 + lo * g.d[2]) * channels;  // the first tap inside
            if (g.d[2] == 1) {
              copy(dst + lo * channels, src, (hi - lo) * channels);
            } else {
              for (int64_t kw = lo; kw < hi; ++kw) copy(dst + kw * channels, src + (kw - lo) * g.d[2] * channels, channels);
            }
          }
          zero(dst + hi * channels, (KW - hi) * channels);
        }
    }
  });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#else
#include <cstdlib>

namespace singa {
namespace nn {
void im2col_f32(const float*, const Geometry&, int64_t, int64_t, int64_t, float*) { std::abort(); }
void col2im_add_f32(const float*, const Geometry&, int64_t, int64_t, int64_t, float*) { std::abort(); }
void to_channels_last_f32(const float*, int64_t, int64_t, float*) { std::abort(); }
void im2row_f32(const float*, const Geometry&, int64_t, int64_t, int64_t, float*) { std::abort(); }
}  // namespace nn
}  // namespace singa
#endif
