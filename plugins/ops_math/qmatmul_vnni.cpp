#include "qmatmul_vnni.hpp"

#include "qmatmul_amx.hpp"

#include <line_aligned.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <mutex>

// The kernels carry their own target attribute; callers check
// vnni_available() first, so the rest of the plugin keeps the baseline ISA.
#define SINGA_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr int kMR = 6;         // rows of A per micro tile (6 x 4 accumulators)
constexpr int64_t kChunk = 72;  // at most this many rows of A per task (kept in L2 across panels)
// Products of at least kAmxMinRows rows run on AMX where B has its AMX form
// (only a B with K >= kAmxMinK and N >= kAmxMinN gets one), in parts of
// about kAmxRows rows (<= kChunk). Below these, in a micro-benchmark with
// the QDQ epilogue, VNNI was as fast or faster (K 64-128: AMX 1.4-1.6x
// slower; K 256-1024 with 32+ rows: AMX 1.2-2x faster).
constexpr int64_t kAmxMinRows = 32;
constexpr int64_t kAmxMinK = 256;
constexpr int64_t kAmxMinN = 128;
constexpr int64_t kAmxRows = 32;

// Four bytes of a row of A starting at p, of which `n` are real (the rest 0).
inline int32_t load4(const uint8_t* p, int64_t n) {
  int32_t v = 0;
  std::memcpy(&v, p, size_t(n));
  return v;
}

#define SINGA_VNNI_INLINE SINGA_VNNI inline __attribute__((always_inline))

// One row's step: c_j += a . b_j for the NV vectors of the panel. The
// accumulators are named variables, not an array: GCC kept an array of
// them in memory, storing every accumulator on every step (5x slower).
template <int NV>
SINGA_VNNI_INLINE void row_step(__m512i& c0, __m512i& c1, __m512i& c2, __m512i& c3, __m512i a, const __m512i* b) {
  c0 = _mm512_dpbusd_epi32(c0, a, b[0]);
  if constexpr (NV > 1) c1 = _mm512_dpbusd_epi32(c1, a, b[1]);
  if constexpr (NV > 2) c2 = _mm512_dpbusd_epi32(c2, a, b[2]);
  if constexpr (NV > 3) c3 = _mm512_dpbusd_epi32(c3, a, b[3]);
}

template <int NV>
SINGA_VNNI_INLINE void store_row(int32_t* t, __m512i c0, __m512i c1, __m512i c2, __m512i c3) {
  _mm512_store_si512(t, c0);
  if constexpr (NV > 1) _mm512_store_si512(t + 16, c1);
  if constexpr (NV > 2) _mm512_store_si512(t + 32, c2);
  if constexpr (NV > 3) _mm512_store_si512(t + 48, c3);
}

// tile[r][0..16 NV) = the raw sums of rows a + r lda with NV vectors of the panel.
template <int MR, int NV>
SINGA_VNNI void micro(const uint8_t* a, int64_t lda, int64_t K, const int8_t* bp, int32_t* tile) {
  const __m512i z = _mm512_setzero_si512();
  __m512i c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z, c20 = z, c21 = z, c22 = z, c23 = z;
  __m512i c30 = z, c31 = z, c32 = z, c33 = z, c40 = z, c41 = z, c42 = z, c43 = z, c50 = z, c51 = z, c52 = z, c53 = z;
  const int64_t groups = (K + 3) / 4;
  for (int64_t q = 0; q < groups; ++q) {
    const int8_t* row = bp + q * 256;
    __m512i b[4];
    for (int j = 0; j < NV; ++j) b[j] = _mm512_load_si512(row + 64 * j);
    // The last group of a K that is not a multiple of 4 reads only its real bytes.
    const int64_t n = std::min<int64_t>(4, K - 4 * q);
    const uint8_t* at = a + 4 * q;
    auto bcast = [n](const uint8_t* p) { return n == 4 ? load4(p, 4) : load4(p, n); };
    row_step<NV>(c00, c01, c02, c03, _mm512_set1_epi32(bcast(at)), b);
    if constexpr (MR > 1) row_step<NV>(c10, c11, c12, c13, _mm512_set1_epi32(bcast(at + lda)), b);
    if constexpr (MR > 2) row_step<NV>(c20, c21, c22, c23, _mm512_set1_epi32(bcast(at + 2 * lda)), b);
    if constexpr (MR > 3) row_step<NV>(c30, c31, c32, c33, _mm512_set1_epi32(bcast(at + 3 * lda)), b);
    if constexpr (MR > 4) row_step<NV>(c40, c41, c42, c43, _mm512_set1_epi32(bcast(at + 4 * lda)), b);
    if constexpr (MR > 5) row_step<NV>(c50, c51, c52, c53, _mm512_set1_epi32(bcast(at + 5 * lda)), b);
  }
  store_row<NV>(tile, c00, c01, c02, c03);
  if constexpr (MR > 1) store_row<NV>(tile + 64, c10, c11, c12, c13);
  if constexpr (MR > 2) store_row<NV>(tile + 128, c20, c21, c22, c23);
  if constexpr (MR > 3) store_row<NV>(tile + 192, c30, c31, c32, c33);
  if constexpr (MR > 4) store_row<NV>(tile + 256, c40, c41, c42, c43);
  if constexpr (MR > 5) store_row<NV>(tile + 320, c50, c51, c52, c53);
}

