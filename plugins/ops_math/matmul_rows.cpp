#include "matmul_rows.hpp"

#include <avx512_region.hpp>
#include <unary_f32.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace singa {
namespace ops {
namespace math {

namespace {

constexpr int64_t kPanel = 64;  // columns of B per panel: four 16-float vectors
// A task streams at least this many floats of B: smaller ones cost more to
// hand to another thread than they save.
constexpr int64_t kMinTaskFloats = 32768;

struct FreeAligned {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

struct RowsMatMul::State {
  int64_t rows = 0, K = 0, N = 0, panels = 0;
  std::unique_ptr<float[], FreeAligned> packed;  // [panels][K][64], zero past N
  std::vector<float> bias;                       // [N] or empty
  MatMulEpilogue epilogue;
};

#if defined(SINGA_AVX512_BEGIN)
SINGA_AVX512_BEGIN
namespace {

#define SINGA_ROWS_INLINE inline __attribute__((always_inline))

// c_j += a * b_j for the panel's four vectors. Named accumulators, not an
// array: GCC keeps arrays of vectors in memory.
SINGA_ROWS_INLINE void row_step(__m512& c0, __m512& c1, __m512& c2, __m512& c3, __m512 a, __m512 b0, __m512 b1,
                                __m512 b2, __m512 b3) {
  c0 = _mm512_fmadd_ps(a, b0, c0);
  c1 = _mm512_fmadd_ps(a, b1, c1);
  c2 = _mm512_fmadd_ps(a, b2, c2);
  c3 = _mm512_fmadd_ps(a, b3, c3);
}

SINGA_ROWS_INLINE void load_row(const float* t, bool zero, __m512& c0, __m512& c1, __m512& c2, __m512& c3) {
  if (zero) {
    c0 = c1 = c2 = c3 = _mm512_setzero_ps();
    return;
  }
  c0 = _mm512_load_ps(t), c1 = _mm512_load_ps(t + 16), c2 = _mm512_load_ps(t + 32), c3 = _mm512_load_ps(t + 48);
}

SINGA_ROWS_INLINE void store_row(float* t, __m512 c0, __m512 c1, __m512 c2, __m512 c3) {
  _mm512_store_ps(t, c0);
  _mm512_store_ps(t + 16, c1);
  _mm512_store_ps(t + 32, c2);
  _mm512_store_ps(t + 48, c3);
}

// tile[r][0..64) += rows a + r lda times steps [k0, k1) of one panel, for
// MR rows (tile taken as 0 when `first`).
template <int MR>
void panel_block(const float* a, int64_t lda, int64_t k0, int64_t k1, const float* bp, float* tile, bool first) {
  __m512 c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
  load_row(tile, first, c00, c01, c02, c03);
  if constexpr (MR > 1) load_row(tile + kPanel, first, c10, c11, c12, c13);
  if constexpr (MR > 2) load_row(tile + 2 * kPanel, first, c20, c21, c22, c23);
  if constexpr (MR > 3) load_row(tile + 3 * kPanel, first, c30, c31, c32, c33);
  for (int64_t k = k0; k < k1; ++k) {
    const float* row = bp + k * kPanel;
    const __m512 b0 = _mm512_load_ps(row), b1 = _mm512_load_ps(row + 16), b2 = _mm512_load_ps(row + 32),
                 b3 = _mm512_load_ps(row + 48);
    row_step(c00, c01, c02, c03, _mm512_set1_ps(a[k]), b0, b1, b2, b3);
    if constexpr (MR > 1) row_step(c10, c11, c12, c13, _mm512_set1_ps(a[lda + k]), b0, b1, b2, b3);
    if constexpr (MR > 2) row_step(c20, c21, c22, c23, _mm512_set1_ps(a[2 * lda + k]), b0, b1, b2, b3);
    if constexpr (MR > 3) row_step(c30, c31, c32, c33, _mm512_set1_ps(a[3 * lda + k]), b0, b1, b2, b3);
  }
  store_row(tile, c00, c01, c02, c03);
  if constexpr (MR > 1) store_row(tile + kPanel, c10, c11, c12, c13);
  if constexpr (MR > 2) store_row(tile + 2 * kPanel, c20, c21, c22, c23);
  if constexpr (MR > 3) store_row(tile + 3 * kPanel, c30, c31, c32, c33);
}

// Panels [p0, p1) of the product for every row. Four rows share each pass
// over a block of kKBlock steps of a panel (32 KiB); a fifth to eighth row
// take a second pass over the block while it is in L1, so B is read from
// memory once.
void run_panels(const RowsMatMul::State& s, const float* a, float* y, const float* z, int64_t p0, int64_t p1) {
  constexpr int64_t kKBlock = 128;
  alignas(64) float tile[RowsMatMul::kMaxRows * kPanel];
  for (int64_t p = p0; p < p1; ++p) {
    const float* bp = s.packed.get() + p * s.K * kPanel;
    for (int64_t k0 = 0; k0 < s.K; k0 += kKBlock) {
      const int64_t k1 = std::min(s.K, k0 + kKBlock);
      for (int64_t r0 = 0; r0 < s.rows; r0 += 4) {
        const float* ar = a + r0 * s.K;
        float* t = tile + r0 * kPanel;
        switch (std::min<int64_t>(4, s.rows - r0)) {
          case 1: panel_block<1>(ar, s.K, k0, k1, bp, t, k0 == 0); break;
          case 2: panel_block<2>(ar, s.K, k0, k1, bp, t, k0 == 0); break;
          case 3: panel_block<3>(ar, s.K, k0, k1, bp, t, k0 == 0); break;
          default: panel_block<4>(ar, s.K, k0, k1, bp, t, k0 == 0); break;
        }
      }
    }
    const int64_t n0 = p * kPanel, w = std::min(kPanel, s.N - n0);
    const float* bias = s.bias.empty() ? nullptr : s.bias.data() + n0;
    for (int64_t r = 0; r < s.rows; ++r) {
      const int64_t off = r * s.N + n0;
      const float* t = tile + r * kPanel;
      if (bias)
        for (int64_t j = 0; j < w; ++j) y[off + j] = t[j] + bias[j];
      else
        std::memcpy(y + off, t, size_t(w) * sizeof(float));
      if (s.epilogue.activates() || s.epilogue.residual)
        epilogue_pass(s.epilogue, y + off, s.epilogue.residual ? z + off : nullptr, w);
    }
  }
}

}  // namespace
SINGA_AVX512_END
#endif

RowsMatMul::~RowsMatMul() = default;

int64_t RowsMatMul::rows() const { return s_->rows; }

std::unique_ptr<RowsMatMul> RowsMatMul::plan(int64_t rows, int64_t K, int64_t N, const float* b, bool trans_b,
                                             const float* bias, float alpha, MatMulEpilogue epilogue) {
#if defined(SINGA_AVX512_BEGIN)
  if (!vec::unary_avx512() || rows < 1 || rows > kMaxRows || K <= 0 || N <= 0) return nullptr;
  std::unique_ptr<RowsMatMul> m(new RowsMatMul());
  m->s_ = std::make_unique<State>();
  State& s = *m->s_;
  s.rows = rows, s.K = K, s.N = N, s.epilogue = epilogue;
  s.panels = (N + kPanel - 1) / kPanel;
  const size_t floats = size_t(s.panels * K * kPanel);
  s.packed.reset(static_cast<float*>(std::aligned_alloc(64, floats * sizeof(float))));
  if (!s.packed) return nullptr;
  float* out = s.packed.get();
  for (int64_t p = 0; p < s.panels; ++p)
    for (int64_t k = 0; k < K; ++k, out += kPanel)
      for (int64_t j = 0; j < kPanel; ++j) {
        const int64_t n = p * kPanel + j;
        out[j] = n < N ? alpha * (trans_b ? b[n * K + k] : b[k * N + n]) : 0.f;
      }
  if (bias) {
    s.bias.assign(bias, bias + N);
  }
  return m;
#else
  (void)rows, (void)K, (void)N, (void)b, (void)trans_b, (void)bias, (void)alpha, (void)epilogue;
  return nullptr;
#endif
}

void RowsMatMul::run(const sdk::Context& ctx, const float* a, float* y, const float* z) const {
#if defined(SINGA_AVX512_BEGIN)
  const State& s = *s_;
  const int64_t grain = std::max<int64_t>(1, kMinTaskFloats / (s.K * kPanel));
  ctx.parallel_for(s.panels, grain, [&](int64_t p0, int64_t p1) { run_panels(s, a, y, z, p0, p1); });
#else
  (void)ctx, (void)a, (void)y, (void)z;
#endif
}

}  // namespace math
}  // namespace ops
}  // namespace singa
