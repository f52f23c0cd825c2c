// Pieces of model families outside the benchmark tables (bench/extra_models.py):
// HardSwish as torch writes it below opset 14, Conv -> Mul(y, HardSigmoid(y))
// with alpha 1/6 (MobileNetV3), fused into the Conv; and stem Convs whose
// channel count is not a multiple of 16 ahead of a MaxPool (ShuffleNetV2's
// 24). Each output is checked against a plain evaluation written here in
// doubles, over a family of shapes, at 1 and 2 threads.
#include "test_util.hpp"
#include "model_builder.hpp"

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
using testing_util::add_float;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::f32_tensor;

namespace {

std::vector<float> uniform(size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A 2-D Conv: C -> M channels, square kernel k, stride s, symmetric pad k / 2.
struct ConvShape {
  int64_t C, M, H, W, k, s;
  bool bias;
  int64_t OH() const { return (H + 2 * (k / 2) - k) / s + 1; }
  int64_t OW() const { return (W + 2 * (k / 2) - k) / s + 1; }
};

// The convolution in doubles, [M, OH, OW] for batch 1.
std::vector<double> conv_ref(const ConvShape& c, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b) {
  const int64_t OH = c.OH(), OW = c.OW(), p = c.k / 2;
  std::vector<double> y(size_t(c.M * OH * OW));
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = c.bias ? b[m] : 0.0;
        for (int64_t ci = 0; ci < c.C; ++ci)
          for (int64_t kh = 0; kh < c.k; ++kh)
            for (int64_t kw = 0; kw < c.k; ++kw) {
              const int64_t ih = oh * c.s - p + kh, iw = ow * c.s - p + kw;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              acc += double(x[(ci * c.H + ih) * c.W + iw]) * w[((m * c.C + ci) * c.k + kh) * c.k + kw];
            }
        y[(m * OH + oh) * OW + ow] = acc;
      }
  return y;
}

void add_conv(ModelBuilder& m, const ConvShape& c, const std::string& out, unsigned seed, std::vector<float>& w,
              std::vector<float>& b) {
  w = uniform(size_t(c.M * c.C * c.k * c.k), seed, 0.5f);
  b = uniform(size_t(c.M), seed + 1, 0.5f);
  m.initializer("W", f32_tensor({c.M, c.C, c.k, c.k}, w));
  std::vector<std::string> ins{"X", "W"};
  if (c.bias) {
    m.initializer("B", f32_tensor({c.M}, b));
    ins.push_back("B");
  }
  m.node("Conv", ins, {out});
  add_ints(m.last(), "kernel_shape", {c.k, c.k});
  add_ints(m.last(), "strides", {c.s, c.s});
  add_ints(m.last(), "pads", {c.k / 2, c.k / 2, c.k / 2, c.k / 2});
}

Tensor run(const ModelBuilder& m, const Tensor& x, int threads, int* fused_convs = nullptr, int* leftovers = nullptr,
           const char* leftover_op = "HardSigmoid") {
  singa::onnx::PrepareOptions o;
  o.threads = threads;
  auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
  auto out = rep->run({x});
  EXPECT_EQ(out.size(), 1u);
  if (fused_convs) *fused_convs = count_op(*rep, "FusedConv");
  if (leftovers) *leftovers = count_op(*rep, leftover_op);
  return out[0].second;
}

void expect_near(const Tensor& y, const std::vector<double>& ref) {
  ASSERT_EQ(size_t(y.numel()), ref.size());
  const float* p = y.data<float>();
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(p[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << "at " << i;
}

}  // namespace

// Conv -> HardSigmoid(alpha 1/6, beta 1/2) -> Mul with the Conv's output, in
// either operand order: one FusedConv computing HardSwish. Channel counts
// off multiples of 16, 1x1 to 5x5 kernels, strides 1 and 2, with and without
// bias; values spread over the HardSwish knees at -3 and 3.
TEST(ModelFamilies, HardSwishAsGatedMul) {
  const std::vector<ConvShape> shapes{{3, 16, 17, 19, 3, 2, true}, {5, 24, 9, 9, 1, 1, false},
                                      {16, 40, 12, 7, 5, 1, true}, {24, 17, 8, 8, 3, 1, false},
                                      {40, 72, 7, 7, 1, 1, true},   {7, 3, 11, 6, 5, 2, true}};
  unsigned seed = 1;
  for (const ConvShape& c : shapes)
    for (int order = 0; order < 2; ++order) {
      SCOPED_TRACE("C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " k " + std::to_string(c.k) + " s " +
                   std::to_string(c.s) + " order " + std::to_string(order));
      ModelBuilder m(13);
      m.input("X", SINGA_ONNX_FLOAT, {1, c.C, c.H, c.W}).output("Y", SINGA_ONNX_FLOAT, {1, c.M, c.OH(), c.OW()});
      std::vector<float> w, b;
      add_conv(m, c, "c", seed, w, b);
      m.node("HardSigmoid", {"c"}, {"h"});
      add_float(m.last(), "alpha", 1.f / 6.f);
      m.node("Mul", order ? std::vector<std::string>{"h", "c"} : std::vector<std::string>{"c", "h"}, {"Y"});
      const std::vector<float> x = uniform(size_t(c.C * c.H * c.W), seed + 2, 2.f);
      seed += 3;
      std::vector<double> ref = conv_ref(c, x, w, b);
      for (double& v : ref) v = v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0);
      for (int threads : {1, 2}) {
        int fused = 0, left = 0;
        Tensor y = run(m, f32_tensor({1, c.C, c.H, c.W}, x), threads, &fused, &left);
        expect_near(y, ref);
        EXPECT_EQ(left, 0) << "the HardSigmoid should be fused";
      }
    }
}

// A HardSigmoid with other parameters than HardSwish's is no HardSwish: the
// product keeps its own alpha and beta.
TEST(ModelFamilies, GatedMulWithOtherSlopeStaysExact) {
  const ConvShape c{8, 24, 10, 10, 3, 1, true};
  for (float alpha : {0.2f, 1.f / 6.f + 1e-3f}) {
    ModelBuilder m(13);
    m.input("X", SINGA_ONNX_FLOAT, {1, c.C, c.H, c.W}).output("Y", SINGA_ONNX_FLOAT, {1, c.M, c.OH(), c.OW()});
    std::vector<float> w, b;
    add_conv(m, c, "c", 7, w, b);
    m.node("HardSigmoid", {"c"}, {"h"});
    add_float(m.last(), "alpha", alpha);
    add_float(m.last(), "beta", 0.4f);
    m.node("Mul", {"c", "h"}, {"Y"});
    const std::vector<float> x = uniform(size_t(c.C * c.H * c.W), 9, 2.f);
    std::vector<double> ref = conv_ref(c, x, w, b);
    for (double& v : ref) v = v * std::min(std::max(double(alpha) * v + double(0.4f), 0.0), 1.0);
    for (int threads : {1, 2}) expect_near(run(m, f32_tensor({1, c.C, c.H, c.W}, x), threads), ref);
  }
}

// A stem Conv -> Relu -> MaxPool(3, stride 2, pad 1) over channel counts
// with and without a multiple of 16 (ShuffleNetV2's 24, 40, a ResNet's 64),
// 3x3 and 7x7 kernels: exact either way, fused only where oneDNN pools the
// 16-channel blocks itself.
TEST(ModelFamilies, StemConvMaxPoolAnyChannels) {
  for (int64_t M : {8, 24, 32, 40, 64})
    for (int64_t k : {3, 7}) {
      SCOPED_TRACE("M " + std::to_string(M) + " k " + std::to_string(k));
      const ConvShape c{3, M, 30, 26, k, 2, false};
      const int64_t OH = c.OH(), OW = c.OW(), PH = (OH + 2 - 3) / 2 + 1, PW = (OW + 2 - 3) / 2 + 1;
      ModelBuilder m(13);
      m.input("X", SINGA_ONNX_FLOAT, {1, c.C, c.H, c.W}).output("Y", SINGA_ONNX_FLOAT, {1, M, PH, PW});
      std::vector<float> w, b;
      add_conv(m, c, "c", unsigned(M + k), w, b);
      m.node("Relu", {"c"}, {"r"});
      m.node("MaxPool", {"r"}, {"Y"});
      add_ints(m.last(), "kernel_shape", {3, 3});
      add_ints(m.last(), "strides", {2, 2});
      add_ints(m.last(), "pads", {1, 1, 1, 1});
      const std::vector<float> x = uniform(size_t(c.C * c.H * c.W), unsigned(M * k), 1.f);
      const std::vector<double> conv = conv_ref(c, x, w, b);
      std::vector<double> ref(size_t(M * PH * PW));
      for (int64_t ch = 0; ch < M; ++ch)
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw) {
            double best = -std::numeric_limits<double>::infinity();
            for (int64_t i = ph * 2 - 1; i < ph * 2 + 2; ++i)
              for (int64_t j = pw * 2 - 1; j < pw * 2 + 2; ++j) {
                if (i >= 0 && i < OH && j >= 0 && j < OW) best = std::max(best, std::max(conv[(ch * OH + i) * OW + j], 0.0));
              }
            ref[(ch * PH + ph) * PW + pw] = best;
          }
      for (int threads : {1, 2}) {
        int fused = 0, pools = 0;
        Tensor y = run(m, f32_tensor({1, c.C, c.H, c.W}, x), threads, &fused, &pools, "MaxPool");
        expect_near(y, ref);
        if (M % 16 != 0) {
          EXPECT_EQ(pools, 1) << "the MaxPool stays its own node";
        }
      }
    }
}

