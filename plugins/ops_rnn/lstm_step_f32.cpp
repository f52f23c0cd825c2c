#include "lstm_step_f32.hpp"

#include <avx512_region.hpp>
#include <line_aligned.hpp>

#include <algorithm>

namespace singa {
namespace ops {
namespace rnn {

namespace {

size_t packed_floats(int64_t H) { return size_t(lstm_panels(H) * H * 4 * kUnitsPerPanel); }

}  // namespace

float* pack_lstm_r(const float* R, int64_t H, std::vector<float>& buf) {
  const int64_t L = kUnitsPerPanel;
  buf.clear();
  float* out = fast::line_aligned(buf, packed_floats(H));  // zero-filled
  for (int64_t u = 0; u < lstm_panels(H); ++u)
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t l = 0; l < L && u * L + l < H; ++l) {
        const float* row = R + (g * H + u * L + l) * H;
        float* dst = out + u * H * 4 * L + g * L + l;
        for (int64_t k = 0; k < H; ++k) dst[k * 4 * L] = row[k];
      }
  return out;
}

const float* packed_lstm_r(const std::vector<float>& buf, int64_t H) {
  return buf.size() == packed_floats(H) + fast::kLineSlack ? fast::line_start(buf.data()) : nullptr;
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

namespace singa {
namespace ops {
namespace rnn {

SINGA_AVX512_BEGIN

namespace {

// NR rows of h against one panel. Even and odd k go to separate accumulators:
// with one row, four chains of dependent FMAs would wait on the FMA latency.
template <int NR>
void panel_rows(const float* panel, int64_t H, const float* h, float* z, int64_t j, int64_t valid) {
  constexpr int64_t L = kUnitsPerPanel;
  constexpr int64_t PF = 16;
  __m512 acc[NR][2][4];
  for (int r = 0; r < NR; ++r)
    for (int e = 0; e < 2; ++e)
      for (int g = 0; g < 4; ++g) acc[r][e][g] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 2 <= H; k += 2) {
    const float* w = panel + k * 4 * L;
    for (int line = 0; line < 8; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(w + PF * 4 * L + line * 16), _MM_HINT_T0);
    for (int e = 0; e < 2; ++e)
      for (int g = 0; g < 4; ++g) {
        const __m512 wv = _mm512_loadu_ps(w + e * 4 * L + g * L);
        for (int r = 0; r < NR; ++r) acc[r][e][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[r * H + k + e]), wv, acc[r][e][g]);
      }
  }
  if (k < H) {
    const float* w = panel + k * 4 * L;
    for (int g = 0; g < 4; ++g) {
      const __m512 wv = _mm512_loadu_ps(w + g * L);
      for (int r = 0; r < NR; ++r) acc[r][0][g] = _mm512_fmadd_ps(_mm512_set1_ps(h[r * H + k]), wv, acc[r][0][g]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int g = 0; g < 4; ++g) {
      const __m512 s = _mm512_add_ps(acc[r][0][g], acc[r][1][g]);
      float* dst = z + r * 4 * H + g * H + j;
      if (valid == L) {
        _mm512_storeu_ps(dst, s);
      } else {
        alignas(64) float tmp[L];
        _mm512_store_ps(tmp, s);
        std::copy(tmp, tmp + valid, dst);
      }
    }
}

}  // namespace

void lstm_step_product(const float* packed, int64_t H, const float* h, int64_t N, float* z, int64_t u0, int64_t u1,
                       bool backwards) {
  constexpr int64_t L = kUnitsPerPanel;
  const int64_t G = 4 * H;
  for (int64_t i = u0; i < u1; ++i) {
    const int64_t u = backwards ? u0 + u1 - 1 - i : i;
    const float* panel = packed + u * H * 4 * L;
    const int64_t j = u * L, valid = std::min(L, H - j);
    int64_t b = 0;
    // Three rows share each weight load; 24 of the 32 vector registers.
    for (; b + 3 <= N; b += 3) panel_rows<3>(panel, H, h + b * H, z + b * G, j, valid);
    if (N - b == 2) panel_rows<2>(panel, H, h + b * H, z + b * G, j, valid);
    if (N - b == 1) panel_rows<1>(panel, H, h + b * H, z + b * G, j, valid);
  }
}

SINGA_AVX512_END

}  // namespace rnn
}  // namespace ops
}  // namespace singa

#else

#include <cstdlib>

namespace singa {
namespace ops {
namespace rnn {
void lstm_step_product(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool) { std::abort(); }
}  // namespace rnn
}  // namespace ops
}  // namespace singa

#endif
