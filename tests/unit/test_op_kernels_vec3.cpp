// The vector kernels behind the op matrix's pooling, Resize and Softmax rows
// (bench/ops) against plain scalar references written from the ONNX
// definitions: AveragePool's rows over odd shapes, strides, dilations, pads,
// ceil_mode and count_include_pad; GlobalMaxPool's plane maximum at every
// tail length; Resize's separable float rows; the AVX-512 Softmax and
// LogSoftmax rows against double precision.
#include "../../plugins/ops_nn/avg_pool_2d_f32.hpp"
#include "../../plugins/ops_nn/plane_max_f32.hpp"
#include "../../plugins/ops_reduce/softmax_f32.hpp"
#include "../../plugins/ops_tensor/resize_f32.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

std::vector<float> values(int64_t n, unsigned seed, float scale = 10.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// ONNX's output size along one axis, ceil_mode dropping a window that would
// start past the input and its begin padding.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

struct PoolCase {
  int64_t H, W, kh, kw, s, d, pb, pe;
  bool ceil_mode, include_pad;
};

TEST(OpKernelsVec3, AveragePoolRowsMatchScalarDefinition) {
  std::vector<PoolCase> cases;
  for (int64_t k : {1, 2, 3, 5})
    for (int64_t s : {1, 2, 3})
      for (int64_t d : {1, 2})
        for (int64_t p : {0, 1, 2})
          for (int ceil_mode = 0; ceil_mode < 2; ++ceil_mode)
            for (int inc = 0; inc < 2; ++inc) {
              if (p >= k) continue;  // pads must be smaller than the window
              cases.push_back({11, 13 + k, k, k == 5 ? 2 : k, s, d, p, p == 2 ? 1 : p, ceil_mode != 0, inc != 0});
            }
  cases.push_back({1, 37, 1, 4, 1, 1, 0, 3, false, true});   // 1-D, end padding only
  cases.push_back({28, 28, 3, 3, 1, 1, 1, 1, false, false});  // the op matrix's row
  for (const PoolCase& c : cases) {
    const int64_t OH = pool_out(c.H, c.kh, c.s, c.d, c.pb, c.pe, c.ceil_mode);
    const int64_t OW = pool_out(c.W, c.kw, c.s, c.d, c.pb, c.pe, c.ceil_mode);
    if (OH <= 0 || OW <= 0) continue;
    const std::vector<float> x = values(c.H * c.W, unsigned(c.H * 131 + c.kh * 7 + c.s));
    const singa::nn::PoolAxis h = singa::nn::pool_axis(c.H, OH, c.kh, c.s, c.d, c.pb, c.pe, c.include_pad);
    const singa::nn::PoolAxis w = singa::nn::pool_axis(c.W, OW, c.kw, c.s, c.d, c.pb, c.pe, c.include_pad);
    std::vector<float> buf(static_cast<size_t>(singa::nn::avg_pool_buffer_size(w))), y(static_cast<size_t>(OW));
    for (int64_t oh = 0; oh < OH; ++oh) {
      singa::nn::avg_pool_row_f32(x.data(), h, w, oh, buf.data(), y.data());
      for (int64_t ow = 0; ow < OW; ++ow) {
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t a = 0; a < c.kh; ++a)
          for (int64_t b = 0; b < c.kw; ++b) {
            const int64_t ih = oh * c.s - c.pb + a * c.d, iw = ow * c.s - c.pb + b * c.d;
            if (ih >= -c.pb && ih < c.H + c.pe && iw >= -c.pb && iw < c.W + c.pe) ++padded;
            if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
            sum += x[size_t(ih * c.W + iw)];
            ++inside;
          }
        const int64_t count = c.include_pad ? padded : inside;
        const double ref = count ? sum / double(count) : 0.0;
        EXPECT_NEAR(y[size_t(ow)], ref, 1e-5 * (1 + std::fabs(ref)))
            << "H " << c.H << " W " << c.W << " k " << c.kh << "x" << c.kw << " s " << c.s << " d " << c.d << " pads "
            << c.pb << "," << c.pe << " ceil " << c.ceil_mode << " include_pad " << c.include_pad << " at " << oh
            << "," << ow;
      }
    }
  }
}

TEST(OpKernelsVec3, PlaneMaxMatchesStdMaxAtEveryLength) {
  for (int64_t n = 1; n <= 70; ++n) {
    std::vector<float> x = values(n, unsigned(n));
    float ref = x[0];
    for (float v : x) ref = std::max(ref, v);
    EXPECT_EQ(singa::nn::plane_max_f32(x.data(), n), ref) << "n = " << n;
    // A NaN after the first element is passed over, as std::max does; one
    // at the start sticks.
    x[size_t(n - 1)] = std::numeric_limits<float>::quiet_NaN();
    if (n > 1) {
      EXPECT_FALSE(std::isnan(singa::nn::plane_max_f32(x.data(), n))) << "n = " << n;
    }
    x[0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(singa::nn::plane_max_f32(x.data(), n))) << "n = " << n;
  }
}