// A 1-D depthwise Conv (the conformer conv module's): kernel lengths 1 to
// 31, strides 1 to 3, dilation 1 and 2, uneven pads, with and without bias,
// alone or with SiLU fused (Mul(y, Sigmoid(y))), two images, channel counts
// off multiples of 16.
TEST(ModelFamilies, DepthwiseConv1d) {
  struct Case {
    int64_t C, L, K, s, d, pb, pe;
    bool bias, silu;
  };
  const std::vector<Case> cases{{5, 40, 15, 1, 1, 7, 7, true, true},   {17, 33, 31, 1, 1, 15, 15, false, false},
                                {64, 50, 7, 2, 1, 3, 3, true, false},  {24, 29, 3, 3, 2, 0, 4, true, true},
                                {3, 9, 1, 1, 1, 0, 0, false, true},    {40, 20, 5, 1, 2, 4, 1, true, false},
                                {16, 7, 9, 1, 1, 4, 4, true, true}};
  const int64_t N = 2;
  unsigned seed = 50;
  for (const Case& c : cases) {
    SCOPED_TRACE("C " + std::to_string(c.C) + " L " + std::to_string(c.L) + " K " + std::to_string(c.K) + " s " +
                 std::to_string(c.s) + " d " + std::to_string(c.d));
    const int64_t out = (c.L + c.pb + c.pe - (c.K - 1) * c.d - 1) / c.s + 1;
    ModelBuilder m(13);
    m.input("X", SINGA_ONNX_FLOAT, {N, c.C, c.L}).output("Y", SINGA_ONNX_FLOAT, {N, c.C, out});
    const std::vector<float> w = uniform(size_t(c.C * c.K), seed, 0.5f), b = uniform(size_t(c.C), seed + 1, 0.5f);
    const std::vector<float> x = uniform(size_t(N * c.C * c.L), seed + 2, 2.f);
    seed += 3;
    m.initializer("W", f32_tensor({c.C, 1, c.K}, w));
    std::vector<std::string> ins{"X", "W"};
    if (c.bias) {
      m.initializer("B", f32_tensor({c.C}, b));
      ins.push_back("B");
    }
    m.node("Conv", ins, {c.silu ? "c" : "Y"});
    add_ints(m.last(), "kernel_shape", {c.K});
    add_ints(m.last(), "strides", {c.s});
    add_ints(m.last(), "dilations", {c.d});
    add_ints(m.last(), "pads", {c.pb, c.pe});
    testing_util::add_int(m.last(), "group", c.C);
    if (c.silu) {
      m.node("Sigmoid", {"c"}, {"g"});
      m.node("Mul", {"c", "g"}, {"Y"});
    }
    std::vector<double> ref(size_t(N * c.C * out));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < c.C; ++ch)
        for (int64_t o = 0; o < out; ++o) {
          double acc = c.bias ? b[size_t(ch)] : 0.0;
          for (int64_t k = 0; k < c.K; ++k) {
            const int64_t i = o * c.s - c.pb + k * c.d;
            if (i >= 0 && i < c.L) acc += double(w[size_t(ch * c.K + k)]) * x[size_t((n * c.C + ch) * c.L + i)];
          }
          ref[size_t((n * c.C + ch) * out + o)] = c.silu ? acc / (1 + std::exp(-acc)) : acc;
        }
    for (int threads : {1, 2}) expect_near(run(m, f32_tensor({N, c.C, c.L}, x), threads), ref);
  }
}