using MicroFn = void (*)(const uint8_t*, int64_t, int64_t, const int8_t*, int32_t*);

template <int MR>
constexpr MicroFn row_fns[4] = {micro<MR, 1>, micro<MR, 2>, micro<MR, 3>, micro<MR, 4>};
const MicroFn* const kMicro[kMR] = {row_fns<1>, row_fns<2>, row_fns<3>, row_fns<4>, row_fns<5>, row_fns<6>};

// The zero-point corrections and the store of `rows` rows of a tile (row
// stride tile_ld) whose columns start at n0 (cols of them real).
SINGA_VNNI void finish(const int32_t* tile, int64_t tile_ld, int rows, int64_t m0, int64_t n0, int64_t cols,
                       const int32_t* za, const int32_t* rowsum, const PackedB8& b, const QGemmOut& out) {
  const __mmask16 all = 0xFFFF;
  const __m512 qs = _mm512_set1_ps(out.q_scale), qz = _mm512_set1_ps(float(out.q_zero));
  const __m512 qlo = _mm512_set1_ps(out.q_signed ? -128.f : 0.f), qhi = _mm512_set1_ps(out.q_signed ? 127.f : 255.f);
  for (int r = 0; r < rows; ++r) {
    const __m512i vza = _mm512_set1_epi32(za[r]), vrs = _mm512_set1_epi32(rowsum ? rowsum[r] : 0);
    for (int64_t j = 0; j * 16 < cols; ++j) {
      const int64_t n = n0 + 16 * j, left = cols - 16 * j;
      const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      __m512i v = _mm512_loadu_si512(tile + r * tile_ld + 16 * j);
      v = _mm512_sub_epi32(v, _mm512_mullo_epi32(vza, _mm512_loadu_si512(b.ccorr.data() + n)));
      if (rowsum) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(vrs, _mm512_loadu_si512(b.zb.data() + n)));
      const int64_t at = (m0 + r) * out.ld + n;
      if (out.acc) {
        _mm512_mask_storeu_epi32(out.acc + at, mask, v);
        continue;
      }
      __m512 y = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all, v), _mm512_maskz_loadu_ps(mask, out.scale + n));
      if (out.bias) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, out.bias + n));
      if (out.y && !out.q_float) {
        _mm512_mask_storeu_ps(out.y + at, mask, y);
        continue;
      }
      // QuantizeLinear's steps (plugins/ops_nn/qdq_convert.cpp): divide,
      // round half to even, add the zero point, NaN to the zero point, clamp.
      __m512 r = _mm512_maskz_roundscale_ps(all, _mm512_div_ps(y, qs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      r = _mm512_add_ps(r, qz);
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), qz);
      r = _mm512_maskz_min_ps(all, _mm512_maskz_max_ps(all, r, qlo), qhi);
      if (out.q_float) {  // DequantizeLinear's (q - zero) * scale, then the bias Add
        __m512 d = _mm512_mul_ps(_mm512_sub_ps(r, qz), qs);
        if (out.post_bias) d = _mm512_add_ps(d, _mm512_maskz_loadu_ps(mask, out.post_bias + n));
        _mm512_mask_storeu_ps(out.y + at, mask, d);
        continue;
      }
      const __m512i q = _mm512_maskz_cvtps_epi32(all, r);
      if (out.q_signed)
        _mm512_mask_cvtsepi32_storeu_epi8(static_cast<int8_t*>(out.q8) + at, mask, q);
      else
        _mm512_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(out.q8) + at, mask, q);
    }
  }
}

