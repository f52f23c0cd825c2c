// binary_half.hpp - Add, Sub, Mul and Div of float16 and bfloat16 tensors, 8
// lanes at a time: widen (vcvtph2ps, or a 16-bit shift for bfloat16), the
// float32 operation, round back to nearest even. The scalar loop computes the
// same float32 result and rounds it with sdk::half / sdk::bfloat16, so the
// bits agree; NaN lanes are rewritten to those types' encodings (F16C would
// keep the payload). Replaces a software conversion per element.
#ifndef SINGA_OPS_MATH_BINARY_HALF_HPP
#define SINGA_OPS_MATH_BINARY_HALF_HPP

#include "math_common.hpp"

#include <broadcast.hpp>
#include <half_convert_f32.hpp>

#include <algorithm>
#include <type_traits>

#ifdef SINGA_HAVE_F16C_PATH

namespace singa {
namespace ops {
namespace math {
namespace half_binary {

enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith K> __attribute__((target("avx2,f16c"))) inline __m256 apply8(__m256 a, __m256 b) {
  if constexpr (K == Arith::kAdd) return _mm256_add_ps(a, b);
  if constexpr (K == Arith::kSub) return _mm256_sub_ps(a, b);
  if constexpr (K == Arith::kMul) return _mm256_mul_ps(a, b);
  return _mm256_div_ps(a, b);
}

template <typename T> __attribute__((target("avx2,f16c"))) inline __m256 load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same<T, half>::value) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Eight floats rounded to T's bits as sdk::half / sdk::bfloat16 round them.
template <typename T> __attribute__((target("avx2,f16c"))) inline __m128i round8(__m256 v) {
  const __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
  const __m256i x = _mm256_castps_si256(v);
  if constexpr (std::is_same<T, half>::value) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i fixed = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(int16_t(0x8000))), _mm_set1_epi16(0x7e00));
    return _mm_blendv_epi8(h, fixed, nan16);
  } else {
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i b = _mm256_blendv_epi8(r, q, nan32);
    // 32-bit lanes holding 16-bit values: pack without saturation.
    const __m256i lo = _mm256_and_si256(b, _mm256_set1_epi32(0xffff));
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    return packed;
  }
}

// One broadcast run: z[i] = x[i*sx] op y[i*sy], sx/sy 0 or 1.
template <Arith K, typename T, typename Fn>
__attribute__((target("avx2,f16c"))) void run(const T* x, int64_t sx, const T* y, int64_t sy, T* z, int64_t n) {
  const auto* hx = reinterpret_cast<const uint16_t*>(x);
  const auto* hy = reinterpret_cast<const uint16_t*>(y);
  auto* hz = reinterpret_cast<uint16_t*>(z);
  const __m256 x0 = _mm256_set1_ps(float(x[0])), y0 = _mm256_set1_ps(float(y[0]));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = sx ? load8<T>(hx + i) : x0;
    const __m256 b = sy ? load8<T>(hy + i) : y0;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(hz + i), round8<T>(apply8<K>(a, b)));
  }
  const Fn fn;
  for (; i < n; ++i) z[i] = T(fn(float(x[sx * i]), float(y[sy * i])));
}

}  // namespace half_binary

// Whether the 8-lane paths run on this CPU.
inline bool half_binary_supported() { return vec::f16c_supported(); }

// out = a op b over numpy-broadcast a and b of T (half or bfloat16): long
// rows are cut into pieces so a same-shape pair still spreads over the pool.
template <half_binary::Arith K, typename T, typename Fn>
void half_binary_broadcast(const sdk::Context& ctx, const sdk::Tensor& a, const sdk::Tensor& b, const sdk::Tensor& out) {
  Broadcaster<2> bc(out.shape(), {a.shape(), b.shape()});
  if (bc.total() == 0) return;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  constexpr int64_t kPiece = 16384;
  const int64_t inner = bc.inner(), per_row = (inner + kPiece - 1) / kPiece;
  ctx.parallel_for(bc.rows() * per_row, std::max<int64_t>(1, kPiece / std::max<int64_t>(1, inner)),
                   [&](int64_t tb, int64_t te) {
                     for (int64_t t = tb; t < te; ++t) {
                       const int64_t r = t / per_row, s = (t % per_row) * kPiece, len = std::min(kPiece, inner - s);
                       bc.run_rows(r, r + 1, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t) {
                         half_binary::run<K, T, Fn>(pa + off[0] + s * st[0], st[0], pb + off[1] + s * st[1], st[1],
                                                    po + o + s, len);
                       });
                     }
                   });
}

}  // namespace math
}  // namespace ops
}  // namespace singa

#endif  // SINGA_HAVE_F16C_PATH
#endif