// Nearest Resize by whole factors (a detector neck's x2, and x3), as torch
// exports it (asymmetric, floor) and with the default half_pixel /
// round_prefer_floor, for float and int32; and a factor of 1.5, which is no
// repeat. The reference is the spec's index formula.
TEST(ModelFamilies, NearestResizeWholeFactors) {
  struct Case {
    int64_t C, H, W;
    float fh, fw;
    bool asymmetric;
    int32_t dtype;
  };
  const std::vector<Case> cases{{3, 5, 7, 2, 2, true, SINGA_ONNX_FLOAT},  {17, 4, 9, 2, 2, false, SINGA_ONNX_FLOAT},
                                {2, 3, 5, 3, 3, true, SINGA_ONNX_FLOAT},  {4, 6, 4, 2, 2, true, SINGA_ONNX_INT32},
                                {5, 4, 6, 1.5f, 1.5f, true, SINGA_ONNX_FLOAT}, {3, 4, 8, 1, 2, false, SINGA_ONNX_FLOAT}};
  for (const Case& c : cases) {
    SCOPED_TRACE("C " + std::to_string(c.C) + " H " + std::to_string(c.H) + " W " + std::to_string(c.W) + " f " +
                 std::to_string(c.fw) + (c.asymmetric ? " asymmetric" : " half_pixel"));
    const int64_t OH = int64_t(std::floor(c.H * c.fh)), OW = int64_t(std::floor(c.W * c.fw));
    ModelBuilder m(13);
    m.input("X", c.dtype, {1, c.C, c.H, c.W}).output("Y", c.dtype, {1, c.C, OH, OW});
    m.initializer("scales", f32_tensor({4}, {1.f, 1.f, c.fh, c.fw}));
    m.node("Resize", {"X", "", "scales"}, {"Y"});
    testing_util::add_string(m.last(), "mode", "nearest");
    if (c.asymmetric) {
      testing_util::add_string(m.last(), "coordinate_transformation_mode", "asymmetric");
      testing_util::add_string(m.last(), "nearest_mode", "floor");
    }
    auto index = [&](int64_t o, float f, int64_t in) {
      const double pos = c.asymmetric ? o / double(f) : (o + 0.5) / f - 0.5;
      const int64_t i = c.asymmetric ? int64_t(std::floor(pos)) : int64_t(std::ceil(pos - 0.5));
      return std::clamp<int64_t>(i, 0, in - 1);
    };
    const int64_t n = c.C * c.H * c.W;
    std::vector<float> xf = uniform(size_t(n), unsigned(c.C * 7 + c.W), 100.f);
    std::vector<int32_t> xi(xf.begin(), xf.end());
    Tensor x = c.dtype == SINGA_ONNX_FLOAT ? f32_tensor({1, c.C, c.H, c.W}, xf)
                                           : Tensor::from_vector({1, c.C, c.H, c.W}, SINGA_ONNX_INT32, xi);
    for (int threads : {1, 2}) {
      Tensor y = run(m, x, threads);
      ASSERT_EQ(y.numel(), c.C * OH * OW);
      for (int64_t ch = 0; ch < c.C; ++ch)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const size_t src = size_t((ch * c.H + index(oh, c.fh, c.H)) * c.W + index(ow, c.fw, c.W));
            const size_t dst = size_t((ch * OH + oh) * OW + ow);
            if (c.dtype == SINGA_ONNX_FLOAT)
              ASSERT_EQ(y.data<float>()[dst], xf[src]) << "at " << ch << "," << oh << "," << ow;
            else
              ASSERT_EQ(y.data<int32_t>()[dst], xi[src]) << "at " << ch << "," << oh << "," << ow;
          }
    }
  }
}

