#include "qdq_conv_transpose.hpp"

#include <transpose16_f32.hpp>
#include <unary_f32.hpp>

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace singa {
namespace nn {
namespace {

template <class T>
void transpose_scalar(const T* in, int64_t is, T* out, int64_t os, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = c0; j < c1; ++j) out[j * os + i] = in[i * is + j];
}

#if defined(__SSE2__)
// 16 rows of 16 bytes to 16 columns: interleaving bytes, then pairs, quads
// and halves of registers, each step doubling the run of one column.
void transpose16_bytes(const uint8_t* in, int64_t is, uint8_t* out, int64_t os) {
  __m128i x[16], t[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * is));
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm_unpacklo_epi8(x[2 * k], x[2 * k + 1]);
    t[2 * k + 1] = _mm_unpackhi_epi8(x[2 * k], x[2 * k + 1]);
  }
  for (int b = 0; b < 4; ++b) {  // 16-bit units: column j of rows 4b..4b+3
    x[4 * b] = _mm_unpacklo_epi16(t[4 * b], t[4 * b + 2]);
    x[4 * b + 1] = _mm_unpackhi_epi16(t[4 * b], t[4 * b + 2]);
    x[4 * b + 2] = _mm_unpacklo_epi16(t[4 * b + 1], t[4 * b + 3]);
    x[4 * b + 3] = _mm_unpackhi_epi16(t[4 * b + 1], t[4 * b + 3]);
  }
  for (int b = 0; b < 2; ++b)  // 32-bit units: column j of rows 8b..8b+7
    for (int k = 0; k < 4; ++k) {
      t[8 * b + 2 * k] = _mm_unpacklo_epi32(x[8 * b + k], x[8 * b + k + 4]);
      t[8 * b + 2 * k + 1] = _mm_unpackhi_epi32(x[8 * b + k], x[8 * b + k + 4]);
    }
  for (int k = 0; k < 8; ++k) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * k) * os), _mm_unpacklo_epi64(t[k], t[k + 8]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * k + 1) * os), _mm_unpackhi_epi64(t[k], t[k + 8]));
  }
}
#endif

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
void transpose16_floats(const float* in, int64_t is, float* out, int64_t os) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * is);
  fast::transpose16(r);
  for (int j = 0; j < 16; ++j) _mm512_storeu_ps(out + j * os, r[j]);
}
SINGA_AVX512_END
#endif

// Whole 16 x 16 tiles through `tile`, the right and bottom edges scalar.
// Each tile reads 16 bytes of 16 input lines and writes 16 bytes of 16
// output lines; the sweep keeps the fewer of the two sets of lines in cache
// until the neighbouring tiles have used the rest of them.
template <class T, class Tile>
void tiled(const T* in, int64_t is, T* out, int64_t os, int64_t rows, int64_t cols, Tile tile) {
  const int64_t R = rows - rows % 16, C = cols - cols % 16;
  if (rows <= cols) {
    for (int64_t j = 0; j < C; j += 16)
      for (int64_t i = 0; i < R; i += 16) tile(in + i * is + j, is, out + j * os + i, os);
  } else {
    for (int64_t i = 0; i < R; i += 16)
      for (int64_t j = 0; j < C; j += 16) tile(in + i * is + j, is, out + j * os + i, os);
  }
  transpose_scalar(in, is, out, os, 0, R, C, cols);
  transpose_scalar(in, is, out, os, R, rows, 0, cols);
}

}  // namespace

void transpose_bytes(const void* in, int64_t is, void* out, int64_t os, int64_t rows, int64_t cols) {
  const auto* a = static_cast<const uint8_t*>(in);
  auto* b = static_cast<uint8_t*>(out);
#if defined(__SSE2__)
  tiled(a, is, b, os, rows, cols, transpose16_bytes);
#else
  transpose_scalar(a, is, b, os, 0, rows, 0, cols);
#endif
}

void transpose_floats(const float* in, int64_t is, float* out, int64_t os, int64_t rows, int64_t cols) {
#ifdef SINGA_AVX512_BEGIN
  if (vec::unary_avx512()) return tiled(in, is, out, os, rows, cols, transpose16_floats);
#endif
  transpose_scalar(in, is, out, os, 0, rows, 0, cols);
}

}  // namespace nn
}  // namespace singa
