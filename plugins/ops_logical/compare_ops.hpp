// compare_ops.hpp - the comparison functors of Equal, Less, Greater,
// LessOrEqual and GreaterOrEqual and their vector row loops, shared by the
// standard ops (compare.cpp) and CastHalfCompare (cast_half_compare.cpp).
#ifndef SINGA_OPS_LOGICAL_COMPARE_OPS_HPP
#define SINGA_OPS_LOGICAL_COMPARE_OPS_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "half_convert_f32.hpp"

namespace singa {
namespace ops {
namespace logical {

// Each op's AVX compare predicate (ordered: false when either side is NaN),
// for the float16 loop below.
#ifdef SINGA_HAVE_F16C_PATH
#define SINGA_CMP_PREDICATE(p) static constexpr int kPred = p;
#else
#define SINGA_CMP_PREDICATE(p)
#endif

struct EqualOp {
  SINGA_CMP_PREDICATE(_CMP_EQ_OQ)
  template <typename C> bool operator()(C a, C b) const { return a == b; }
};
struct LessOp {
  SINGA_CMP_PREDICATE(_CMP_LT_OQ)
  template <typename C> bool operator()(C a, C b) const { return a < b; }
};
struct GreaterOp {
  SINGA_CMP_PREDICATE(_CMP_GT_OQ)
  template <typename C> bool operator()(C a, C b) const { return a > b; }
};
struct LessEqualOp {
  SINGA_CMP_PREDICATE(_CMP_LE_OQ)
  template <typename C> bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterEqualOp {
  SINGA_CMP_PREDICATE(_CMP_GE_OQ)
  template <typename C> bool operator()(C a, C b) const { return a >= b; }
};

// Whether the AVX2 loops below may run on this CPU.
inline bool has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

// One run of float / double comparisons, `sx`/`sy` 0 (repeat) or 1. Compiled
// for AVX2 so the loops vectorize (compare, narrow to bytes) instead of the
// baseline's SSE2 scalar loop; results are those of the C++ operators.
template <typename Cmp, typename T>
__attribute__((target("avx2"))) void compare_run_avx2(const T* x, int64_t sx, const T* y, int64_t sy, uint8_t* z,
                                                      int64_t n) {
  const Cmp cmp;
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(x[i], y[i]));
  } else if (sx == 1) {
    const T yv = y[0];
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(x[i], yv));
  } else if (sy == 1) {
    const T xv = x[0];
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(xv, y[i]));
  } else {
    const uint8_t v = uint8_t(cmp(x[0], y[0]));
    for (int64_t i = 0; i < n; ++i) z[i] = v;
  }
}

// The float value of a float16 operand: a half as it is, a float32 rounded
// to half first (nearest even), as a Cast to float16 would store it.
template <typename T> inline float half_value(T v) {
  if constexpr (std::is_same<T, float>::value)
    return sdk::half::to_float(sdk::half::from_float(v));
  else
    return float(v);
}

#ifdef SINGA_HAVE_F16C_PATH
// Bytes 0/1 of the 8 bits of a compare mask, bit i in byte i.
struct MaskBytes {
  uint64_t v[256];
  constexpr MaskBytes() : v() {
    for (int m = 0; m < 256; ++m)
      for (int b = 0; b < 8; ++b) v[m] |= uint64_t((m >> b) & 1) << (8 * b);
  }
};
inline constexpr MaskBytes kMaskBytes;

// 8 lanes of half_value(): vcvtph2ps of halves; float32 through vcvtps2ph
// (nearest even, as sdk::half) and back. A NaN stays a NaN either way (only
// its payload may differ, which no ordered compare sees).
template <typename T> __attribute__((target("avx2,f16c"))) inline __m256 half_values8(const T* p) {
  if constexpr (std::is_same<T, float>::value)
    return _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(p), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  else
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// One run of float16 comparisons, 8 at a time: both operands' half values as
// float (exact), an ordered compare, the mask's bits as bytes. X and Y are
// sdk::half or float (a float32 operand compares as its half rounding).
// `sx`/`sy` 0 (repeat) or 1.
template <typename Cmp, typename X, typename Y>
__attribute__((target("avx2,f16c"))) void compare_run_f16c(const X* x, int64_t sx, const Y* y, int64_t sy, uint8_t* z,
                                                           int64_t n) {
  if (n <= 0) return;
  const __m256 x0 = _mm256_set1_ps(half_value(x[0])), y0 = _mm256_set1_ps(half_value(y[0]));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = sx ? half_values8(x + i) : x0;
    const __m256 b = sy ? half_values8(y + i) : y0;
    const uint64_t bytes = kMaskBytes.v[_mm256_movemask_ps(_mm256_cmp_ps(a, b, Cmp::kPred))];
    std::memcpy(z + i, &bytes, 8);
  }
  const Cmp cmp;
  for (; i < n; ++i) z[i] = uint8_t(cmp(half_value(x[sx * i]), half_value(y[sy * i])));
}

// One run of bfloat16 comparisons, 8 at a time: a bfloat16 is the top half
// of its float32 (exact, NaN stays NaN), so a shift widens it.
__attribute__((target("avx2"))) inline __m256 bf16_values8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

template <typename Cmp>
__attribute__((target("avx2"))) void compare_run_bf16(const sdk::bfloat16* x, int64_t sx, const sdk::bfloat16* y,
                                                      int64_t sy, uint8_t* z, int64_t n) {
  if (n <= 0) return;
  const auto* bx = reinterpret_cast<const uint16_t*>(x);
  const auto* by = reinterpret_cast<const uint16_t*>(y);
  const __m256 x0 = _mm256_set1_ps(float(x[0])), y0 = _mm256_set1_ps(float(y[0]));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = sx ? bf16_values8(bx + i) : x0;
    const __m256 b = sy ? bf16_values8(by + i) : y0;
    const uint64_t bytes = kMaskBytes.v[_mm256_movemask_ps(_mm256_cmp_ps(a, b, Cmp::kPred))];
    std::memcpy(z + i, &bytes, 8);
  }
  const Cmp cmp;
  for (; i < n; ++i) z[i] = uint8_t(cmp(float(x[sx * i]), float(y[sy * i])));
}
#endif

}  // namespace logical
}  // namespace ops
}  // namespace singa
#endif