// HardSwish spelled with ReLU6 after a Conv: y * Clip(y + 3, 0, 6) / 6 and
// y * (Clip(y + 3, 0, 6) / 6), the sixth as Div by 6 or Mul by 1/6, operands
// in either order, Clip's bounds as inputs (opset 13) or attributes (opset
// 7): one FusedConv. An offset of 2 instead of 3 is no HardSwish and stays
// exact.
TEST(ModelFamilies, HardSwishAsRelu6) {
  const ConvShape c{6, 20, 9, 11, 3, 1, true};
  int variant = 0;
  for (int64_t opset : {13, 7})
    for (bool divide_first : {false, true})
      for (bool by_div : {true, false})
        for (float offset : {3.f, 2.f}) {
          SCOPED_TRACE("opset " + std::to_string(opset) + (divide_first ? " divide first" : " multiply first") +
                       (by_div ? " Div" : " Mul") + " offset " + std::to_string(offset));
          const bool swap = (variant++ % 2) == 1;
          ModelBuilder m(opset);
          m.input("X", SINGA_ONNX_FLOAT, {1, c.C, c.H, c.W}).output("Y", SINGA_ONNX_FLOAT, {1, c.M, c.OH(), c.OW()});
          std::vector<float> w, b;
          add_conv(m, c, "c", 11, w, b);
          m.initializer("three", f32_tensor({}, {offset}));
          m.initializer("six", f32_tensor({}, {6.f}));
          m.initializer("sixth", f32_tensor({}, {1.f / 6.f}));
          m.initializer("zero", f32_tensor({}, {0.f}));
          m.node("Add", swap ? std::vector<std::string>{"three", "c"} : std::vector<std::string>{"c", "three"}, {"a"});
          if (opset >= 11) {
            m.node("Clip", {"a", "zero", "six"}, {"r"});
          } else {
            m.node("Clip", {"a"}, {"r"});
            add_float(m.last(), "min", 0.f);
            add_float(m.last(), "max", 6.f);
          }
          auto sixth = [&](const std::string& in, const std::string& out) {
            if (by_div) m.node("Div", {in, "six"}, {out});
            else m.node("Mul", swap ? std::vector<std::string>{"sixth", in} : std::vector<std::string>{in, "sixth"}, {out});
          };
          if (divide_first) {
            sixth("r", "h");
            m.node("Mul", swap ? std::vector<std::string>{"h", "c"} : std::vector<std::string>{"c", "h"}, {"Y"});
          } else {
            m.node("Mul", swap ? std::vector<std::string>{"r", "c"} : std::vector<std::string>{"c", "r"}, {"p"});
            sixth("p", "Y");
          }
          const std::vector<float> x = uniform(size_t(c.C * c.H * c.W), 12, 2.f);
          std::vector<double> ref = conv_ref(c, x, w, b);
          for (double& v : ref) v = v * std::min(std::max(v + offset, 0.0), 6.0) / 6.0;
          for (int threads : {1, 2}) {
            int fused = 0, clips = 0;
            Tensor y = run(m, f32_tensor({1, c.C, c.H, c.W}, x), threads, &fused, &clips, "Clip");
            expect_near(y, ref);
            EXPECT_EQ(clips, offset == 3.f ? 0 : 1);
          }
        }
}

