// The plain conv nets' small pieces (issue 33: DenseNet, GoogLeNet, U-Net, a
// mel front end): 1-D convs with long kernels and large strides (a single
// image split by output rows over the pool), 3x3 convs of up to 256 input
// channels on the Winograd path, odd and small channel counts, groups,
// one-sided pads; MaxPool windows that reach into the padding or past the
// end (ceil_mode), NaN and -inf included; BatchNormalization -> activation
// fused into one node. Every output is checked against a plain evaluation
// written here (doubles for the arithmetic, the scalar first-tap rule for
// MaxPool), at 1 to 3 threads.
#include "test_util.hpp"
#include "model_builder.hpp"
#include "run_threads.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::f32_tensor;
using testing_util::prepare_at;
using testing_util::random_values;
using testing_util::run_threads;

namespace {

int64_t numel(const singa::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// One Conv (1-D or 2-D), optionally followed by Relu.
struct ConvCase {
  int64_t N = 1, C = 3, M = 5, group = 1;
  std::vector<int64_t> in{9, 9}, k{3, 3}, s{1, 1}, pb{1, 1}, pe{1, 1};
  bool relu = false;
  std::vector<int64_t> out() const {
    std::vector<int64_t> o;
    for (size_t i = 0; i < in.size(); ++i) o.push_back((in[i] + pb[i] + pe[i] - k[i]) / s[i] + 1);
    return o;
  }
  singa::Shape x_shape() const {
    singa::Shape sh{N, C};
    sh.insert(sh.end(), in.begin(), in.end());
    return sh;
  }
  singa::Shape y_shape() const {
    singa::Shape sh{N, M};
    for (int64_t d : out()) sh.push_back(d);
    return sh;
  }
  singa::Shape w_shape() const {
    singa::Shape sh{M, C / group};
    sh.insert(sh.end(), k.begin(), k.end());
    return sh;
  }
};

// The convolution from its definition, in doubles; 1-D cases as H = 1.
std::vector<double> conv_reference(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& b) {
  const bool one = c.in.size() == 1;
  const int64_t H = one ? 1 : c.in[0], W = c.in.back(), KH = one ? 1 : c.k[0], KW = c.k.back();
  const int64_t SH = one ? 1 : c.s[0], SW = c.s.back(), PH = one ? 0 : c.pb[0], PW = c.pb.back();
  const std::vector<int64_t> o = c.out();
  const int64_t OH = one ? 1 : o[0], OW = o.back(), Cg = c.C / c.group, Mg = c.M / c.group;
  std::vector<double> y;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double v = b[size_t(m)];
          const int64_t g = m / Mg;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * SH - PH + kh, iw = ow * SW - PW + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t cin = g * Cg + ci;
                v += double(w[size_t(((m * Cg + ci) * KH + kh) * KW + kw)]) *
                     x[size_t(((n * c.C + cin) * H + ih) * W + iw)];
              }
          y.push_back(c.relu ? std::max(0.0, v) : v);
        }
  return y;
}

void check_conv(const ConvCase& c, unsigned seed, double tolerance = 1e-4,
                const std::map<std::string, std::string>& options = {}) {
  const std::vector<float> x = random_values(size_t(numel(c.x_shape())), seed, 1.f);
  const std::vector<float> w = random_values(size_t(numel(c.w_shape())), seed + 1, 0.5f);
  const std::vector<float> b = random_values(size_t(c.M), seed + 2, 0.5f);
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, c.x_shape());
  m.initializer("w", f32_tensor(c.w_shape(), w)).initializer("b", f32_tensor({c.M}, b));
  m.node("Conv", {"x", "w", "b"}, {c.relu ? "c" : "y"}, "conv");
  std::vector<int64_t> pads = c.pb;
  pads.insert(pads.end(), c.pe.begin(), c.pe.end());
  add_ints(m.last(), "pads", pads);
  add_ints(m.last(), "strides", c.s);
  add_ints(m.last(), "kernel_shape", c.k);
  add_int(m.last(), "group", c.group);
  if (c.relu) m.node("Relu", {"c"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, c.y_shape());
  const std::vector<double> want = conv_reference(c, x, w, b);
  run_threads(m, f32_tensor(c.x_shape(), x), options, [&](const Tensor& y, const singa::onnx::Rep&) {
    ASSERT_EQ(y.shape(), c.y_shape());
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double err = std::fabs(y.data<float>()[i] - want[size_t(i)]) / std::max(1.0, std::fabs(want[size_t(i)]));
      if (!(err <= worst)) worst = err, at = i;  // a NaN is the worst
    }
    EXPECT_LE(worst, tolerance) << "at " << at << ": " << y.data<float>()[at] << " against " << want[size_t(at)];
  });
}

}  // namespace

