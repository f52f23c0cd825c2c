// The F16C float32 <-> float16 conversions (half_convert_f32.hpp) against
// sdk::half's scalar conversion, bit for bit, and the vector sin/cos
// (sincos_f32.hpp) against double-precision libm, at every tail length and
// over the special values (NaN payloads, infinities, subnormals, ties).
#include "../../plugins/common/half_convert_f32.hpp"
#include "../../plugins/common/sincos_f32.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Floats that probe every branch of the half encoder: ties at normal and
// subnormal precision, the overflow edge, NaNs with payloads, signed zeros.
std::vector<float> special_floats() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, -65520.f, 1e9f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::ldexp(1.f, -24), std::ldexp(1.f, -25), std::ldexp(1.5f, -25), std::ldexp(3.f, -26),
                          std::ldexp(1.f, -14), std::ldexp(1023.5f, -24), std::ldexp(1.f, -26), 1e-30f, -1e-30f};
  // Halfway cases between neighbouring halves, odd and even.
  for (uint32_t m : {0x1000u, 0x3000u, 0x0fffu, 0x1001u}) v.push_back(from_bits(0x3f800000u | m));
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7fbfffffu, 0x7fe00000u}) v.push_back(from_bits(nan));
  return v;
}

TEST(OpKernelsVec2, FloatToHalfMatchesScalarBitForBit) {
  if (!singa::vec::f16c_supported()) GTEST_SKIP() << "no F16C on this CPU";
  std::vector<float> x = special_floats();
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) x.push_back(from_bits(uint32_t(rng())));  // every exponent, NaNs included
  for (int i = 0; i < 20000; ++i) x.push_back(std::uniform_real_distribution<float>(-70000.f, 70000.f)(rng));
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(15), size_t(17), x.size()}) {
    std::vector<uint16_t> got(n), want(n);
    singa::vec::f32_to_f16_f16c(x.data(), got.data(), int64_t(n));
    singa::vec::f32_to_f16_scalar(x.data(), want.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], want[i]) << "n = " << n << ", x bits = 0x" << std::hex << bits_of(x[i]);
  }
}

TEST(OpKernelsVec2, HalfToFloatMatchesScalarForEveryHalf) {
  if (!singa::vec::f16c_supported()) GTEST_SKIP() << "no F16C on this CPU";
  std::vector<uint16_t> h(65536 + 3);
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i);
  std::vector<float> got(h.size()), want(h.size());
  singa::vec::f16_to_f32_f16c(h.data(), got.data(), int64_t(h.size()));
  singa::vec::f16_to_f32_scalar(h.data(), want.data(), int64_t(h.size()));
  for (size_t i = 0; i < h.size(); ++i)
    ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "half bits 0x" << std::hex << h[i];
}

// |got - exact| in units of the last place of the exact float result.
double ulp_error(float got, double exact) {
  const float e = float(exact);
  const double ulp = std::ldexp(1.0, std::ilogb(e == 0.f ? std::numeric_limits<float>::min() : e) - 23);
  return std::fabs(double(got) - exact) / std::max(ulp, std::ldexp(1.0, -149));
}

TEST(OpKernelsVec2, SinCosWithinTwoUlpOfDouble) {
  std::vector<float> x;
  std::mt19937 rng(3);
  for (int i = 0; i < 50000; ++i) x.push_back(std::uniform_real_distribution<float>(-10.f, 10.f)(rng));
  for (int i = 0; i < 20000; ++i) x.push_back(std::uniform_real_distribution<float>(-8192.f, 8192.f)(rng));
  for (int i = 0; i < 2000; ++i) x.push_back(std::uniform_real_distribution<float>(-1e-3f, 1e-3f)(rng));
  for (int k = -20; k <= 20; ++k) x.push_back(float(k * M_PI / 2));  // results near 0 and +-1
  for (size_t n : {size_t(1), size_t(5), size_t(8), size_t(13), x.size()}) {
    std::vector<float> s(n), c(n);
    singa::vec::sin_f32(x.data(), s.data(), int64_t(n));
    singa::vec::cos_f32(x.data(), c.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      // Near a zero of the function the float argument's own rounding dominates;
      // an absolute bound of 2^-24 (below one ulp of 1) covers that.
      const double es = std::sin(double(x[i])), ec = std::cos(double(x[i]));
      EXPECT_TRUE(ulp_error(s[i], es) <= 2.0 || std::fabs(s[i] - es) < 6e-8) << "sin(" << x[i] << ") = " << s[i];
      EXPECT_TRUE(ulp_error(c[i], ec) <= 2.0 || std::fabs(c[i] - ec) < 6e-8) << "cos(" << x[i] << ") = " << c[i];
    }
  }
}

TEST(OpKernelsVec2, SinCosSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.f, -0.f, inf, -inf, nan, 1e6f, -3e7f, 1e-40f, 8192.f, 8193.f, 0.5f};
  std::vector<float> s(x.size()), c(x.size());
  singa::vec::sin_f32(x.data(), s.data(), int64_t(x.size()));
  singa::vec::cos_f32(x.data(), c.data(), int64_t(x.size()));
  EXPECT_EQ(bits_of(s[0]), bits_of(0.f));
  EXPECT_EQ(bits_of(s[1]), bits_of(-0.f));
  EXPECT_EQ(c[0], 1.f);
  for (size_t i : {size_t(2), size_t(3), size_t(4)}) EXPECT_TRUE(std::isnan(s[i]) && std::isnan(c[i])) << x[i];
  // Large arguments go through libm, so they equal it exactly.
  for (size_t i = 5; i < x.size(); ++i) {
    if (std::fabs(x[i]) > 8192.f) {
      EXPECT_EQ(s[i], std::sin(x[i]));
      EXPECT_EQ(c[i], std::cos(x[i]));
    }
  }
  EXPECT_EQ(s[7], 1e-40f);  // subnormal: sin(x) = x
}

}  // namespace
