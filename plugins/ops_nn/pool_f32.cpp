#include "pool_f32.hpp"

#include <avx512_region.hpp>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include <initializer_list>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

__mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1); }

// A candidate tap replaces the best so far only when strictly greater
// (ordered: a NaN candidate never replaces, a NaN best is never replaced).
inline void take(__m512 v, __m512i at_v, __m512& best, __m512i& at) {
  const __mmask16 m = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
  best = _mm512_mask_mov_ps(best, m, v);
  at = _mm512_mask_mov_epi32(at, m, at_v);
}

// v where v > best, else best (ordered: ties and NaNs give the second
// operand): the scalar loop's strictly-greater rule in one instruction.
inline __m512 maxv(__m512 v, __m512 best) { return _mm512_maskz_max_ps(0xFFFF, v, best); }

}  // namespace

void max_pool_2x2_f32(const float* x, int64_t W, int64_t OH, int64_t OW, int64_t base, float* y, int64_t* idx) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i tap_b = _mm512_set1_epi32(1), tap_c = _mm512_set1_epi32(int32_t(W)), tap_d = _mm512_set1_epi32(int32_t(W + 1));
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = x + 2 * oh * W;
    const float* r1 = r0 + W;
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t n = OW - ow < 16 ? OW - ow : 16;
      // Plain loads and stores for whole vectors: masked ones are slow on
      // AMD family 1Ah (Tiny-YOLOv2's 16x416x416 pool: 0.72 -> 0.2x ms).
      __m512 t0, t1, u0, u1;
      if (n == 16) {
        t0 = _mm512_loadu_ps(r0 + 2 * ow), t1 = _mm512_loadu_ps(r0 + 2 * ow + 16);
        u0 = _mm512_loadu_ps(r1 + 2 * ow), u1 = _mm512_loadu_ps(r1 + 2 * ow + 16);
      } else {
        const __mmask16 m_lo = lanes(2 * n), m_hi = lanes(2 * n - 16);
        t0 = _mm512_maskz_loadu_ps(m_lo, r0 + 2 * ow), t1 = _mm512_maskz_loadu_ps(m_hi, r0 + 2 * ow + 16);
        u0 = _mm512_maskz_loadu_ps(m_lo, r1 + 2 * ow), u1 = _mm512_maskz_loadu_ps(m_hi, r1 + 2 * ow + 16);
      }
      __m512 best = _mm512_permutex2var_ps(t0, even, t1);
      if (!idx) {  // the values only: the same strictly-greater rule as take()
        best = maxv(_mm512_permutex2var_ps(t0, odd, t1), best);
        best = maxv(_mm512_permutex2var_ps(u0, even, u1), best);
        best = maxv(_mm512_permutex2var_ps(u0, odd, u1), best);
        if (n == 16)
          _mm512_storeu_ps(y + oh * OW + ow, best);
        else
          _mm512_mask_storeu_ps(y + oh * OW + ow, lanes(n), best);
        continue;
      }
      __m512i at = zero;
      take(_mm512_permutex2var_ps(t0, odd, t1), tap_b, best, at);
      take(_mm512_permutex2var_ps(u0, even, u1), tap_c, best, at);
      take(_mm512_permutex2var_ps(u0, odd, u1), tap_d, best, at);
      const __mmask16 out = lanes(n);
      _mm512_mask_storeu_ps(y + oh * OW + ow, out, best);
      // Position of the window's first tap: 2 * oh * W + 2 * (ow + lane).
      const __m512i first = _mm512_add_epi32(_mm512_set1_epi32(int32_t(2 * oh * W + 2 * ow)), even);
      const __m512i pos = _mm512_add_epi32(first, at);
      const __m512i b = _mm512_set1_epi64(base);
      // (maskz forms: GCC 12's plain ones start from an "undefined" register
      // that -Wmaybe-uninitialized reports)
      const __m512i lo = _mm512_add_epi64(b, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, pos, 0)));
      const __m512i hi = _mm512_add_epi64(b, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, pos, 1)));
      _mm512_mask_storeu_epi64(idx + oh * OW + ow, __mmask8(out & 0xFF), lo);
      _mm512_mask_storeu_epi64(idx + oh * OW + ow + 8, __mmask8(out >> 8), hi);
    }
  }
}