// 1-D convs with long kernels and strides (a mel front end's DFT as a Conv1d:
// one input channel, hundreds of taps and outputs), which run through the
// im2col GEMM path with one image's rows split over the threads; odd output
// counts leave a partial 16-row tile.
TEST(ConvSmall, OneDimensionalLongKernels) {
  testing_util::ensure_loaded();
  ConvCase c;
  c.C = 1, c.M = 83, c.in = {4000}, c.k = {400}, c.s = {160}, c.pb = {0}, c.pe = {0};
  check_conv(c, 1);
  c.M = 402, c.in = {2600};
  check_conv(c, 2);
  c.C = 3, c.M = 37, c.in = {701}, c.k = {25}, c.s = {3}, c.pb = {5}, c.pe = {7}, c.relu = true;
  check_conv(c, 3);
  c.N = 2, c.C = 4, c.M = 64, c.group = 2, c.in = {300}, c.k = {9}, c.s = {1}, c.pb = {4}, c.pe = {4};
  check_conv(c, 4);
}

// 3x3 convs on the Winograd path with more than 64 input channels
// (DenseNet's 128 -> 32 growth convs, a U-Net's 128 -> 64 merge), against
// oneDNN's path on the same shapes (cpu.winograd=0) through the same reference.
TEST(ConvSmall, WideWinograd) {
  testing_util::ensure_loaded();
  ConvCase c;
  c.C = 128, c.M = 32, c.in = {28, 28};
  for (const char* on : {"1", "0"}) {
    SCOPED_TRACE(std::string("cpu.winograd=") + on);
    check_conv(c, 10, 3e-4, {{"cpu.winograd", on}});
  }
  c.C = 160, c.M = 24, c.in = {30, 27}, c.relu = true;
  check_conv(c, 11, 3e-4);
  c.C = 96, c.M = 40, c.in = {33, 35}, c.pb = {1, 0}, c.pe = {0, 1};
  check_conv(c, 12, 3e-4);
}

// Small and odd channel counts, groups, strides and one-sided pads.
TEST(ConvSmall, SmallChannels) {
  testing_util::ensure_loaded();
  ConvCase c;
  c.C = 13, c.M = 7, c.in = {17, 15};
  check_conv(c, 20);
  c.C = 16, c.M = 32, c.group = 4, c.s = {2, 2}, c.in = {19, 22}, c.relu = true;
  check_conv(c, 21);
  c.C = 32, c.M = 16, c.group = 1, c.s = {1, 1}, c.in = {40, 37}, c.pb = {0, 1}, c.pe = {2, 1};
  check_conv(c, 22);
  c.C = 5, c.M = 3, c.k = {5, 1}, c.in = {12, 8}, c.pb = {2, 0}, c.pe = {2, 0}, c.relu = false;
  check_conv(c, 23);
}

namespace {

struct PoolCase {
  int64_t planes = 3, H = 14, W = 14, k = 3, s = 1, pb = 1, pe = 1;
  bool ceil = true;
  int64_t out(int64_t in) const {
    const double v = double(in + pb + pe - k) / double(s);
    int64_t o = (ceil ? int64_t(std::ceil(v)) : int64_t(std::floor(v))) + 1;
    // A ceil_mode window must start inside the input or its leading pad.
    if (ceil && (o - 1) * s >= in + pb) --o;
    return o;
  }
};

// The scalar rule: the first tap inside the input, then strictly greater
// taps in row-major order (a NaN first stays; a later NaN never wins).
std::vector<float> pool_reference(const PoolCase& p, const std::vector<float>& x) {
  const int64_t OH = p.out(p.H), OW = p.out(p.W);
  std::vector<float> y;
  for (int64_t c = 0; c < p.planes; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        bool found = false;
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < p.k; ++kh)
          for (int64_t kw = 0; kw < p.k; ++kw) {
            const int64_t ih = oh * p.s - p.pb + kh, iw = ow * p.s - p.pb + kw;
            if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
            const float v = x[size_t((c * p.H + ih) * p.W + iw)];
            if (!found || v > best) best = v, found = true;
          }
        y.push_back(best);
      }
  return y;
}

