// The AVX-512 products behind sgemm.hpp. Two register tiles cover every
// case, both reading the operands in place (no packing: for the sizes the
// training path multiplies, a packed copy cost more than it saved):
//   broadcast tile  C[mr x 16nv] += a(:,k) * B(k, :) with B's rows as vectors
//                   and one element of op(A) broadcast per row;
//   dot tile        C[mr x nr] = A B^T with both A's and B's rows read as
//                   vectors along K and each sum reduced at the end,
//                   so A B^T needs no transposed copy of B.
// Everything else is loop order for the caches.
#include "sgemm.hpp"
#include "runtime_option.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "avx512_region.hpp"

#ifdef SINGA_AVX512_BEGIN
#define SINGA_SGEMM_X86 1
#include <immintrin.h>
#endif

namespace singa {
namespace fast {
namespace {

// A broadcast tile holds rows x vectors (of 16 floats) accumulators: 6 x 4,
// or for narrow products up to 12 x 2, so that about 24 of the 32 vector
// registers accumulate.
constexpr int kMaxRows = 12;
constexpr int kMaxVecs = 4;
constexpr int64_t kDepth = 256;  // K per pass over a column panel of B
constexpr int kDotRows = 4, kDotCols = 6;

// Most rows a tile takes for products N wide.
int64_t max_rows(int64_t N) { return N > 48 ? 6 : N > 32 ? 8 : 12; }

// Row blocks of at most `most` rows, as even as possible (50 rows: 5 and 6,
// not eight 6s and a 2) so no tile runs with too few accumulators.
std::vector<int64_t> row_blocks(int64_t M, int64_t most) {
  const int64_t n = (M + most - 1) / most;
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) rows[size_t(b)] = M * (b + 1) / n - M * b / n;
  return rows;
}

void blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
          float* C, int64_t ldc, const Out& o) {
  if (M <= 0 || N <= 0) return;
  if (K > 0) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
                o.alpha, A, int(lda), B, int(ldb), o.beta, C, int(ldc));
  } else {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = o.beta == 0.f ? 0.f : o.beta * C[i * ldc + j];
  }
  if (o.row_bias || o.col_bias)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] += (o.row_bias ? o.row_bias[i] : 0.f) + (o.col_bias ? o.col_bias[j] : 0.f);
}

bool detect() {
#ifdef SINGA_SGEMM_X86
  if (!ops::runtime_flag("cpu.avx512", true)) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

#ifdef SINGA_SGEMM_X86
SINGA_AVX512_BEGIN

// The epilogue of one tile, with the biases already offset to the tile.
struct Epi {
  float alpha, beta;
  const float* rb;
  const float* cb;
};

// a(i, k) = a[k * lda + i] (COLS) or a[i * lda + k] (rows, read in place).
template <int MR, int NV, bool COLS>
void bcast_tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                __mmask16 tail, const Epi& e) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV - 1; ++v) bv[v] = _mm512_loadu_ps(bk + 16 * v);
    bv[NV - 1] = _mm512_maskz_loadu_ps(tail, bk + 16 * (NV - 1));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(COLS ? a[k * lda + i] : a[i * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(e.alpha), beta = _mm512_set1_ps(e.beta);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? tail : __mmask16(0xFFFF);
      __m512 r = e.alpha == 1.f ? acc[i][v] : _mm512_mul_ps(acc[i][v], alpha);
      if (e.beta != 0.f) r = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m, ci + 16 * v), r);
      if (e.rb) r = _mm512_add_ps(r, _mm512_set1_ps(e.rb[i]));
      if (e.cb) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, e.cb + 16 * v));
      _mm512_mask_storeu_ps(ci + 16 * v, m, r);
    }
  }
}

// The maskz forms: GCC 12's unmasked shuffles start from an "undefined"
// register that -Wuninitialized reports.
inline float sum16(__m512 v) {
  const __mmask16 all = 0xFFFF;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(all, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(all, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}

template <int MR, int NR>
void dot_tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
              const Epi& e) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  auto step = [&](int64_t k, __mmask16 m) {
    __m512 bv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) bv[j] = _mm512_maskz_loadu_ps(m, b + j * ldb + k);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_maskz_loadu_ps(m, a + i * lda + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
  };
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) step(k, __mmask16(0xFFFF));
  if (k < K) step(k, __mmask16((1u << (K - k)) - 1));
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      float r = e.alpha * sum16(acc[i][j]);
      float& out = c[i * ldc + j];
      if (e.beta != 0.f) r += e.beta * out;
      if (e.rb) r += e.rb[i];
      if (e.cb) r += e.cb[j];
      out = r;
    }
}