// A projection's activation as the feed-forward of a conformer, an
// EfficientFormer or a plain MLP writes it: MatMul(A, W) + b, then SiLU as
// Mul(y, Sigmoid(y)) in either operand order, or Relu, Sigmoid or Tanh, and
// optionally a residual Add after it. Row counts through the few-row kernel
// (<= 8) and oneDNN's (more), K and N off multiples of 16, A of rank 2 and 3,
// with and without the bias: one FusedMatMul (or FusedGemm), checked against
// doubles.
TEST(ModelFamilies, MatMulActivationEpilogue) {
  struct Case {
    std::vector<int64_t> a;  // A's shape, [..., K]
    int64_t N;
    bool bias, residual;
  };
  const std::vector<Case> cases{{{1, 37}, 72, true, false},    {{3, 16}, 17, true, true},
                                {{7, 50}, 200, false, false},  {{40, 96}, 33, true, true},
                                {{2, 65, 24}, 130, true, false}, {{130, 19}, 48, false, true}};
  const std::vector<std::string> acts{"SiLU", "SiLUSwapped", "Relu", "Sigmoid", "Tanh"};
  unsigned seed = 100;
  for (const Case& c : cases)
    for (const std::string& act : acts) {
      int64_t R = 1;
      for (size_t d = 0; d + 1 < c.a.size(); ++d) R *= c.a[d];
      const int64_t K = c.a.back(), N = c.N;
      SCOPED_TRACE("R " + std::to_string(R) + " K " + std::to_string(K) + " N " + std::to_string(N) + " " + act +
                   (c.bias ? " bias" : "") + (c.residual ? " residual" : ""));
      std::vector<int64_t> ys = c.a;
      ys.back() = N;
      ModelBuilder m(13);
      m.input("X", SINGA_ONNX_FLOAT, c.a).output("Y", SINGA_ONNX_FLOAT, ys);
      const std::vector<float> w = uniform(size_t(K * N), seed, 0.4f), b = uniform(size_t(N), seed + 1, 1.f);
      const std::vector<float> z = uniform(size_t(R * N), seed + 2, 1.f);
      const std::vector<float> x = uniform(size_t(R * K), seed + 3, 1.f);
      seed += 4;
      m.initializer("W", f32_tensor({K, N}, w));
      m.node("MatMul", {"X", "W"}, {"p"});
      std::string y = "p";
      if (c.bias) {
        m.initializer("B", f32_tensor({N}, b));
        m.node("Add", {"B", "p"}, {"pb"});
        y = "pb";
      }
      const std::string a_out = c.residual ? "act" : "Y";
      if (act == "SiLU" || act == "SiLUSwapped") {
        m.node("Sigmoid", {y}, {"s"});
        m.node("Mul", act == "SiLU" ? std::vector<std::string>{y, "s"} : std::vector<std::string>{"s", y}, {a_out});
      } else {
        m.node(act, {y}, {a_out});
      }
      if (c.residual) {
        m.initializer("Z", f32_tensor(ys, z));
        m.node("Add", {"act", "Z"}, {"Y"});
      }
      std::vector<double> ref(size_t(R * N));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double v = c.bias ? b[n] : 0.0;
          for (int64_t k = 0; k < K; ++k) v += double(x[r * K + k]) * w[k * N + n];
          if (act == "Relu") v = std::max(v, 0.0);
          else if (act == "Sigmoid") v = 1 / (1 + std::exp(-v));
          else if (act == "Tanh") v = std::tanh(v);
          else v = v / (1 + std::exp(-v));
          ref[r * N + n] = v + (c.residual ? z[r * N + n] : 0.0);
        }
      for (int threads : {1, 2}) {
        singa::onnx::PrepareOptions o;
        o.threads = threads;
        auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
        auto out = rep->run({f32_tensor(c.a, x)});
        ASSERT_EQ(out.size(), 1u);
        expect_near(out[0].second, ref);
        // A 2-D product with a bias becomes a Gemm, whose own pass takes the activation.
        EXPECT_EQ(count_op(*rep, "FusedMatMul") + count_op(*rep, "FusedGemm") + count_op(*rep, "Gemm"), 1);
        EXPECT_EQ(count_op(*rep, "Sigmoid") + count_op(*rep, "Mul") + count_op(*rep, "Relu") + count_op(*rep, "Tanh"),
                  0)
            << "the activation should be in the FusedMatMul";
      }
    }
}