// Taps of `ntaps` random weights at clamped random positions around o * in / out.
singa::ops::tensor::AxisTapsF random_taps(int64_t in, int64_t out, int ntaps, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 1.f);
  singa::ops::tensor::AxisTapsF t;
  t.in = in, t.out = out, t.ntaps = ntaps;
  for (int64_t o = 0; o < out; ++o)
    for (int k = 0; k < ntaps; ++k) {
      t.idx.push_back(std::clamp<int64_t>(o * in / out + k - ntaps / 2, 0, in - 1));
      t.w.push_back(k == 0 && o % 3 == 0 ? 0.f : u(rng));  // some zero weights, as exact hits give
    }
  return t;
}

TEST(OpKernelsVec3, ResizeRowsMatchSeparableReference) {
  for (int ntaps : {1, 2, 4, 6})
    for (auto [H, W, OH, OW] : {std::array<int64_t, 4>{7, 9, 14, 18}, {5, 33, 3, 17}, {1, 1, 4, 3}, {16, 16, 16, 31}}) {
      const auto h = random_taps(H, OH, ntaps, unsigned(ntaps * 10 + H));
      const auto w = random_taps(W, OW, ntaps, unsigned(ntaps * 20 + W));
      const std::vector<float> x = values(H * W, unsigned(H * W));
      std::vector<float> buf(static_cast<size_t>(W)), y(static_cast<size_t>(OW));
      for (int64_t oh = 0; oh < OH; ++oh) {
        singa::ops::tensor::resize_row_f32(x.data(), h, w, oh, buf.data(), y.data());
        for (int64_t ow = 0; ow < OW; ++ow) {
          double ref = 0;
          for (int a = 0; a < ntaps; ++a)
            for (int b = 0; b < ntaps; ++b)
              ref += double(h.w[size_t(oh * ntaps + a)]) * double(w.w[size_t(ow * ntaps + b)]) *
                     double(x[size_t(h.idx[size_t(oh * ntaps + a)] * W + w.idx[size_t(ow * ntaps + b)])]);
          EXPECT_NEAR(y[size_t(ow)], ref, 2e-5 * (1 + std::fabs(ref)))
              << "ntaps " << ntaps << " " << H << "x" << W << " -> " << OH << "x" << OW << " at " << oh << "," << ow;
        }
      }
    }
}

TEST(OpKernelsVec3, GatherRowPicksIndices) {
  const std::vector<uint32_t> src = {5, 6, 7, 8};
  const std::vector<int64_t> idx = {3, 0, 0, 2, 1};
  std::vector<uint32_t> dst(idx.size());
  singa::ops::tensor::gather_row(src.data(), idx.data(), int64_t(idx.size()), dst.data());
  EXPECT_EQ(dst, (std::vector<uint32_t>{8, 5, 5, 7, 6}));
}

#ifdef SINGA_AVX512_BEGIN
TEST(OpKernelsVec3, SoftmaxRowsMatchDouble) {
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or cpu.avx512=0)";
  for (int64_t n : {1, 2, 15, 16, 17, 31, 128, 255, 256, 257, 300, 1000}) {
    const std::vector<float> x = values(n, unsigned(n), 20.f);
    double mx = -INFINITY, sum = 0;
    for (float v : x) mx = std::max(mx, double(v));
    for (float v : x) sum += std::exp(double(v) - mx);
    std::vector<float> y(static_cast<size_t>(n)), ly(static_cast<size_t>(n));
    singa::ops::reduce::softmax_row_avx512<false>(x.data(), y.data(), n);
    singa::ops::reduce::softmax_row_avx512<true>(x.data(), ly.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(double(x[size_t(i)]) - mx) / sum;
      const double lref = double(x[size_t(i)]) - mx - std::log(sum);
      // float's x - max carries up to half an ulp of |x - max|, which exp turns
      // into a relative error of that size.
      const double rel = 1e-6 + 1e-7 * std::fabs(double(x[size_t(i)]) - mx);
      EXPECT_NEAR(y[size_t(i)], ref, rel * ref + 1e-30) << "n " << n << " i " << i;
      EXPECT_NEAR(ly[size_t(i)], lref, 1e-5 * (1 + std::fabs(lref))) << "n " << n << " i " << i;
    }
    // In place, and a NaN anywhere makes every output NaN.
    std::vector<float> z = x;
    singa::ops::reduce::softmax_row_avx512<false>(z.data(), z.data(), n);
    EXPECT_EQ(z, y) << "n " << n;
    z = x;
    z[size_t(n / 2)] = std::numeric_limits<float>::quiet_NaN();
    singa::ops::reduce::softmax_row_avx512<false>(z.data(), z.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(std::isnan(z[size_t(i)])) << "n " << n << " i " << i;
  }
}

// A masked score row (a few live scores, the rest -10000 below them) gives
// exact zeros where the probability is below the least normal float, never a
// subnormal a following MatMul would crawl through.
TEST(OpKernelsVec3, SoftmaxWritesNoSubnormals) {
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or cpu.avx512=0)";
  for (int64_t n : {16, 37, 128}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = i % 3 == 0 ? 0.5f * float(i % 7) : -80.f - float(i % 30);
    std::vector<float> y(x.size());
    singa::ops::reduce::softmax_row_avx512<false>(x.data(), y.data(), n);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = y[size_t(i)];
      EXPECT_TRUE(v == 0.f || v >= std::numeric_limits<float>::min()) << "n " << n << " i " << i << ": " << v;
      total += v;
    }
    EXPECT_NEAR(total, 1.0, 1e-6) << "n " << n;
  }
}
#endif

}  // namespace
