#include "classifier_head_f32.hpp"

#include <avx512_region.hpp>
#include <dnnl_sgemm.hpp>

#include <algorithm>

namespace singa {
namespace nn {

void classifier_head_f32(const sdk::Context& ctx, const float* means, int64_t N, int64_t M, const float* w,
                         bool trans_b, int64_t outputs, const float* bias, float* y) {
  if (N == 0 || outputs == 0) return;
  if (M == 0)  // no means to sum (ops::sgemm needs K > 0)
    std::fill(y, y + N * outputs, 0.f);
  else
    ops::sgemm(ctx, false, trans_b, N, outputs, M, 1.f, means, M, w, trans_b ? M : outputs, 0.f, y, outputs);
  if (!bias) return;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < outputs; ++o) y[n * outputs + o] += bias[o];
}

ClassifierPanels classifier_panels(const float* w, bool trans_b, int64_t M, int64_t outputs, int64_t panel) {
  ClassifierPanels c;
  c.M = M;
  c.outputs = outputs;
  c.panel = panel;
  c.padded = (outputs + kClassifierGroup - 1) / kClassifierGroup * kClassifierGroup;
  fast::line_aligned(c.packed, size_t(c.panels() * c.padded * panel));
  // Rows of 16 outputs at a time, so that both W's reads and the packed
  // writes go a line at a time when W is [outputs, M].
  float* packed = c.block(0);
  for (int64_t o0 = 0; o0 < outputs; o0 += 16)
    for (int64_t m = 0; m < M; ++m) {
      float* to = packed + m / panel * c.padded * panel +
                  (o0 / kClassifierGroup * panel + m % panel) * kClassifierGroup + o0 % kClassifierGroup;
      for (int64_t i = 0; i < std::min<int64_t>(16, outputs - o0); ++i)
        to[i] = trans_b ? w[(o0 + i) * M + m] : w[m * outputs + o0 + i];
    }
  return c;
}

}  // namespace nn
}  // namespace singa

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere pointwise_direct_on() is false and nothing here is called
#include <immintrin.h>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {
constexpr int kGroupVecs = int(kClassifierGroup / 16);
}  // namespace

void classifier_panel_f32(const ClassifierPanels& c, int64_t j, const float* means, int64_t rows, float* partial,
                          bool accumulate) {
  const float* w = c.block(j);
  for (int64_t g = 0; g < c.padded / kClassifierGroup; ++g) {
    const float* wg = w + g * c.panel * kClassifierGroup;
    float* out = partial + g * kClassifierGroup;
    // Eight independent sums hide the FMA latency.
    __m512 acc[kGroupVecs];
    for (int v = 0; v < kGroupVecs; ++v) acc[v] = accumulate ? _mm512_loadu_ps(out + 16 * v) : _mm512_setzero_ps();
    for (int64_t k = 0; k < rows; ++k) {
      const __m512 m = _mm512_set1_ps(means[k]);
#pragma GCC unroll 8
      for (int v = 0; v < kGroupVecs; ++v)
        acc[v] = _mm512_fmadd_ps(_mm512_load_ps(wg + k * kClassifierGroup + 16 * v), m, acc[v]);
    }
    for (int v = 0; v < kGroupVecs; ++v) _mm512_storeu_ps(out + 16 * v, acc[v]);
  }
}

void classifier_sum_f32(const ClassifierPanels& c, const float* partials, int64_t parts, const float* bias, float* y) {
  int64_t o = 0;
  for (; o + 16 <= c.outputs; o += 16) {
    __m512 s = bias ? _mm512_loadu_ps(bias + o) : _mm512_setzero_ps();
    for (int64_t p = 0; p < parts; ++p) s = _mm512_add_ps(s, _mm512_loadu_ps(partials + p * c.padded + o));
    _mm512_storeu_ps(y + o, s);
  }
  for (; o < c.outputs; ++o) {
    float s = bias ? bias[o] : 0.f;
    for (int64_t p = 0; p < parts; ++p) s += partials[p * c.padded + o];
    y[o] = s;
  }
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