namespace {


// The taps of 16 windows of 3 columns, stride 2, in one row: columns [0, 32)
// in lo and hi, column 32 in lane 15 of col32; t[i] is tap i of each window.
inline void taps_3s2(__m512 lo, __m512 hi, __m512 col32, __m512 (&t)[3]) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i even2 = _mm512_add_epi32(even, _mm512_set1_epi32(2));  // lane 15 (column 32) is taken apart
  t[0] = _mm512_permutex2var_ps(lo, even, hi), t[1] = _mm512_permutex2var_ps(lo, odd, hi);
  t[2] = _mm512_mask_blend_ps(0x8000, _mm512_permutex2var_ps(lo, even2, hi), col32);
}

// 16 windows of three rows, r[k] = {columns [0, 16), [16, 32), column 32 in
// lane 15} of row k. The rows are reduced column by column first, so the
// even/odd split costs three permutes instead of nine; that order changes
// only which of +0 and -0 survives a tie between them, except with NaNs: a
// NaN in the first row would hide the rows below it in its column, so
// blocks with one go tap by tap in row-major order, as the scalar loop.
inline __m512 rows_3s2(const __m512 (&r)[3][3]) {
  __m512 col[3], t[3];
  for (int i = 0; i < 3; ++i) col[i] = maxv(r[2][i], maxv(r[1][i], r[0][i]));
  const __mmask16 nan = _mm512_cmp_ps_mask(col[0], col[0], _CMP_UNORD_Q) |
                        _mm512_cmp_ps_mask(col[1], col[1], _CMP_UNORD_Q) |
                        _mm512_cmp_ps_mask(col[2], col[2], _CMP_UNORD_Q);
  if (__builtin_expect(nan == 0, 1)) {
    taps_3s2(col[0], col[1], col[2], t);
    return maxv(t[2], maxv(t[1], t[0]));
  }
  __m512 best = _mm512_setzero_ps();
  for (int k = 0; k < 3; ++k) {
    taps_3s2(r[k][0], r[k][1], r[k][2], t);
    for (int i = 0; i < 3; ++i) best = k == 0 && i == 0 ? t[0] : maxv(t[i], best);
  }
  return best;
}

}  // namespace

void max_pool_row_3s2_f32(const float* const* rows, int64_t n, float* y) {
  // Output lane i reads columns 2i, 2i + 1 and 2i + 2 of the three window
  // rows (rows_3s2). 16 windows from column 2 * ow with plain loads (masked
  // ones are slow on some CPUs, AMD family 1Ah among them): columns [0, 32)
  // in two vectors, the last window's third column broadcast.
  auto block = [&](int64_t ow) {
    __m512 r[3][3];
    for (int k = 0; k < 3; ++k) {
      const float* p = rows[k] + 2 * ow;
      r[k][0] = _mm512_loadu_ps(p), r[k][1] = _mm512_loadu_ps(p + 16), r[k][2] = _mm512_set1_ps(p[32]);
    }
    _mm512_storeu_ps(y + ow, rows_3s2(r));
  };
  if (n >= 16) {
    for (int64_t ow = 0; ow + 16 <= n; ow += 16) block(ow);
    // A partial last block is the last 16 windows again, overlapping the one
    // before (the same values rewritten), rather than masked loads.
    if (n % 16) block(n - 16);
    return;
  }
  // Fewer than 16 windows: columns [0, 2n] with masked loads, all within
  // the two vectors (2n <= 30).
  const __mmask16 m_lo = lanes(2 * n + 1), m_hi = lanes(2 * n + 1 - 16);
  __m512 r[3][3];
  for (int k = 0; k < 3; ++k)
    r[k][0] = _mm512_maskz_loadu_ps(m_lo, rows[k]), r[k][1] = _mm512_maskz_loadu_ps(m_hi, rows[k] + 16),
    r[k][2] = _mm512_setzero_ps();
  _mm512_mask_storeu_ps(y, lanes(n), rows_3s2(r));
}