// The product also read elsewhere (a graph output) keeps its activation
// apart, and the SiLU's value stays exact.
TEST(ModelFamilies, MatMulActivationSharedProductStaysApart) {
  const int64_t R = 5, K = 20, N = 24;
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, {R, K}).output("Y", SINGA_ONNX_FLOAT, {R, N}).output("P", SINGA_ONNX_FLOAT, {R, N});
  const std::vector<float> w = uniform(size_t(K * N), 3, 0.4f), x = uniform(size_t(R * K), 4, 1.f);
  m.initializer("W", f32_tensor({K, N}, w));
  m.node("MatMul", {"X", "W"}, {"P"});
  m.node("Sigmoid", {"P"}, {"s"});
  m.node("Mul", {"P", "s"}, {"Y"});
  singa::onnx::PrepareOptions o;
  auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
  auto out = rep->run({f32_tensor({R, K}, x)});
  ASSERT_EQ(out.size(), 2u);
  const Tensor& y = out[0].first == "Y" ? out[0].second : out[1].second;
  std::vector<double> ref(size_t(R * N));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double v = 0;
      for (int64_t k = 0; k < K; ++k) v += double(x[r * K + k]) * w[k * N + n];
      ref[r * N + n] = v / (1 + std::exp(-v));
    }
  expect_near(y, ref);
  EXPECT_EQ(count_op(*rep, "Sigmoid"), 1);
}

