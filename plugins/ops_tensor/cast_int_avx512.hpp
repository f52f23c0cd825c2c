// cast_int_avx512.hpp - float32 / float64 to int32 / int64 with AVX-512
// (vcvtt*2dq/qq): truncation toward zero, 16 or 8 lanes at a time, then the
// lanes the hardware marks "integer indefinite" (the type's minimum) fixed up
// to Cast's saturating rule: NaN gives 0, values at or past the type's maximum
// give the maximum (at or below its minimum the hardware value already is the
// minimum). Bit-exact with cast.cpp's scalar saturate().
//
// Callers check cast_int_avx512_supported() first (the int64 forms need AVX512DQ).
#ifndef SINGA_OPS_TENSOR_CAST_INT_AVX512_HPP
#define SINGA_OPS_TENSOR_CAST_INT_AVX512_HPP

#include "../common/runtime_option.hpp"

#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SINGA_CAST_INT_AVX512 1
#define SINGA_CAST_INT_TARGET __attribute__((target("avx512f,avx512dq")))
#endif

namespace singa {
namespace ops {
namespace tensor {

// True when this CPU has AVX-512F and DQ and the runtime option cpu.avx512 is not 0.
inline bool cast_int_avx512_supported() {
#ifdef SINGA_CAST_INT_AVX512
  static const bool on = [] {
    if (!ops::runtime_flag("cpu.avx512", true)) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }();
  return on;
#else
  return false;
#endif
}

#ifdef SINGA_CAST_INT_AVX512
// float -> int64, 8 lanes per step (8 floats widen to 8 int64).
SINGA_CAST_INT_TARGET inline void cast_f32_to_i64_avx512(const float* x, int64_t* y, int64_t n) {
  // 512-bit loads and compares of which the low 8 lanes count (the 256-bit
  // masked forms would need AVX512VL).
  const __m512 lim = _mm512_set1_ps(9.2233720368547758e18f);  // 2^63
  const __m512i maxv = _mm512_set1_epi64(std::numeric_limits<int64_t>::max());
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(__mmask16(m), x + i);
    // maskz forms: the plain ones trip GCC 12's -Wmaybe-uninitialized in its own headers.
    __m512i r = _mm512_maskz_cvttps_epi64(m, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 0)));
    r = _mm512_mask_mov_epi64(r, __mmask8(_mm512_cmp_ps_mask(v, lim, _CMP_GE_OQ)), maxv);
    r = _mm512_maskz_mov_epi64(__mmask8(~_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)), r);
    _mm512_mask_storeu_epi64(y + i, m, r);
  }
}

// float -> int32, 16 lanes per step.
SINGA_CAST_INT_TARGET inline void cast_f32_to_i32_avx512(const float* x, int32_t* y, int64_t n) {
  const __m512 lim = _mm512_set1_ps(2147483648.f);  // 2^31
  const __m512i maxv = _mm512_set1_epi32(std::numeric_limits<int32_t>::max());
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512i r = _mm512_maskz_cvttps_epi32(m, v);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, lim, _CMP_GE_OQ), maxv);
    r = _mm512_maskz_mov_epi32(__mmask16(~_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)), r);
    _mm512_mask_storeu_epi32(y + i, m, r);
  }
}

// double -> int64, 8 lanes per step.
SINGA_CAST_INT_TARGET inline void cast_f64_to_i64_avx512(const double* x, int64_t* y, int64_t n) {
  const __m512d lim = _mm512_set1_pd(9.2233720368547758e18);  // 2^63
  const __m512i maxv = _mm512_set1_epi64(std::numeric_limits<int64_t>::max());
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - i)) - 1);
    const __m512d v = _mm512_maskz_loadu_pd(m, x + i);
    __m512i r = _mm512_maskz_cvttpd_epi64(m, v);
    r = _mm512_mask_mov_epi64(r, _mm512_cmp_pd_mask(v, lim, _CMP_GE_OQ), maxv);
    r = _mm512_maskz_mov_epi64(__mmask8(~_mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q)), r);
    _mm512_mask_storeu_epi64(y + i, m, r);
  }
}
#endif

}  // namespace tensor
}  // namespace ops
}  // namespace singa
#endif