void check_pool(const PoolCase& p, unsigned seed, bool specials) {
  std::vector<float> x = random_values(size_t(p.planes * p.H * p.W), seed, 1.f);
  if (specials) {
    // NaN and -inf on the edges and inside, where a window's first tap and
    // its later ones differ.
    std::mt19937 rng(seed);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int i = 0; i < 12; ++i) x[rng() % x.size()] = i % 2 ? nan : -inf;
    x[0] = nan, x[size_t(p.W - 1)] = nan, x[size_t(p.W)] = -inf, x[x.size() - 1] = nan;
  }
  const singa::Shape xs{1, p.planes, p.H, p.W}, ys{1, p.planes, p.out(p.H), p.out(p.W)};
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, xs);
  m.node("MaxPool", {"x"}, {"y"}, "pool");
  add_ints(m.last(), "kernel_shape", {p.k, p.k});
  add_ints(m.last(), "strides", {p.s, p.s});
  add_ints(m.last(), "pads", {p.pb, p.pb, p.pe, p.pe});
  add_int(m.last(), "ceil_mode", p.ceil ? 1 : 0);
  m.output("y", SINGA_ONNX_FLOAT, ys);
  const std::vector<float> want = pool_reference(p, x);
  run_threads(m, f32_tensor(xs, x), {}, [&](const Tensor& y, const singa::onnx::Rep&) {
    ASSERT_EQ(y.shape(), ys);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float got = y.data<float>()[i], w = want[size_t(i)];
      ASSERT_TRUE(std::isnan(w) ? std::isnan(got) : got == w) << "at " << i << ": " << got << " against " << w;
    }
  });
}

}  // namespace

// Inception's 3x3 stride-1 "same" pools, 3x3/2 and 2x2/2 pools whose
// ceil_mode windows hang past the end, on planes from 5 to 57 wide (rows of
// fewer and more than 16 windows), with NaN and -inf among the values.
TEST(ConvSmall, MaxPoolEdges) {
  testing_util::ensure_loaded();
  unsigned seed = 30;
  for (int64_t size : {5, 7, 14, 17, 28, 57})
    for (bool specials : {false, true}) {
      SCOPED_TRACE("size " + std::to_string(size) + (specials ? " with NaN and -inf" : ""));
      PoolCase p;
      p.H = size, p.W = size + 3;
      check_pool(p, ++seed, specials);  // 3x3/1, pads 1
      p.pb = p.pe = 0, p.s = 2;
      check_pool(p, ++seed, specials);  // 3x3/2, ceil_mode overhang on odd sizes
      p.pb = p.pe = 1;
      check_pool(p, ++seed, specials);  // 3x3/2, pads 1
      p.k = 2, p.pb = p.pe = 0;
      check_pool(p, ++seed, specials);  // 2x2/2, ceil_mode overhang
      p.ceil = false, p.k = 3, p.s = 1, p.pb = 0, p.pe = 2;
      check_pool(p, ++seed, specials);  // 3x3/1, pads at the end only
    }
}