void max_pool_row_3s1_f32(const float* const* rows, int64_t n, float* y) {
  // Tap by tap in row-major order (nine loads per 16 windows): exact for
  // NaNs without the column-first split rows_3s2 needs its check for.
  auto window = [&](int64_t ow, __mmask16 m) {
    __m512 best = _mm512_maskz_loadu_ps(m, rows[0] + ow);
    for (int k = 0; k < 3; ++k)
      for (int i = k == 0 ? 1 : 0; i < 3; ++i) best = maxv(_mm512_maskz_loadu_ps(m, rows[k] + ow + i), best);
    return best;
  };
  if (n >= 16) {
    // Plain loads and stores (the all-ones mask folds away); a partial last
    // block is the last 16 windows again, overlapping the one before.
    for (int64_t ow = 0; ow + 16 <= n; ow += 16) _mm512_storeu_ps(y + ow, window(ow, 0xFFFF));
    if (n % 16) _mm512_storeu_ps(y + n - 16, window(n - 16, 0xFFFF));
    return;
  }
  _mm512_mask_storeu_ps(y, lanes(n), window(0, lanes(n)));
}

bool max_pool_2x2_grad_f32(const float* dy, const int64_t* idx, int64_t base, int64_t H, int64_t W, int64_t OH,
                           int64_t OW, float* dx) {
  // Lane i of the pair (lo, hi) interleaved: tap a of window i goes to
  // column 2i, tap b to 2i + 1.
  const __m512i inter_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i inter_hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i twice = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i tap_b = _mm512_set1_epi64(1), tap_c = _mm512_set1_epi64(W), tap_d = _mm512_set1_epi64(W + 1);
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* r0 = dx + 2 * oh * W;
    float* r1 = r0 + W;
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t n = OW - ow < 16 ? OW - ow : 16;
      const __mmask16 out = lanes(n);
      const __m512 g = _mm512_maskz_loadu_ps(out, dy + oh * OW + ow);
      // Index relative to the window's first tap, 8 windows at a time.
      const __m512i first = _mm512_add_epi64(_mm512_set1_epi64(base + 2 * oh * W + 2 * ow), twice);
      const int64_t* ip = idx + oh * OW + ow;
      const __m512i rel_lo = _mm512_sub_epi64(_mm512_maskz_loadu_epi64(__mmask8(out), ip), first);
      const __m512i rel_hi = _mm512_sub_epi64(_mm512_maskz_loadu_epi64(__mmask8(out >> 8), ip + 8),
                                              _mm512_add_epi64(first, _mm512_set1_epi64(16)));
      auto is = [&](__m512i tap) {
        return __mmask16(_mm512_cmpeq_epi64_mask(rel_lo, tap) | (_mm512_cmpeq_epi64_mask(rel_hi, tap) << 8));
      };
      const __mmask16 ma = is(_mm512_setzero_si512()), mb = is(tap_b), mc = is(tap_c), md = is(tap_d);
      if (((ma | mb | mc | md) & out) != out) return false;
      const __m512 a = _mm512_maskz_mov_ps(ma, g), b = _mm512_maskz_mov_ps(mb, g);
      const __m512 c = _mm512_maskz_mov_ps(mc, g), d = _mm512_maskz_mov_ps(md, g);
      const __mmask16 lo = lanes(2 * n), hi = lanes(2 * n - 16);
      _mm512_mask_storeu_ps(r0 + 2 * ow, lo, _mm512_permutex2var_ps(a, inter_lo, b));
      _mm512_mask_storeu_ps(r0 + 2 * ow + 16, hi, _mm512_permutex2var_ps(a, inter_hi, b));
      _mm512_mask_storeu_ps(r1 + 2 * ow, lo, _mm512_permutex2var_ps(c, inter_lo, d));
      _mm512_mask_storeu_ps(r1 + 2 * ow + 16, hi, _mm512_permutex2var_ps(c, inter_hi, d));
    }
    for (int64_t iw = 2 * OW; iw < W; ++iw) r0[iw] = r1[iw] = 0.f;  // columns no window covers
  }
  for (int64_t i = 2 * OH * W; i < H * W; ++i) dx[i] = 0.f;  // rows no window covers
  return true;
}

