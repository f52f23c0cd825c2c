// round_avx512.hpp - Floor, Ceil and Round (halves to even) over float32,
// float64 and float16 arrays with AVX-512's vrndscale, the tail under a mask.
// Without SSE4.1 in the baseline target std::floor / std::ceil are libm calls
// per element. vrndscale keeps NaN, infinities and the sign of zero, as libm
// does, and its nearest mode rounds halves to even, ONNX Round's rule.
// float16 converts through float (exact both ways for integral results).
//
// Callers check vec::unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_PLUGINS_COMMON_ROUND_AVX512_HPP
#define SINGA_PLUGINS_COMMON_ROUND_AVX512_HPP

#include "unary_f32.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace vec {

// The vrndscale immediates: floor, ceil, nearest-even, without exceptions.
constexpr int kRoundFloor = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
constexpr int kRoundCeil = _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC;
constexpr int kRoundEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

SINGA_AVX512_BEGIN

template <int kMode>
inline void round_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_roundscale_ps(m, _mm512_maskz_loadu_ps(m, x + i), kMode));
  }
}

template <int kMode>
inline void round_f64(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - i)) - 1);
    _mm512_mask_storeu_pd(y + i, m, _mm512_maskz_roundscale_pd(m, _mm512_maskz_loadu_pd(m, x + i), kMode));
  }
}

// float16 as its bits: 16 halves widen to float, round, and narrow back.
template <int kMode>
inline void round_f16(const uint16_t* x, uint16_t* y, int64_t n) {
  alignas(32) uint16_t buf[16];
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = n - i >= 16 ? 16 : n - i;
    __m256i h;
    if (k == 16) {
      h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    } else {
      for (int64_t j = 0; j < 16; ++j) buf[j] = j < k ? x[i + j] : 0;
      h = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
    }
    const __m512 r = _mm512_maskz_roundscale_ps(__mmask16(0xFFFF), _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), h), kMode);
    const __m256i o = _mm512_maskz_cvtps_ph(__mmask16(0xFFFF), r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (k == 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), o);
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(buf), o);
      for (int64_t j = 0; j < k; ++j) y[i + j] = buf[j];
    }
  }
}

SINGA_AVX512_END

}  // namespace vec
}  // namespace singa
#endif
#endif
