// fast_exp.hpp - an exp() the compiler can vectorise, for the softmax family.
//
// libm's expf is a call per element, which keeps the softmax loops scalar.
// This one is branch-free: exp(x) = 2^n * e^r with n = round(x / ln2) and
// |r| <= ln2/2, e^r from its Taylor series to degree 7 (truncation error
// below 1e-8 relative, under half a float ulp); the result is within a few
// ulp of expf over the normal range. NaN propagates, overflow gives +inf,
// underflow a subnormal or 0.
#ifndef SINGA_OPS_REDUCE_FAST_EXP_HPP
#define SINGA_OPS_REDUCE_FAST_EXP_HPP

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace singa {
namespace ops {
namespace reduce {

inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln2 split so that n * kLn2Hi is exact for the n that can occur.
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  // Past these bounds expf is +inf or rounds to 0 anyway; clamping keeps n
  // small enough for the exponent bits below. A NaN passes the clamps and
  // poisons r, so it comes out NaN. No other selects: those would turn into
  // branches and stop the loops around this from vectorising.
  const float xc = x > 100.f ? 100.f : (x < -104.f ? -104.f : x);
  const float t = xc * kLog2e;
  // n = round(t) without a float-to-int conversion (undefined for NaN): adding
  // 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
  constexpr float kRound = 12582912.f;
  const float tr = t + kRound;
  int32_t n;
  std::memcpy(&n, &tr, 4);
  n -= 0x4B400000;
  const float nf = tr - kRound;
  const float r = (xc - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  // 2^n as two factors, each a normal float for n in [-150, 145]; their
  // product overflows to inf or rounds to a subnormal or 0 as expf does.
  const int32_t n1 = n >> 1, n2 = n - n1;
  const uint32_t b1 = uint32_t(n1 + 127) << 23, b2 = uint32_t(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return (p * s1) * s2;
}

// double keeps libm's exp: the double paths are not the hot ones.
inline double fast_exp(double x) { return std::exp(x); }

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