// The zero points of rows [m0, m1) and, when B has zero points, their sums.
void row_terms(int64_t m0, int64_t m1, const uint8_t* a, int64_t lda, int32_t za, const int32_t* za_rows,
               const PackedB8& b, int32_t* zas, int32_t* rowsum) {
  for (int64_t m = m0; m < m1; ++m) {
    zas[m - m0] = za_rows ? za_rows[m] : za;
    if (!b.any_zb) continue;
    uint32_t s = 0;
    const uint8_t* row = a + m * lda;
    for (int64_t k = 0; k < b.K; ++k) s += row[k];
    rowsum[m - m0] = int32_t(s);
  }
}

// Rows [m0, m1) against panels [p0, p1).
SINGA_VNNI void run_block(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const uint8_t* a, int64_t lda, int32_t za,
                          const int32_t* za_rows, const PackedB8& b, const QGemmOut& out) {
  alignas(64) int32_t tile[kMR * 64];
  int32_t rowsum[kChunk], zas[kChunk];
  const int64_t K = b.K;
  row_terms(m0, m1, a, lda, za, za_rows, b, zas, rowsum);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 64, cols = std::min<int64_t>(64, b.N - n0);
    const int nv = int((cols + 15) / 16);
    for (int64_t m = m0; m < m1; m += kMR) {
      const int rows = int(std::min<int64_t>(kMR, m1 - m));
      kMicro[rows - 1][nv - 1](a + m * lda, lda, K, b.panel(p), tile);
      finish(tile, 64, rows, m, n0, cols, zas + (m - m0), b.any_zb ? rowsum + (m - m0) : nullptr, b, out);
    }
  }
}

// Rows [m0, m1) (at most kChunk) on AMX: oneDNN's sums into a per-thread
// buffer, then the same epilogue as the VNNI tiles; the VNNI kernel where
// oneDNN refuses the part.
void run_block_amx(const AmxB8& amx, int64_t m0, int64_t m1, const uint8_t* a, int64_t lda, int32_t za,
                   const int32_t* za_rows, const PackedB8& b, const QGemmOut& out) {
  thread_local std::vector<int32_t> buf;
  const int64_t rows = m1 - m0;
  if (buf.size() < size_t(rows * b.N + 16)) buf.resize(size_t(rows * b.N + 16));
  int32_t* acc = fast::line_start(buf.data());  // 64-byte aligned rows for N a multiple of 16
  if (!amx.product(rows, a + m0 * lda, lda, acc)) {
    run_block(m0, m1, 0, b.panels(), a, lda, za, za_rows, b, out);
    return;
  }
  int32_t rowsum[kChunk], zas[kChunk];
  row_terms(m0, m1, a, lda, za, za_rows, b, zas, rowsum);
  finish(acc, b.N, int(rows), m0, 0, b.N, zas, b.any_zb ? rowsum : nullptr, b, out);
}

// B's AMX form, made on first use (one lock per tall product: cheap next
// to the product); null where it is not wanted or oneDNN refused it.
const AmxB8* amx_for(const PackedB8& p) {
  if (!p.amx_wanted) return nullptr;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!p.amx_tried) {
    p.amx_tried = true;
    std::vector<int8_t> plain(size_t(p.K * p.N));
    for (int64_t k = 0; k < p.K; ++k)
      for (int64_t n = 0; n < p.N; ++n)
        plain[size_t(k * p.N + n)] = p.panel(n / 64)[(k / 4) * 256 + (n % 64) * 4 + k % 4];
    p.amx = AmxB8::plan(std::move(plain), p.K, p.N);
  }
  return p.amx.get();
}

}  // namespace