namespace {

// Planes 8 floats wide, four pooled rows (16 windows) per step: vector v_i
// holds conv rows 2i and 2i + 1, and lane L = 4i + w of a tap vector is
// window w of pooled row i. tap_lanes(o)[L] is where that tap lies in the
// pair (v_2k, v_2k+1) holding row i: o = 0, 1, 8, 9 for taps a, b, c, d.
__m512i tap_lanes(int o) {
  return _mm512_setr_epi32(o, 2 + o, 4 + o, 6 + o, 16 + o, 18 + o, 20 + o, 22 + o, o, 2 + o, 4 + o, 6 + o, 16 + o,
                           18 + o, 20 + o, 22 + o);
}

__m512 gather_tap(__m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512i lanes_of_tap) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(v0, lanes_of_tap, v1),
                              _mm512_permutex2var_ps(v2, lanes_of_tap, v3));
}

// Position of each window's first tap within its group of eight conv rows.
__m512i first_taps() { return _mm512_setr_epi32(0, 2, 4, 6, 16, 18, 20, 22, 32, 34, 36, 38, 48, 50, 52, 54); }

// 16 int32 lanes as two vectors of 8 int64 (maskz forms: GCC 12's plain
// ones start from an "undefined" register that -Wmaybe-uninitialized reports).
__m512i widen_lo(__m512i v) { return _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, v, 0)); }
__m512i widen_hi(__m512i v) { return _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, v, 1)); }

}  // namespace

void max_pool_2x2_w8_f32(const float* x, int64_t OH, int64_t base, float* y, int64_t* idx) {
  const __m512i la = tap_lanes(0), lb = tap_lanes(1), lc = tap_lanes(8), ld = tap_lanes(9);
  const __m512i tap_b = _mm512_set1_epi32(1), tap_c = _mm512_set1_epi32(8), tap_d = _mm512_set1_epi32(9);
  const int64_t groups = OH / 4;
  for (int64_t g = 0; g < groups; ++g) {
    const float* p = x + g * 64;
    const __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
    const __m512 v2 = _mm512_loadu_ps(p + 32), v3 = _mm512_loadu_ps(p + 48);
    __m512 best = gather_tap(v0, v1, v2, v3, la);
    __m512i at = _mm512_setzero_si512();
    take(gather_tap(v0, v1, v2, v3, lb), tap_b, best, at);
    take(gather_tap(v0, v1, v2, v3, lc), tap_c, best, at);
    take(gather_tap(v0, v1, v2, v3, ld), tap_d, best, at);
    _mm512_storeu_ps(y + g * 16, best);
    if (!idx) continue;
    const __m512i pos = _mm512_add_epi32(first_taps(), at);
    const __m512i b = _mm512_set1_epi64(base + g * 64);
    _mm512_storeu_si512(idx + g * 16, _mm512_add_epi64(b, widen_lo(pos)));
    _mm512_storeu_si512(idx + g * 16 + 8, _mm512_add_epi64(b, widen_hi(pos)));
  }
  if (OH > groups * 4)
    max_pool_2x2_f32(x + groups * 64, 8, OH - groups * 4, 4, base + groups * 64, y + groups * 16,
                     idx ? idx + groups * 16 : nullptr);
}

