// vec_math.hpp - exp, sigmoid, tanh, erf and GELU over float arrays, written so the
// compiler vectorizes them: libm's expf/tanhf are scalar calls, and in an
// LSTM step they cost as much as the matrix product. The build targets plain
// x86-64, so the array functions are cloned for AVX-512 and AVX2 and the
// loader picks the clone the CPU supports.
//
// Accuracy: exp is within 2 ulp of expf over [-86, 88.7] (Cephes' polynomial
// after a two-part range reduction; below -86 it gives e^-86, above 88.7 the
// largest finite value), which keeps sigmoid and tanh within ~1e-7 absolute
// of libm's.
#ifndef SINGA_PLUGINS_COMMON_VEC_MATH_HPP
#define SINGA_PLUGINS_COMMON_VEC_MATH_HPP

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SINGA_VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SINGA_VEC_CLONES
#endif

namespace singa {
namespace vec {

// Branch-free e^x for one float; inlined into the loops below.
inline float exp_one(float x) {
  x = x < -86.f ? -86.f : (x > 88.72283f ? 88.72283f : x);
  // n = round(x / ln 2) with the 1.5 * 2^23 trick (round-to-nearest mode).
  const float big = 12582912.f;
  const float n = (x * 1.44269504088896341f + big) - big;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln 2 split in two for an exact product
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  // 2^n, built in the exponent bits; n is within [-124, 128] after the clamp.
  const int32_t ni = int32_t(n);
  const int32_t bits = (ni + 126) << 23;  // 2^(n-1), so that n = 128 stays finite
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale * 2.f;
}

// A sum in 16 independent lanes (one running sum would wait on each add's
// latency; this order is also what the vector units do).
inline float lane_sum(const float* p, int64_t n) {
  float lanes[16] = {};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int l = 0; l < 16; ++l) lanes[l] += p[j + l];
  float s = 0;
  for (; j < n; ++j) s += p[j];
  for (int l = 0; l < 16; ++l) s += lanes[l];
  return s;
}

SINGA_VEC_CLONES inline void exp_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = exp_one(x[i]);
}

// 1 / (1 + e^-x): e^-x saturates to 0 or a huge finite value, never NaN.
SINGA_VEC_CLONES inline void sigmoid_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.f / (1.f + exp_one(-x[i]));
}

// tanh(x) = sign(x) * (1 - 2 / (e^{2|x|} + 1)); small |x| takes x - x^3/3 + 2x^5/15,
// where the formula would cancel.
SINGA_VEC_CLONES inline void tanh_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], a = v < 0.f ? -v : v;
    const float big = 1.f - 2.f / (exp_one(2.f * a) + 1.f);
    const float v2 = v * v;
    const float small = v * (1.f + v2 * (-0.333333333f + v2 * 0.133333333f));
    const float t = a < 0.0625f ? small : (v < 0.f ? -big : big);
    x[i] = t;
  }
}

// erf: the odd Taylor series below |x| = 0.5 (relative error < 1e-7 there),
// Abramowitz & Stegun 7.1.26 above (absolute error < 1.5e-7, where erf > 0.5).
SINGA_VEC_CLONES inline void erf_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], a = v < 0.f ? -v : v, v2 = v * v;
    const float series =
        1.1283791671f * v *
        (1.f + v2 * (-0.333333333f + v2 * (0.1f + v2 * (-0.0238095238f + v2 * (0.0046296296f + v2 * -0.000757575758f)))));
    const float t = 1.f / (1.f + 0.3275911f * a);
    const float poly =
        t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    const float tail = 1.f - poly * exp_one(-v2);
    x[i] = a < 0.5f ? series : (v < 0.f ? -tail : tail);
  }
}

// erf(v) as v P(v^2) / Q(v^2) on [-4, 4] (erf(4) = 1 - 1.5e-8), a rational
// fit of our own (least squares reweighted toward the minimax; absolute error
// < 4e-7 in float, relative error near 0 like the leading 2/sqrt(pi)). One
// division and 12 multiply-adds with no branch and no exp: for GELU, whose
// output x/2 (1 + erf) needs absolute accuracy only. NaN passes through.
inline float erf_rational(float v) {
  v = v < -4.f ? -4.f : (v > 4.f ? 4.f : v);
  const float s = v * v;
  float p = 1.9217498771e-08f;
  p = p * s - 1.9903195991e-06f;
  p = p * s + 1.5553332742e-04f;
  p = p * s + 4.2928882357e-03f;
  p = p * s + 5.2432935781e-02f;
  p = p * s + 2.1394071104e-01f;
  p = p * s + 1.1283786772e+00f;
  float q = 1.0979997198e-03f;
  q = q * s + 1.5550750802e-02f;
  q = q * s + 1.2079797021e-01f;
  q = q * s + 5.2292767523e-01f;
  q = q * s + 1.f;
  return v * p / q;
}

// erf_rational over an array (in place), branch-free: the Erf of float16 and
// bfloat16 values, whose 10- or 7-bit results it meets with room to spare.
SINGA_VEC_CLONES inline void erf_rational_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = erf_rational(x[i]);
}

// y = x / 2 (1 + erf(x / sqrt 2)), GELU with approximate "none", in one pass
// (y may alias x): a BERT encoder's four GELUs 0.27 -> 0.10 ms at 1 thread
// against the two-branch erf_inplace between separate scaling passes.
SINGA_VEC_CLONES inline void gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.f + erf_rational(v * 0.70710678118654752f));
  }
}

}  // namespace vec
}  // namespace singa
#endif