SINGA_AVX512_END

using BcastFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, const Epi&);
using DotFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, const Epi&);

// Tiles by [rows - 1][vectors - 1]; combinations that would not fit the
// registers fall back to smaller ones (never chosen by max_rows).
template <int MR, bool COLS>
constexpr BcastFn bcast_row[kMaxVecs] = {bcast_tile<MR, 1, COLS>, bcast_tile<MR, 2, COLS>,
                                         bcast_tile<(MR > 8 ? 8 : MR), 3, COLS>, bcast_tile<(MR > 6 ? 6 : MR), 4, COLS>};
template <bool COLS>
constexpr const BcastFn* kBcast[kMaxRows] = {
    bcast_row<1, COLS>, bcast_row<2, COLS>, bcast_row<3, COLS>,  bcast_row<4, COLS>,  bcast_row<5, COLS>,  bcast_row<6, COLS>,
    bcast_row<7, COLS>, bcast_row<8, COLS>, bcast_row<9, COLS>, bcast_row<10, COLS>, bcast_row<11, COLS>, bcast_row<12, COLS>};
template <int MR>
constexpr DotFn dot_row[kDotCols] = {dot_tile<MR, 1>, dot_tile<MR, 2>, dot_tile<MR, 3>,
                                     dot_tile<MR, 4>, dot_tile<MR, 5>, dot_tile<MR, 6>};
const DotFn* const kDot[kDotRows] = {dot_row<1>, dot_row<2>, dot_row<3>, dot_row<4>};

// The row blocks of op(A), read in place: A stored K x M (cols) or M x K.
struct Blocks {
  bool cols = false;
  std::vector<int64_t> rows, first;
  const float* base = nullptr;
  int64_t ld = 0;
  const float* ptr(size_t b, int64_t k) const { return cols ? base + first[b] + k * ld : base + first[b] * ld + k; }
};

// One broadcast-tile product over a range of row blocks and column panels.
struct BcastJob {
  const Blocks* a;
  int64_t N, K;
  const float* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
  Out o;

  int64_t panels() const { return (N + 16 * kMaxVecs - 1) / (16 * kMaxVecs); }

  void run(int64_t p_begin, int64_t p_end, int64_t b_begin, int64_t b_end) const {
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t n0 = p * 16 * kMaxVecs, w = std::min<int64_t>(16 * kMaxVecs, N - n0);
      const int nv = int((w + 15) / 16);
      const int rem = int(w - 16 * (nv - 1));
      const __mmask16 tail = __mmask16(rem == 16 ? 0xFFFF : (1u << rem) - 1);
      for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += kDepth) {
        const int64_t kc = std::min(kDepth, K - k0);
        const bool first = k0 == 0;
        for (int64_t b = b_begin; b < b_end; ++b) {
          const int64_t m0 = a->first[size_t(b)];
          const Epi e{o.alpha, first ? o.beta : 1.f, first && o.row_bias ? o.row_bias + m0 : nullptr,
                      first && o.col_bias ? o.col_bias + n0 : nullptr};
          const BcastFn f = (a->cols ? kBcast<true> : kBcast<false>)[a->rows[size_t(b)] - 1][nv - 1];
          f(kc, a->ptr(size_t(b), k0), a->ld, B + k0 * ldb + n0, ldb, C + m0 * ldc + n0, ldc, tail, e);
        }
      }
    }
  }
};

struct DotJob {
  int64_t M, N, K;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
  Out o;

  // Column blocks and row blocks as even as possible (25 columns: five of 5,
  // not four of 6 and a 1).
  int64_t col_blocks() const { return (N + kDotCols - 1) / kDotCols; }

  void run(int64_t j_begin, int64_t j_end) const {
    const int64_t nc = col_blocks(), nm = (M + kDotRows - 1) / kDotRows;
    for (int64_t jb = j_begin; jb < j_end; ++jb) {
      const int64_t j0 = N * jb / nc, nr = N * (jb + 1) / nc - j0;
      for (int64_t ib = 0; ib < nm; ++ib) {
        const int64_t i0 = M * ib / nm, mr = M * (ib + 1) / nm - i0;
        const Epi e{o.alpha, o.beta, o.row_bias ? o.row_bias + i0 : nullptr, o.col_bias ? o.col_bias + j0 : nullptr};
        kDot[mr - 1][nr - 1](K, A + i0 * lda, lda, B + j0 * ldb, ldb, C + i0 * ldc + j0, ldc, e);
      }
    }
  }
};