bool vnni_available() {
  static const bool on = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni");
  return on;
}

void pack_b8(PackedB8& p, const void* b, bool b_u8, int64_t K, int64_t N, int64_t sk, int64_t sn, const int32_t* zb,
             int64_t zb_count) {
  p.K = K, p.N = N, p.groups = (K + 3) / 4;
  const int64_t panels = p.panels(), padded = panels * 64;
  p.data.assign(size_t(panels * p.groups * 256 + 64), 0);
  p.offset = int64_t((64 - reinterpret_cast<uintptr_t>(p.data.data()) % 64) % 64);
  p.zb.assign(size_t(padded), 0);
  p.ccorr.assign(size_t(padded), 0);
  p.any_zb = false;
  const int32_t shift = b_u8 ? 128 : 0;  // stored = b - shift
  for (int64_t n = 0; n < N; ++n) {
    const int32_t z = (zb ? zb[zb_count == 1 ? 0 : n] : 0) - shift;
    int8_t* col = p.data.data() + p.offset + (n / 64) * p.groups * 256 + (n % 64) * 4;
    uint32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t at = k * sk + n * sn;
      const int32_t v = b_u8 ? int32_t(static_cast<const uint8_t*>(b)[at]) - 128 : static_cast<const int8_t*>(b)[at];
      col[(k / 4) * 256 + k % 4] = int8_t(v);
      sum += uint32_t(v);
    }
    p.zb[size_t(n)] = z;
    // Column terms of the correction: za colsum - K za zb = za (colsum - K zb).
    p.ccorr[size_t(n)] = int32_t(sum - uint32_t(K) * uint32_t(z));
    p.any_zb = p.any_zb || z != 0;
  }
}

void attach_amx(PackedB8& p) { p.amx_wanted = amx_int8_available() && p.K >= kAmxMinK && p.N >= kAmxMinN; }

void qgemm_u8s8(const sdk::Context& ctx, int64_t rows, const uint8_t* a, int64_t lda, int32_t za,
                const int32_t* za_rows, const PackedB8& b, const QGemmOut& out) {
  if (rows <= 0 || b.N <= 0) return;
  const int threads = std::max(1, ctx.num_threads());
  const AmxB8* amx = rows >= kAmxMinRows ? amx_for(b) : nullptr;
  if (amx) {
    // Parts of at most kAmxRows rows, split evenly: oneDNN's AMX code ran
    // 32-row parts faster per row than whole 128-row products.
    const int64_t parts = std::max<int64_t>((rows + kAmxRows - 1) / kAmxRows, std::min<int64_t>(threads, rows / 16));
    ctx.parallel_for(parts, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        run_block_amx(*amx, rows * t / parts, rows * (t + 1) / parts, a, lda, za, za_rows, b, out);
    });
    return;
  }
  // Rows split evenly over the threads (in whole micro tiles), then the
  // panels too when that leaves too few tasks for the pool.
  const int64_t per = std::min<int64_t>(kChunk, (((rows + threads - 1) / threads + kMR - 1) / kMR) * kMR);
  const int64_t chunks = (rows + per - 1) / per, panels = b.panels();
  const int64_t groups = threads == 1 ? 1 : std::clamp<int64_t>((4 * threads + chunks - 1) / chunks, 1, panels);
  ctx.parallel_for(chunks * groups, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c = t / groups, g = t % groups;
      run_block(c * per, std::min(rows, (c + 1) * per), panels * g / groups, panels * (g + 1) / groups, a, lda,
                za, za_rows, b, out);
    }
  });
}

void shift_s8_to_u8(const sdk::Context& ctx, const int8_t* a, int64_t n, uint8_t* out) {
  ctx.parallel_for(n, 65536, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = uint8_t(a[i]) ^ 0x80;
  });
}

}  // namespace math
}  // namespace ops
}  // namespace singa