bool max_pool_2x2_grad_w8_f32(const float* dy, const int64_t* idx, int64_t base, int64_t H, int64_t OH, float* dx) {
  const int64_t groups = OH / 4;
  // Lane j of output vector i (conv rows 2i, 2i + 1) belongs to window
  // (j % 8) / 2 of pooled row i (lane 4i + that of dy), and gets its
  // gradient when the window's maximum is tap (j / 8) * 8 + j % 2.
  const __m512i expect = _mm512_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1, 8, 9, 8, 9, 8, 9, 8, 9);
  const __m512i window = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
  const __m512i first_lo = widen_lo(first_taps()), first_hi = widen_hi(first_taps());
  const __m512i t1 = _mm512_set1_epi64(1), t8 = _mm512_set1_epi64(8), t9 = _mm512_set1_epi64(9);
  for (int64_t g = 0; g < groups; ++g) {
    const __m512 grad = _mm512_loadu_ps(dy + g * 16);
    const __m512i off = _mm512_set1_epi64(base + g * 64);
    const __m512i rel_lo = _mm512_sub_epi64(_mm512_loadu_si512(idx + g * 16), _mm512_add_epi64(off, first_lo));
    const __m512i rel_hi = _mm512_sub_epi64(_mm512_loadu_si512(idx + g * 16 + 8), _mm512_add_epi64(off, first_hi));
    for (const __m512i r : {rel_lo, rel_hi}) {  // each a tap of its own window
      const __mmask8 tap = _mm512_cmpeq_epi64_mask(r, _mm512_setzero_si512()) | _mm512_cmpeq_epi64_mask(r, t1) |
                           _mm512_cmpeq_epi64_mask(r, t8) | _mm512_cmpeq_epi64_mask(r, t9);
      if (tap != 0xFF) return false;
    }
    const __m512i lo = _mm512_castsi256_si512(_mm512_maskz_cvtepi64_epi32(0xFF, rel_lo));
    const __m512i rel = _mm512_mask_inserti64x4(lo, 0xFF, lo, _mm512_maskz_cvtepi64_epi32(0xFF, rel_hi), 1);
    for (int i = 0; i < 4; ++i) {
      const __m512i w = _mm512_add_epi32(window, _mm512_set1_epi32(4 * i));
      const __mmask16 hit = _mm512_cmpeq_epi32_mask(_mm512_maskz_permutexvar_epi32(0xFFFF, w, rel), expect);
      _mm512_storeu_ps(dx + g * 64 + 16 * i, _mm512_maskz_permutexvar_ps(hit, w, grad));
    }
  }
  if (OH > groups * 4 &&
      !max_pool_2x2_grad_f32(dy + groups * 16, idx + groups * 16, base + groups * 64, H - groups * 8, 8, OH - groups * 4,
                             4, dx + groups * 64))
    return false;
  for (int64_t i = 2 * OH * 8; i < H * 8; ++i) dx[i] = 0.f;  // rows no window covers
  return true;
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#else
#include <cstdlib>

namespace singa {
namespace nn {
void max_pool_2x2_f32(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t*) { std::abort(); }
void max_pool_row_3s2_f32(const float* const*, int64_t, float*) { std::abort(); }
void max_pool_row_3s1_f32(const float* const*, int64_t, float*) { std::abort(); }
bool max_pool_2x2_grad_f32(const float*, const int64_t*, int64_t, int64_t, int64_t, int64_t, int64_t, float*) {
  std::abort();
}
void max_pool_2x2_w8_f32(const float*, int64_t, int64_t, float*, int64_t*) { std::abort(); }
bool max_pool_2x2_grad_w8_f32(const float*, const int64_t*, int64_t, int64_t, int64_t, float*) { std::abort(); }
}  // namespace nn
}  // namespace singa
#endif
