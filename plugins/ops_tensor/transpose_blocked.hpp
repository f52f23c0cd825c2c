// transpose_blocked.hpp - permutations of 4- and 2-byte elements whose last axis
// moves (NCHW <-> NHWC and the like), as 16 x 16 blocks transposed in AVX-512
// registers (plugins/common/transpose16_f32.hpp): every load and store is a
// whole 64-byte line, where an element-wise tile copy reads one element per
// line on one side. Other permutations and element sizes stay with
// strided_copy.
#ifndef SINGA_OPS_TENSOR_TRANSPOSE_BLOCKED_HPP
#define SINGA_OPS_TENSOR_TRANSPOSE_BLOCKED_HPP

#include "cast_int_avx512.hpp"
#include "common.hpp"
#include "transpose16_f32.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN

// One block: rows b in [0, nb) of `src` (row stride sb, 16 contiguous a's
// each, na of them valid) land as rows a in [0, na) of `dst` (row stride da,
// nb contiguous b's each).
inline void transpose_block16(const float* src, int64_t sb, int64_t na, int64_t nb, float* dst, int64_t da) {
  __m512 r[16];
  const __mmask16 ma = __mmask16((1u << na) - 1u), mb = __mmask16((1u << nb) - 1u);
  if (na == 16 && nb == 16) {
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * sb);
    fast::transpose16(r);
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + j * da, r[j]);
    return;
  }
  for (int i = 0; i < 16; ++i) r[i] = i < nb ? _mm512_maskz_loadu_ps(ma, src + i * sb) : _mm512_setzero_ps();
  fast::transpose16(r);
  for (int j = 0; j < na; ++j) _mm512_mask_storeu_ps(dst + j * da, mb, r[j]);
}

// The same for 2-byte elements (float16, bfloat16, int16): the 16-bit lanes
// widened to 32 (zero-extended, so every bit pattern survives), transposed as
// floats, narrowed back. Ragged edges copy element by element.
inline void transpose_block16_u16(const uint16_t* src, int64_t sb, int64_t na, int64_t nb, uint16_t* dst, int64_t da) {
  if (na < 16 || nb < 16) {
    for (int64_t j = 0; j < na; ++j)
      for (int64_t i = 0; i < nb; ++i) dst[j * da + i] = src[i * sb + j];
    return;
  }
  __m512 r[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_castsi512_ps(
        _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * sb))));
  fast::transpose16(r);
  for (int j = 0; j < 16; ++j)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j * da),
                        _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_castps_si512(r[j])));
}

SINGA_AVX512_END
#endif

// Output `out_shape` (contiguous) with source strides `src_strides` (elements)
// of `es`-byte elements (2 or 4): runs it as 16 x 16 blocks and returns true
// when the output's last axis is not the source's contiguous one and both are
// at least 16 long; false (nothing written) otherwise.
inline bool transpose_blocked(const Context& ctx, const Shape& out_shape, const Shape& src_strides, const void* src,
                              void* dst, size_t es) {
#ifdef SINGA_AVX512_BEGIN
  if ((es != 2 && es != 4) || !cast_int_avx512_supported()) return false;
  // Coalesce: drop unit dims; merge a dim into its outer neighbour when both
  // the (contiguous) output and the source stay linear across the pair.
  std::vector<int64_t> dims, ss;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 0) return false;
    if (out_shape[i] == 1) continue;
    if (!dims.empty() && ss.back() == src_strides[i] * out_shape[i]) {
      dims.back() *= out_shape[i];
      ss.back() = src_strides[i];
      continue;
    }
    dims.push_back(out_shape[i]);
    ss.push_back(src_strides[i]);
  }
  const size_t r = dims.size();
  if (r < 2 || ss.back() == 1) return false;
  size_t p = r;
  for (size_t i = 0; i + 1 < r; ++i)
    if (ss[i] == 1) p = i;
  if (p == r) return false;
  const int64_t B = dims.back(), A = dims[p], sb = ss.back();
  if (A < 16 || B < 16) return false;
  std::vector<int64_t> ds(r, 1);
  for (size_t k = r - 1; k-- > 0;) ds[k] = ds[k + 1] * dims[k + 1];
  const int64_t da = ds[p];
  // Tasks: (other outer index, 16-row strip of a, 64-wide run of b).
  const int64_t strips_a = (A + 15) / 16, runs_b = (B + 63) / 64;
  int64_t rest = 1;
  for (size_t i = 0; i + 1 < r; ++i)
    if (i != p) rest *= dims[i];
  ctx.parallel_for(rest * strips_a * runs_b, 8, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      int64_t rem = t / (strips_a * runs_b);
      const int64_t a0 = (t / runs_b) % strips_a * 16, b_run = t % runs_b * 64;
      int64_t doff = 0, soff = 0;
      for (size_t i = r - 1; i-- > 0;) {
        if (i == p) continue;
        const int64_t idx = rem % dims[i];
        rem /= dims[i];
        doff += idx * ds[i];
        soff += idx * ss[i];
      }
      const int64_t na = std::min<int64_t>(16, A - a0), b_end = std::min(B, b_run + 64);
      for (int64_t b0 = b_run; b0 < b_end; b0 += 16) {
        const int64_t nb = std::min<int64_t>(16, b_end - b0), so = soff + a0 + b0 * sb, dof = doff + a0 * da + b0;
        if (es == 4)
          transpose_block16(static_cast<const float*>(src) + so, sb, na, nb, static_cast<float*>(dst) + dof, da);
        else
          transpose_block16_u16(static_cast<const uint16_t*>(src) + so, sb, na, nb, static_cast<uint16_t*>(dst) + dof,
                                da);
      }
    }
  });
  return true;
#else
  (void)ctx, (void)out_shape, (void)src_strides, (void)src, (void)dst, (void)es;
  return false;
#endif
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
#endif
