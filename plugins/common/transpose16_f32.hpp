// transpose16_f32.hpp - the 16 x 16 float transpose in AVX-512 registers that
// the channels-last conversions of ops_nn share (im2row's input, the blocked
// depthwise convolution). Only for callers that checked fast::avx512().
#ifndef SINGA_PLUGINS_COMMON_TRANSPOSE16_F32_HPP
#define SINGA_PLUGINS_COMMON_TRANSPOSE16_F32_HPP

#include "avx512_region.hpp"

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace fast {

SINGA_AVX512_BEGIN

// r[i] = row i of a 16 x 16 block; afterwards r[j] = its column j.
// (maskz forms throughout: GCC 12's plain ones trip -Wuninitialized.)
inline void transpose16(__m512 r[16]) {
  const __mmask16 a16 = 0xFFFF;
  const __mmask8 a8 = 0xFF;
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_maskz_unpacklo_ps(a16, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_maskz_unpackhi_ps(a16, r[2 * i], r[2 * i + 1]);
  }
  auto lo = [&](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(a8, _mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  auto hi = [&](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(a8, _mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = lo(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = hi(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = lo(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = hi(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i) {
      t[8 * b + i] = _mm512_maskz_shuffle_f32x4(a16, r[8 * b + i], r[8 * b + i + 4], 0x88);
      t[8 * b + i + 4] = _mm512_maskz_shuffle_f32x4(a16, r[8 * b + i], r[8 * b + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_maskz_shuffle_f32x4(a16, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_f32x4(a16, t[i], t[i + 8], 0xdd);
  }
}

SINGA_AVX512_END

}  // namespace fast
}  // namespace singa
#endif
#endif