// BatchNormalization -> Relu / Clip becomes one FusedBatchNorm; the values
// follow the definition. A BatchNorm with a second reader of its output keeps
// its own node.
TEST(ConvSmall, BatchNormActivation) {
  testing_util::ensure_loaded();
  const int64_t N = 2, C = 19, H = 7, W = 9;
  const singa::Shape xs{N, C, H, W};
  const std::vector<float> x = random_values(size_t(numel(xs)), 40, 2.f);
  const std::vector<float> scale = random_values(size_t(C), 41, 1.f), bias = random_values(size_t(C), 42, 1.f);
  const std::vector<float> mean = random_values(size_t(C), 43, 1.f);
  std::vector<float> var = random_values(size_t(C), 44, 1.f);
  for (float& v : var) v = std::fabs(v) + 0.1f;
  for (const char* act : {"Relu", "Clip"}) {
    SCOPED_TRACE(act);
    ModelBuilder m(13);
    m.input("x", SINGA_ONNX_FLOAT, xs);
    m.initializer("s", f32_tensor({C}, scale)).initializer("b", f32_tensor({C}, bias));
    m.initializer("m", f32_tensor({C}, mean)).initializer("v", f32_tensor({C}, var));
    m.initializer("lo", f32_tensor({}, {-0.25f})).initializer("hi", f32_tensor({}, {0.75f}));
    m.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"n"}, "bn");
    if (std::string(act) == "Relu")
      m.node("Relu", {"n"}, {"y"});
    else
      m.node("Clip", {"n", "lo", "hi"}, {"y"});
    m.output("y", SINGA_ONNX_FLOAT, xs);
    run_threads(m, f32_tensor(xs, x), {}, [&](const Tensor& y, const singa::onnx::Rep& rep) {
      EXPECT_EQ(count_op(rep, "FusedBatchNorm"), 1);
      EXPECT_EQ(count_op(rep, "BatchNormalization"), 0);
      ASSERT_EQ(y.shape(), xs);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const size_t c = size_t(i / (H * W) % C);
        double v = (x[size_t(i)] - double(mean[c])) / std::sqrt(double(var[c]) + 1e-5) * scale[c] + bias[c];
        v = std::string(act) == "Relu" ? std::max(0.0, v) : std::clamp(v, -0.25, 0.75);
        ASSERT_NEAR(y.data<float>()[i], v, 1e-5 * std::max(1.0, std::fabs(v))) << "at " << i;
      }
    });
  }
}

// A U-Net stage: two 3x3 convs of 16 and 32 channels with Relu on a 64x68
// plane. The blocked layout leaves them to the NCHW Winograd kernel
// (conv_match.hpp's winograd_thin_conv); the chain still follows the
// definition, at 1 to 3 threads, with and without the blocked layout pass.
TEST(ConvSmall, ThinConvChain) {
  testing_util::ensure_loaded();
  ConvCase a, b;
  a.C = 16, a.M = 16, a.in = {64, 68}, a.relu = true;
  b = a;
  b.M = 32;
  const std::vector<float> x = random_values(size_t(numel(a.x_shape())), 50, 1.f);
  const std::vector<float> wa = random_values(size_t(numel(a.w_shape())), 51, 0.3f), ba = random_values(16, 52, 0.3f);
  const std::vector<float> wb = random_values(size_t(numel(b.w_shape())), 53, 0.3f), bb = random_values(32, 54, 0.3f);
  const std::vector<double> mid = conv_reference(a, x, wa, ba);
  const std::vector<double> want = conv_reference(b, std::vector<float>(mid.begin(), mid.end()), wb, bb);
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, a.x_shape());
  m.initializer("wa", f32_tensor(a.w_shape(), wa)).initializer("ba", f32_tensor({16}, ba));
  m.initializer("wb", f32_tensor(b.w_shape(), wb)).initializer("bb", f32_tensor({32}, bb));
  for (const char* stage : {"a", "b"}) {
    const std::string s = stage;
    m.node("Conv", {s == "a" ? "x" : "ra", "w" + s, "b" + s}, {"c" + s}, "conv_" + s);
    add_ints(m.last(), "pads", {1, 1, 1, 1});
    add_ints(m.last(), "kernel_shape", {3, 3});
    m.node("Relu", {"c" + s}, {s == "a" ? "ra" : "y"});
  }
  m.output("y", SINGA_ONNX_FLOAT, b.y_shape());
  for (const char* blocked : {"1", "0"}) {
    SCOPED_TRACE(std::string("pass.cpu.blocked_layout=") + blocked);
    run_threads(m, f32_tensor(a.x_shape(), x), {{"pass.cpu.blocked_layout", blocked}},
                [&](const Tensor& y, const singa::onnx::Rep&) {
                  ASSERT_EQ(y.shape(), b.y_shape());
                  double worst = 0;
                  for (int64_t i = 0; i < y.numel(); ++i)
                    worst = std::max(worst, std::fabs(y.data<float>()[i] - want[size_t(i)]) /
                                                std::max(1.0, std::fabs(want[size_t(i)])));
                  EXPECT_LE(worst, 3e-4);
                });
  }
}
