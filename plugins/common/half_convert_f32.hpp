// half_convert_f32.hpp - float32 <-> float16 arrays with F16C, 8 lanes at a
// time, bit-exact with sdk::half's scalar conversion: round to nearest even,
// subnormals and infinities as IEEE says. Only NaNs differ in hardware (F16C
// keeps the payload), so NaN lanes are rewritten to sdk::half's encodings:
// float -> half gives sign | 0x7e00, half -> float keeps the payload unquieted.
//
// Callers use f16c_supported() once, then the *_f16c functions; the scalar
// loops are the fallback on CPUs without F16C/AVX2.
#ifndef SINGA_PLUGINS_COMMON_HALF_CONVERT_F32_HPP
#define SINGA_PLUGINS_COMMON_HALF_CONVERT_F32_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SINGA_HAVE_F16C_PATH 1
#endif

namespace singa {
namespace vec {

// Whether this CPU runs the F16C loops below (checked once).
inline bool f16c_supported() {
#ifdef SINGA_HAVE_F16C_PATH
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

inline void f32_to_f16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = sdk::half::from_float(x[i]);
}
inline void f16_to_f32_scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = sdk::half::to_float(x[i]);
}

#ifdef SINGA_HAVE_F16C_PATH
__attribute__((target("avx2,f16c"))) inline void f32_to_f16_f16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  const __m128i sign = _mm_set1_epi16(int16_t(0x8000)), qnan = _mm_set1_epi16(0x7e00);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
    const __m128i fixed = _mm_or_si128(_mm_and_si128(h, sign), qnan);
    h = _mm_blendv_epi8(h, fixed, nan16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  f32_to_f16_scalar(x + i, y + i, n - i);
}

__attribute__((target("avx2,f16c"))) inline void f16_to_f32_f16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  const __m256i exp_mask = _mm256_set1_epi32(0x7c00), mant_mask = _mm256_set1_epi32(0x3ff);
  const __m256i sign_mask = _mm256_set1_epi32(0x8000), inf32 = _mm256_set1_epi32(0x7f800000);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    __m256 f = _mm256_cvtph_ps(h);
    const __m256i w = _mm256_cvtepu16_epi32(h);
    const __m256i mant = _mm256_and_si256(w, mant_mask);
    // NaN: all exponent bits set and a non-zero mantissa.
    const __m256i is_nan = _mm256_andnot_si256(_mm256_cmpeq_epi32(mant, _mm256_setzero_si256()),
                                               _mm256_cmpeq_epi32(_mm256_and_si256(w, exp_mask), exp_mask));
    const __m256i nan_bits = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, sign_mask), 16), inf32),
                                             _mm256_slli_epi32(mant, 13));
    f = _mm256_blendv_ps(f, _mm256_castsi256_ps(nan_bits), _mm256_castsi256_ps(is_nan));
    _mm256_storeu_ps(y + i, f);
  }
  f16_to_f32_scalar(x + i, y + i, n - i);
}
#endif

// The converters for this CPU: F16C where it runs, else the scalar loops.
inline void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
#ifdef SINGA_HAVE_F16C_PATH
  if (f16c_supported()) return f32_to_f16_f16c(x, y, n);
#endif
  f32_to_f16_scalar(x, y, n);
}
inline void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
#ifdef SINGA_HAVE_F16C_PATH
  if (f16c_supported()) return f16_to_f32_f16c(x, y, n);
#endif
  f16_to_f32_scalar(x, y, n);
}

}  // namespace vec
}  // namespace singa

#endif