void split_rows(int64_t M, int64_t most, std::vector<int64_t>& rows, std::vector<int64_t>& first) {
  rows = row_blocks(M, most);
  first.clear();
  int64_t m0 = 0;
  for (int64_t r : rows) {
    first.push_back(m0);
    m0 += r;
  }
}

thread_local std::vector<float> t_trans_a, t_trans_b;

void transpose(int64_t rows, int64_t cols, const float* src, int64_t ld, std::vector<float>& out) {
  out.resize(size_t(rows * cols));
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16)
      for (int64_t i = i0; i < std::min(rows, i0 + 16); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + 16); ++j) out[size_t(j * rows + i)] = src[i * ld + j];
}

// The plan both entry points share: which tile, and the operands it reads.
struct Plan {
  bool dot = false;
  Blocks blocks;
  BcastJob bj{};
  DotJob dj{};
};

void make_plan(Plan& p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
               const float* B, int64_t ldb, float* C, int64_t ldc, const Out& o) {
  if (ta && tb) {  // rare: make A row-major and take the A B^T route
    transpose(K, M, A, lda, t_trans_a);
    A = t_trans_a.data(), lda = K, ta = false;
  }
  if (tb && K < 32) {  // too short for vectors along K: copy B^T instead
    transpose(N, K, B, ldb, t_trans_b);
    B = t_trans_b.data(), ldb = N, tb = false;
  }
  if (tb) {
    p.dot = true;
    p.dj = DotJob{M, N, K, A, lda, B, ldb, C, ldc, o};
    return;
  }
  split_rows(M, max_rows(N), p.blocks.rows, p.blocks.first);
  p.blocks.base = A, p.blocks.ld = lda, p.blocks.cols = ta;
  p.bj = BcastJob{&p.blocks, N, K, B, ldb, C, ldc, o};
}

#endif  // SINGA_SGEMM_X86

}  // namespace

bool avx512() {
  static const bool on = detect();
  return on;
}

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           float* C, int64_t ldc, const Out& o) {
  if (M <= 0 || N <= 0) return;
#ifdef SINGA_SGEMM_X86
  if (avx512()) {
    Plan p;
    make_plan(p, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, o);
    if (p.dot)
      p.dj.run(0, p.dj.col_blocks());
    else
      p.bj.run(0, p.bj.panels(), 0, int64_t(p.blocks.rows.size()));
    return;
  }
#endif
  blas(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, o);
}

void sgemm_parallel(const ParallelFor& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, const Out& o) {
  const int threads = pool.threads();
  if (threads <= 1 || M * N * K < (int64_t(1) << 20) || !avx512()) {
    sgemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, o);
    return;
  }
#ifdef SINGA_SGEMM_X86
  if (M <= 0 || N <= 0) return;
  Plan p;
  make_plan(p, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, o);
  if (p.dot) {
    const DotJob& j = p.dj;
    pool.run(j.col_blocks(), [](void* u, int64_t b, int64_t e) { static_cast<const DotJob*>(u)->run(b, e); },
             const_cast<DotJob*>(&j));
    return;
  }
  // Tasks: every column panel times a share of the row blocks, enough tasks
  // for each thread to get a few.
  struct Split {
    const BcastJob* job;
    int64_t panels, blocks, per;
  } s{&p.bj, p.bj.panels(), int64_t(p.blocks.rows.size()), 1};
  const int64_t want = 4 * threads;
  const int64_t chunks = std::min(s.blocks, std::max<int64_t>(1, (want + s.panels - 1) / s.panels));
  s.per = (s.blocks + chunks - 1) / chunks;
  const int64_t tasks = s.panels * ((s.blocks + s.per - 1) / s.per);
  pool.run(tasks,
           [](void* u, int64_t b, int64_t e) {
             const Split& s = *static_cast<const Split*>(u);
             const int64_t per_panel = (s.blocks + s.per - 1) / s.per;
             for (int64_t t = b; t < e; ++t) {
               const int64_t p = t / per_panel, c = t % per_panel;
               s.job->run(p, p + 1, c * s.per, std::min(s.blocks, (c + 1) * s.per));
             }
           },
           &s);
#endif
}

}  // namespace fast
}  // namespace singa