// nn.GLU as torch exports it: Split(X, axis) into halves a, b, then
// Mul(a, Sigmoid(b)) in either operand order, on every axis of a rank-3 X
// (a conformer's channel axis, the last axis of a GLU feed-forward), sizes
// off multiples of 16, the split sizes as an input or implied, and the gate
// on either half: one Glu, checked against doubles. An unequal split stays
// apart and exact.
TEST(ModelFamilies, GluAnyAxisOneNode) {
  const std::vector<int64_t> shape{3, 10, 34};
  unsigned seed = 300;
  for (int64_t axis : {0, 1, 2, -1})
    for (int gate = 0; gate < 2; ++gate)
      for (int order = 0; order < 2; ++order)
        for (int sizes_input = 0; sizes_input < 2; ++sizes_input) {
          const int64_t ax = axis < 0 ? axis + 3 : axis;
          if (shape[size_t(ax)] % 2) continue;
          SCOPED_TRACE("axis " + std::to_string(axis) + " gate " + std::to_string(gate) + " order " +
                       std::to_string(order) + " sizes input " + std::to_string(sizes_input));
          std::vector<int64_t> ys = shape;
          ys[size_t(ax)] /= 2;
          ModelBuilder m(13);
          m.input("X", SINGA_ONNX_FLOAT, shape).output("Y", SINGA_ONNX_FLOAT, ys);
          std::vector<std::string> ins{"X"};
          if (sizes_input) {
            m.initializer("S", testing_util::i64_tensor({ys[size_t(ax)], ys[size_t(ax)]}));
            ins.push_back("S");
          }
          m.node("Split", ins, {"h0", "h1"});
          testing_util::add_int(m.last(), "axis", axis);
          const std::string gv = gate ? "h1" : "h0", v = gate ? "h0" : "h1";
          m.node("Sigmoid", {gv}, {"s"});
          m.node("Mul", order ? std::vector<std::string>{"s", v} : std::vector<std::string>{v, "s"}, {"Y"});
          const std::vector<float> x = uniform(size_t(3 * 10 * 34), seed++, 4.f);
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < ax; ++d) outer *= shape[size_t(d)];
          for (int64_t d = ax + 1; d < 3; ++d) inner *= shape[size_t(d)];
          const int64_t half = ys[size_t(ax)] * inner;
          std::vector<double> ref(size_t(outer * half));
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < half; ++i) {
              const double a = x[size_t(o * 2 * half + i)], b = x[size_t(o * 2 * half + half + i)];
              ref[size_t(o * half + i)] = gate ? a / (1 + std::exp(-b)) : b / (1 + std::exp(-a));
            }
          for (int threads : {1, 2}) {
            int glus = 0;
            Tensor y = run(m, f32_tensor(shape, x), threads, nullptr, &glus, "Glu");
            expect_near(y, ref);
            EXPECT_EQ(glus, 1) << "the Split, Sigmoid and Mul should be one Glu";
          }
        }
  // Unequal halves (4 + 6 of 10): no Glu, the plain nodes' values.
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, {2, 10}).output("Y", SINGA_ONNX_FLOAT, {2, 4});
  m.initializer("S", testing_util::i64_tensor({4, 6}));
  m.node("Split", {"X", "S"}, {"h0", "h1"});
  testing_util::add_int(m.last(), "axis", 1);
  m.node("Sigmoid", {"h0"}, {"s"});
  m.node("Mul", {"h0", "s"}, {"Y"});
  const std::vector<float> x = uniform(20, 9, 3.f);
  std::vector<double> ref(8);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 4; ++i) {
      const double a = x[size_t(r * 10 + i)];
      ref[size_t(r * 4 + i)] = a / (1 + std::exp(-a));
    }
  int glus = 0;
  expect_near(run(m, f32_tensor({2, 10}, x), 1, nullptr, &glus, "Glu"), ref);
  EXPECT_EQ(glus, 0);
}
