#include "qdq_convert.hpp"

#include <avx512_region.hpp>
#include <unary_f32.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace singa {
namespace nn {
namespace qdq {
namespace {

template <class Q>
void quantize_scalar(const float* x, Q* y, int64_t n, float scale, int32_t zp) {
  const float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / scale) + float(zp);
    // NaN has no integer image; it maps to the zero point, the image of 0.
    y[i] = v != v ? Q(zp) : Q(std::min(std::max(v, lo), hi));
  }
}

template <class Q>
void dequantize_scalar(const Q* x, float* y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float(x[i]) - float(zp)) * scale;
}

void range_scalar(const float* x, int64_t n, float& lo, float& hi, int64_t& nans) {
  float l = 0.0f, h = 0.0f;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    bad += v != v;
    l = v < l ? v : l;
    h = v > h ? v : h;
  }
  lo = l, hi = h, nans = bad;
}

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN

// Two accumulators each, so the min/max latency does not bound the loop;
// the masked tail loads zeros, which the range includes anyway.
void range_avx512(const float* x, int64_t n, float& lo, float& hi, int64_t& nans) {
  const __mmask16 all = 0xFFFF;  // maskz forms: GCC 12's plain ones trip -Wmaybe-uninitialized
  __m512 l0 = _mm512_setzero_ps(), l1 = l0, h0 = l0, h1 = l0;
  int64_t bad = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    bad += __builtin_popcount(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)) +
           __builtin_popcount(_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q));
    l0 = _mm512_maskz_min_ps(all, l0, a), h0 = _mm512_maskz_max_ps(all, h0, a);
    l1 = _mm512_maskz_min_ps(all, l1, b), h1 = _mm512_maskz_max_ps(all, h1, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m, x + i);
    bad += __builtin_popcount(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q));
    l0 = _mm512_maskz_min_ps(all, l0, a), h0 = _mm512_maskz_max_ps(all, h0, a);
  }
  alignas(64) float ls[16], hs[16];
  _mm512_store_ps(ls, _mm512_maskz_min_ps(all, l0, l1));
  _mm512_store_ps(hs, _mm512_maskz_max_ps(all, h0, h1));
  lo = *std::min_element(ls, ls + 16);
  hi = *std::max_element(hs, hs + 16);
  nans = bad;
}

template <bool kSigned>
void quantize_avx512(const float* x, void* out, int64_t n, float scale, int32_t zp) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(float(zp));
  const __m512 lo = _mm512_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm512_set1_ps(kSigned ? 127.0f : 255.0f);
  auto* y = static_cast<int8_t*>(out);
  const __mmask16 all = 0xFFFF;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    // maskz forms throughout: GCC 12's plain ones trip -Wmaybe-uninitialized.
    __m512 r = _mm512_maskz_roundscale_ps(all, _mm512_div_ps(v, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_add_ps(r, z);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), z);
    r = _mm512_maskz_min_ps(all, _mm512_maskz_max_ps(all, r, lo), hi);
    const __m512i q = _mm512_maskz_cvtps_epi32(all, r);  // integral already: exact
    if (kSigned)
      _mm512_mask_cvtsepi32_storeu_epi8(y + i, m, q);
    else
      _mm512_mask_cvtusepi32_storeu_epi8(y + i, m, q);
  }
}

template <bool kSigned>
void dequantize_avx512(const void* in, float* y, int64_t n, float scale, int32_t zp) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(float(zp));
  const auto* x = static_cast<const uint8_t*>(in);
  const __mmask16 all = 0xFFFF;
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = std::min<int64_t>(16, n - i);
    __m128i b;
    if (k == 16) {
      b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    } else {  // byte-masked loads need AVX512BW; the tail goes through a buffer
      alignas(16) uint8_t buf[16] = {};
      std::memcpy(buf, x + i, size_t(k));
      b = _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
    }
    const __m512i w = kSigned ? _mm512_maskz_cvtepi8_epi32(all, b) : _mm512_maskz_cvtepu8_epi32(all, b);
    const __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_cvtepi32_ps(all, w), z), s);
    _mm512_mask_storeu_ps(y + i, __mmask16((1u << k) - 1), v);
  }
}

SINGA_AVX512_END
#endif

bool use_avx512() { return vec::unary_avx512(); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SINGA_HAVE_VBMI_LOOKUP 1
// Bit 7 of each byte picks the table half, bits 0-6 the byte within it
// (vpermi2b indexes two 64-byte registers).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookup_vbmi(const uint8_t* x, uint8_t* y, int64_t n,
                                                                         const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
  if (i < n) {
    const __mmask64 m = ~uint64_t(0) >> (64 - (n - i));  // 0 < n - i < 64
    const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
}

bool use_vbmi() {
  static const bool ok = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
  return ok && use_avx512();
}
#endif

}  // namespace

void range_with_zero(const float* x, int64_t n, float& lo, float& hi, int64_t& nans) {
#ifdef SINGA_AVX512_BEGIN
  if (use_avx512()) return range_avx512(x, n, lo, hi, nans);
#endif
  range_scalar(x, n, lo, hi, nans);
}

void lookup_bytes(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
#ifdef SINGA_HAVE_VBMI_LOOKUP
  if (use_vbmi()) return lookup_vbmi(x, y, n, table);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

void quantize_u8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) {
#ifdef SINGA_AVX512_BEGIN
  if (use_avx512()) return quantize_avx512<false>(x, y, n, scale, zp);
#endif
  quantize_scalar(x, y, n, scale, zp);
}

void quantize_s8(const float* x, int8_t* y, int64_t n, float scale, int32_t zp) {
#ifdef SINGA_AVX512_BEGIN
  if (use_avx512()) return quantize_avx512<true>(x, y, n, scale, zp);
#endif
  quantize_scalar(x, y, n, scale, zp);
}

void dequantize_u8(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp) {
#ifdef SINGA_AVX512_BEGIN
  if (use_avx512()) return dequantize_avx512<false>(x, y, n, scale, zp);
#endif
  dequantize_scalar(x, y, n, scale, zp);
}

void dequantize_s8(const int8_t* x, float* y, int64_t n, float scale, int32_t zp) {
#ifdef SINGA_AVX512_BEGIN
  if (use_avx512()) return dequantize_avx512<true>(x, y, n, scale, zp);
#endif
  dequantize_scalar(x, y, n, scale, zp);
}

}  // namespace qdq
}  // namespace nn
}  // namespace singa
