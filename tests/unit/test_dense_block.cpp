// DenseNet-style blocks (issue 33): a 1x1 Conv and the AveragePool after it
// swapped (passes/pool_before_conv.cpp), BatchNorm [+ activation] with the
// AveragePool or GlobalAveragePool after it in one FusedBatchNorm
// (passes/fuse_batch_norm_pool.cpp), BatchNorm [+ activation] -> 1x1 Conv in
// one BatchNormConv (passes/fuse_batch_norm_conv.cpp), and chains of Concats whose inputs all
// live in the last Concat's output (core/executor.cpp,
// plan_concat_inputs_in_place). Outputs are checked against plain
// double-precision evaluations written here, at 1 to 3 threads, with odd
// channel counts, groups, with and without bias, on several plane sizes; the
// planner against unplanned runs bit for bit and by its arena's exact size.
#include "test_util.hpp"
#include "model_builder.hpp"
#include "run_threads.hpp"

#include <singa/onnx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_float;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::op_types;
using testing_util::prepare_at;
using testing_util::random_values;
using testing_util::run_threads;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

void expect_close(const Tensor& y, const std::vector<double>& want, const singa::Shape& shape) {
  ASSERT_EQ(y.shape(), shape);
  ASSERT_EQ(size_t(y.numel()), want.size());
  double scale = 1e-3;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(y.data<float>()[i], want[i], 2e-5 * scale + 1e-5) << "element " << i;
}

// An N x C x H x W plane set pooled by whole k x k windows at stride s, in doubles.
std::vector<double> average_pool(const std::vector<double>& x, int64_t planes, int64_t H, int64_t W, int64_t kh,
                                 int64_t kw, int64_t sh, int64_t sw) {
  const int64_t OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1;
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double s = 0;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) s += x[size_t((p * H + oh * sh + i) * W + ow * sw + j)];
        y.push_back(s / double(kh * kw));
      }
  return y;
}

// ---- 1x1 Conv -> [Pad of nothing] -> AveragePool ---------------------------

struct SwapCase {
  int64_t N = 1, C = 7, M = 5, group = 1, H = 8, W = 8, k = 2, s = 2;
  bool bias = true, zero_pad = false;
  std::vector<int64_t> pool_pads;  // empty: none
  int64_t ceil_mode = 0;
  bool swapped = true;  // what the pass should do
};

void check_swap(const SwapCase& c, const std::map<std::string, std::string>& options = {}) {
  SCOPED_TRACE("C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " group " + std::to_string(c.group) + " " +
               std::to_string(c.H) + "x" + std::to_string(c.W) + " k " + std::to_string(c.k) + " s " +
               std::to_string(c.s) + (c.bias ? " bias" : "") + (c.zero_pad ? " pad" : ""));
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  const auto x = random_values(size_t(c.N * c.C * c.H * c.W), 1, -1.f, 1.f);
  const auto w = random_values(size_t(c.M * Cg), 2, -0.5f, 0.5f);
  const auto b = random_values(size_t(c.M), 3, -1.f, 1.f);
  const bool pads = !c.pool_pads.empty() && c.pool_pads[0] > 0;
  const int64_t P = pads ? c.pool_pads[0] : 0;
  const int64_t OH = (c.H + 2 * P - c.k + (c.ceil_mode ? c.s - 1 : 0)) / c.s + 1;
  const int64_t OW = (c.W + 2 * P - c.k + (c.ceil_mode ? c.s - 1 : 0)) / c.s + 1;

  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W}).initializer("w", f32_tensor({c.M, Cg, 1, 1}, w));
  std::vector<std::string> conv_in = {"x", "w"};
  if (c.bias) {
    m.initializer("b", f32_tensor({c.M}, b));
    conv_in.push_back("b");
  }
  m.node("Conv", conv_in, {"c"});
  add_int(m.last(), "group", c.group);
  add_ints(m.last(), "kernel_shape", {1, 1});
  std::string pooled = "c";
  if (c.zero_pad) {
    m.initializer("pads", Tensor::from_vector({8}, SINGA_ONNX_INT64, std::vector<int64_t>(8, 0)));
    m.node("Pad", {"c", "pads"}, {"p"});
    pooled = "p";
  }
  m.node("AveragePool", {pooled}, {"y"});
  add_ints(m.last(), "kernel_shape", {c.k, c.k});
  add_ints(m.last(), "strides", {c.s, c.s});
  if (pads) add_ints(m.last(), "pads", {P, P, P, P});
  if (c.ceil_mode) add_int(m.last(), "ceil_mode", 1);
  m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, OH, OW});

  // Conv then pool, as written (count_include_pad 0: padding is not counted).
  std::vector<double> conv(size_t(c.N * c.M * c.H * c.W));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t mo = 0; mo < c.M; ++mo)
      for (int64_t i = 0; i < c.H * c.W; ++i) {
        double v = c.bias ? b[size_t(mo)] : 0.0;
        const int64_t g = mo / Mg;
        for (int64_t ci = 0; ci < Cg; ++ci)
          v += double(w[size_t(mo * Cg + ci)]) * x[size_t((n * c.C + g * Cg + ci) * c.H * c.W + i)];
        conv[size_t((n * c.M + mo) * c.H * c.W + i)] = v;
      }
  std::vector<double> want;
  for (int64_t p = 0; p < c.N * c.M; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double s = 0;
        int64_t count = 0;
        for (int64_t i = 0; i < c.k; ++i)
          for (int64_t j = 0; j < c.k; ++j) {
            const int64_t r = oh * c.s - P + i, q = ow * c.s - P + j;
            if (r < 0 || r >= c.H || q < 0 || q >= c.W) continue;
            s += conv[size_t((p * c.H + r) * c.W + q)];
            ++count;
          }
        want.push_back(s / double(count));
      }
  const bool on = options.empty();
  run_threads(m, f32_tensor({c.N, c.C, c.H, c.W}, x), options, [&](const Tensor& y, const singa::onnx::Rep& rep) {
    expect_close(y, want, {c.N, c.M, OH, OW});
    const auto ops = op_types(rep);
    const bool pool_first = !ops.empty() && ops.front() == "AveragePool";
    EXPECT_EQ(pool_first, on && c.swapped) << joined(ops);
    if (on && c.swapped) {
      EXPECT_EQ(std::count(ops.begin(), ops.end(), "Pad"), 0) << joined(ops);
    }
  });
}

}  // namespace

TEST(PoolBeforeConv, OneByOneConvThenAveragePoolComputesTheSameSwapped) {
  testing_util::ensure_loaded();
  for (bool bias : {true, false})
    for (bool pad : {false, true}) {
      SwapCase c;
      c.bias = bias;
      c.zero_pad = pad;
      check_swap(c);
    }
  // Odd channels, odd and non-square planes (the last row/column left out), groups.
  SwapCase odd;
  odd.C = 37, odd.M = 33, odd.H = 9, odd.W = 13;
  check_swap(odd);
  SwapCase grouped;
  grouped.C = 6, grouped.M = 9, grouped.group = 3, grouped.H = 10, grouped.W = 7, grouped.zero_pad = true;
  check_swap(grouped);
  // Overlapping 3x3/2 and 3x3/1 windows, a batch of two.
  SwapCase overlap;
  overlap.N = 2, overlap.C = 16, overlap.M = 24, overlap.H = 11, overlap.W = 12, overlap.k = 3, overlap.s = 2;
  check_swap(overlap);
  SwapCase stride1;
  stride1.C = 8, stride1.M = 32, stride1.H = 12, stride1.W = 12, stride1.k = 3, stride1.s = 1;
  check_swap(stride1);
  // DenseNet's first transition's shape.
  SwapCase transition;
  transition.C = 256, transition.M = 128, transition.H = 56, transition.W = 56, transition.bias = false,
  transition.zero_pad = true;
  check_swap(transition);
  // The option turns it off.
  check_swap(SwapCase{}, {{"pass.cpu.pool_before_conv", "0"}});
}

TEST(PoolBeforeConv, PaddedCeilModeAndCostlyPoolsStayAfterTheConv) {
  testing_util::ensure_loaded();
  SwapCase padded;  // the padded zeros would become the bias after a swap
  padded.H = 9, padded.W = 9, padded.k = 3, padded.s = 2, padded.pool_pads = {1, 1, 1, 1}, padded.swapped = false;
  check_swap(padded);
  SwapCase ceil;  // overhanging windows
  ceil.H = 9, ceil.W = 9, ceil.ceil_mode = 1, ceil.swapped = false;
  check_swap(ceil);
  SwapCase wide;  // 64 -> 2 channels, 3x3/1 on 7x7: pooling 64 planes costs more than the Conv saves
  wide.C = 64, wide.M = 2, wide.H = 7, wide.W = 7, wide.k = 3, wide.s = 1, wide.swapped = false;
  check_swap(wide);
}

// ---- BatchNorm [-> activation] -> AveragePool / GlobalAveragePool ----------

namespace {

struct NormPoolCase {
  int64_t N = 1, C = 7, H = 8, W = 8, k = 2, s = 2;
  bool global = false;
  std::string act = "Relu";  // "", "Relu" or "Clip"
  bool conv_between = false; // BN -> act -> 1x1 Conv -> Pad -> pool (a DenseNet transition)
};

void check_norm_pool(const NormPoolCase& c, const std::map<std::string, std::string>& options = {}) {
  SCOPED_TRACE("C " + std::to_string(c.C) + " " + std::to_string(c.H) + "x" + std::to_string(c.W) + " k " +
               std::to_string(c.k) + " s " + std::to_string(c.s) + (c.global ? " global" : "") + " act '" + c.act +
               "'" + (c.conv_between ? " conv" : ""));
  const int64_t M = c.conv_between ? (c.C + 1) / 2 : c.C;
  const auto x = random_values(size_t(c.N * c.C * c.H * c.W), 4, -2.f, 2.f);
  const auto scale = random_values(size_t(c.C), 5, 0.5f, 1.5f), bias = random_values(size_t(c.C), 6, -0.5f, 0.5f);
  const auto mean = random_values(size_t(c.C), 7, -0.3f, 0.3f), var = random_values(size_t(c.C), 8, 0.2f, 2.f);
  const auto w = random_values(size_t(M * c.C), 9, -0.3f, 0.3f);
  const float eps = 1e-5f;
  const int64_t OH = c.global ? 1 : (c.H - c.k) / c.s + 1, OW = c.global ? 1 : (c.W - c.k) / c.s + 1;

  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("scale", f32_tensor({c.C}, scale))
      .initializer("bias", f32_tensor({c.C}, bias))
      .initializer("mean", f32_tensor({c.C}, mean))
      .initializer("var", f32_tensor({c.C}, var))
      .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"});
  std::string v = "n";
  if (c.act == "Relu") {
    m.node("Relu", {"n"}, {"a"});
    v = "a";
  } else if (c.act == "Clip") {
    m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {1.f})).node("Clip", {"n", "lo", "hi"}, {"a"});
    v = "a";
  }
  if (c.conv_between) {
    m.initializer("w", f32_tensor({M, c.C, 1, 1}, w)).node("Conv", {v, "w"}, {"c"});
    m.initializer("pads", Tensor::from_vector({8}, SINGA_ONNX_INT64, std::vector<int64_t>(8, 0)));
    m.node("Pad", {"c", "pads"}, {"p"});
    v = "p";
  }
  if (c.global) {
    m.node("GlobalAveragePool", {v}, {"y"});
  } else {
    m.node("AveragePool", {v}, {"y"});
    add_ints(m.last(), "kernel_shape", {c.k, c.k});
    add_ints(m.last(), "strides", {c.s, c.s});
  }
  m.output("y", SINGA_ONNX_FLOAT, {c.N, M, OH, OW});

  std::vector<double> act(x.size());
  const int64_t S = c.H * c.W;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = size_t((int64_t(i) / S) % c.C);
    double v = (x[i] - double(mean[ch])) / std::sqrt(double(var[ch]) + eps) * scale[ch] + bias[ch];
    if (c.act == "Relu") v = std::max(v, 0.0);
    if (c.act == "Clip") v = std::min(std::max(v, 0.0), 1.0);
    act[i] = v;
  }
  if (c.conv_between) {
    std::vector<double> conv(size_t(c.N * M * S));
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t mo = 0; mo < M; ++mo)
        for (int64_t i = 0; i < S; ++i) {
          double s = 0;
          for (int64_t ci = 0; ci < c.C; ++ci) s += double(w[size_t(mo * c.C + ci)]) * act[size_t((n * c.C + ci) * S + i)];
          conv[size_t((n * M + mo) * S + i)] = s;
        }
    act = conv;
  }
  const std::vector<double> want = c.global ? average_pool(act, c.N * M, c.H, c.W, c.H, c.W, 1, 1)
                                            : average_pool(act, c.N * M, c.H, c.W, c.k, c.k, c.s, c.s);
  const bool on = options.empty();
  run_threads(m, f32_tensor({c.N, c.C, c.H, c.W}, x), options, [&](const Tensor& y, const singa::onnx::Rep& rep) {
    expect_close(y, want, {c.N, M, OH, OW});
    const auto ops = op_types(rep);
    const bool fused = std::count(ops.begin(), ops.end(), "AveragePool") + std::count(ops.begin(), ops.end(), "GlobalAveragePool") == 0;
    EXPECT_EQ(fused, on) << joined(ops);
    if (on) {
      EXPECT_EQ(ops.front(), "FusedBatchNorm") << joined(ops);
      EXPECT_EQ(ops.size(), c.conv_between ? 2u : 1u) << joined(ops);
    }
  });
}

}  // namespace

TEST(BatchNormPool, NormalizedActivatedAndPooledInOnePass) {
  testing_util::ensure_loaded();
  for (const char* act : {"Relu", "", "Clip"}) {
    NormPoolCase c;
    c.act = act;
    check_norm_pool(c);
  }
  NormPoolCase odd;  // odd channels and planes: the last row and column are left out
  odd.C = 33, odd.H = 9, odd.W = 13;
  check_norm_pool(odd);
  NormPoolCase overlap;  // 3x3/2 and 3x3/1 windows, a batch of three
  overlap.N = 3, overlap.C = 5, overlap.H = 11, overlap.W = 10, overlap.k = 3, overlap.s = 2;
  check_norm_pool(overlap);
  NormPoolCase stride1;
  stride1.C = 3, stride1.H = 6, stride1.W = 7, stride1.k = 3, stride1.s = 1;
  check_norm_pool(stride1);
  NormPoolCase global;  // DenseNet's norm5 -> relu -> GlobalAveragePool
  global.C = 65, global.H = 7, global.W = 7, global.global = true;
  check_norm_pool(global);
  NormPoolCase transition;  // BN -> Relu -> 1x1 Conv -> Pad 0 -> AveragePool 2x2/2
  transition.C = 31, transition.H = 14, transition.W = 15, transition.conv_between = true;
  check_norm_pool(transition);
  check_norm_pool(NormPoolCase{}, {{"pass.cpu.batch_norm_pools", "0"}});
}

// ---- BatchNorm [-> activation] -> 1x1 Conv [-> activation] -------------------

namespace {

struct NormConvCase {
  int64_t N = 1, C = 37, M = 13, H = 9, W = 13;
  std::string act = "Relu";       // the BatchNorm's: "", "Relu", "Clip" or "LeakyRelu"
  bool bias = true, relu_after = true;
  bool fused = true;              // what the pass should do
  bool strided = false;           // a 1x1 Conv of stride 2 is left alone
};

void check_norm_conv(const NormConvCase& c, const std::map<std::string, std::string>& options = {}) {
  SCOPED_TRACE("N " + std::to_string(c.N) + " C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " " +
               std::to_string(c.H) + "x" + std::to_string(c.W) + " act '" + c.act + "'" + (c.bias ? " bias" : "") +
               (c.relu_after ? " relu" : ""));
  const auto x = random_values(size_t(c.N * c.C * c.H * c.W), 11, -2.f, 2.f);
  const auto scale = random_values(size_t(c.C), 12, 0.5f, 1.5f), bias = random_values(size_t(c.C), 13, -0.5f, 0.5f);
  const auto mean = random_values(size_t(c.C), 14, -0.3f, 0.3f), var = random_values(size_t(c.C), 15, 0.2f, 2.f);
  const auto w = random_values(size_t(c.M * c.C), 16, -0.3f, 0.3f), cb = random_values(size_t(c.M), 17, -0.5f, 0.5f);
  const float eps = 1e-3f;
  const int64_t S = c.strided ? 2 : 1, OH = (c.H - 1) / S + 1, OW = (c.W - 1) / S + 1;

  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("scale", f32_tensor({c.C}, scale))
      .initializer("bias", f32_tensor({c.C}, bias))
      .initializer("mean", f32_tensor({c.C}, mean))
      .initializer("var", f32_tensor({c.C}, var))
      .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"});
  add_float(m.last(), "epsilon", eps);
  std::string v = "n";
  if (c.act == "Relu" || c.act == "LeakyRelu") {
    m.node(c.act, {"n"}, {"a"});
    if (c.act == "LeakyRelu") add_float(m.last(), "alpha", 0.1f);
    v = "a";
  } else if (c.act == "Clip") {
    m.initializer("lo", f32_tensor({}, {0.f})).initializer("hi", f32_tensor({}, {1.f})).node("Clip", {"n", "lo", "hi"}, {"a"});
    v = "a";
  }
  m.initializer("w", f32_tensor({c.M, c.C, 1, 1}, w));
  std::vector<std::string> conv_in = {v, "w"};
  if (c.bias) {
    m.initializer("cb", f32_tensor({c.M}, cb));
    conv_in.push_back("cb");
  }
  m.node("Conv", conv_in, {c.relu_after ? "c" : "y"});
  add_ints(m.last(), "kernel_shape", {1, 1});
  if (c.strided) add_ints(m.last(), "strides", {2, 2});
  if (c.relu_after) m.node("Relu", {"c"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, OH, OW});

  const int64_t HW = c.H * c.W;
  std::vector<double> act(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = size_t((int64_t(i) / HW) % c.C);
    double v = (x[i] - double(mean[ch])) / std::sqrt(double(var[ch]) + eps) * scale[ch] + bias[ch];
    if (c.act == "Relu") v = std::max(v, 0.0);
    if (c.act == "LeakyRelu") v = v >= 0 ? v : 0.1 * v;
    if (c.act == "Clip") v = std::min(std::max(v, 0.0), 1.0);
    act[i] = v;
  }
  std::vector<double> want;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t mo = 0; mo < c.M; ++mo)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = c.bias ? cb[size_t(mo)] : 0.0;
          for (int64_t ci = 0; ci < c.C; ++ci)
            s += double(w[size_t(mo * c.C + ci)]) * act[size_t((n * c.C + ci) * HW + oh * S * c.W + ow * S)];
          want.push_back(c.relu_after ? std::max(s, 0.0) : s);
        }
  const bool on = options.empty() && c.fused;
  run_threads(m, f32_tensor({c.N, c.C, c.H, c.W}, x), options, [&](const Tensor& y, const singa::onnx::Rep& rep) {
    expect_close(y, want, {c.N, c.M, OH, OW});
    const auto ops = op_types(rep);
    EXPECT_EQ(ops == std::vector<std::string>{"BatchNormConv"}, on) << joined(ops);
  });
}

}  // namespace

TEST(BatchNormConv, NormalizedBlocksMultipliedInCache) {
  testing_util::ensure_loaded();
  for (const char* act : {"Relu", "", "Clip", "LeakyRelu"})
    for (bool bias : {true, false}) {
      NormConvCase c;
      c.act = act;
      c.bias = bias;
      c.relu_after = !bias;
      check_norm_conv(c);
    }
  NormConvCase big;  // several column blocks per image, a batch of two
  big.N = 2, big.C = 96, big.M = 40, big.H = 23, big.W = 29;
  check_norm_conv(big);
  NormConvCase wide;  // more input channels than one 256 KB block holds columns for
  wide.C = 1027, wide.M = 17, wide.H = 7, wide.W = 7;
  check_norm_conv(wide);
  NormConvCase dense;  // DenseNet's first dense block, last layer
  dense.C = 224, dense.M = 128, dense.H = 56, dense.W = 56;
  check_norm_conv(dense);
  NormConvCase one;  // a single pixel and a single channel
  one.C = 1, one.M = 3, one.H = 1, one.W = 1;
  check_norm_conv(one);
  NormConvCase strided;
  strided.strided = true, strided.fused = false;
  check_norm_conv(strided);
  check_norm_conv(NormConvCase{}, {{"pass.cpu.batch_norm_convs", "0"}});
}

// ---- Concat chains written in place ------------------------------------------

namespace {

// A dense block: f0 = Relu(x); layer k reads c_k = Concat(f0, h_1 .. h_k)
// (reversed: Concat(h_k .. h_1, f0)) and adds h_{k+1} = Conv1x1(c_k), `growth`
// channels; y = Conv1x1(c_L) (all channels). Variant `late`: h_1 is also
// read after the block (by a Conv, a second output) while a new intermediate
// lives where the block's Concats did.
struct BlockCase {
  int64_t N = 1, C0 = 16, growth = 16, H = 4, W = 4, layers = 4;
  bool reversed = false, late = false;
};

ModelBuilder dense_block(const BlockCase& c, int64_t& last_bytes) {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C0, c.H, c.W}).node("Relu", {"x"}, {"f0"});
  std::vector<std::string> feats = {"f0"};
  int64_t channels = c.C0;
  std::string last;
  for (int64_t k = 0; k <= c.layers; ++k) {
    std::vector<std::string> ins = feats;
    if (c.reversed) std::reverse(ins.begin(), ins.end());
    last = "c" + std::to_string(k);
    m.node("Concat", ins, {last});
    add_int(m.last(), "axis", 1);
    if (k == c.layers) break;
    const std::string w = "w" + std::to_string(k), h = "h" + std::to_string(k + 1);
    m.initializer(w, f32_tensor({c.growth, channels, 1, 1}, random_values(size_t(c.growth * channels), 20 + unsigned(k), -0.3f, 0.3f)));
    m.node("Conv", {last, w}, {h});
    feats.push_back(h);
    channels += c.growth;
  }
  last_bytes = c.N * channels * c.H * c.W * 4;
  m.initializer("wy", f32_tensor({channels, channels, 1, 1}, random_values(size_t(channels * channels), 40, -0.2f, 0.2f)));
  m.node("Conv", {last, "wy"}, {"t"});
  if (c.late) {
    // u is new memory after the block's last Concat dies: without the block's
    // room held until h1's last reader, it could land on h1.
    m.initializer("wu", f32_tensor({channels, channels, 1, 1}, random_values(size_t(channels * channels), 41, -0.2f, 0.2f)));
    m.node("Conv", {"t", "wu"}, {"u"}).node("Conv", {"u", "wu"}, {"y"});
    m.initializer("wz", f32_tensor({c.growth, c.growth, 1, 1}, random_values(size_t(c.growth * c.growth), 42, -0.5f, 0.5f)))
        .node("Conv", {"h1", "wz"}, {"z"});
    m.output("z", SINGA_ONNX_FLOAT, {c.N, c.growth, c.H, c.W});
  } else {
    m.node("Tanh", {"t"}, {"y"});
  }
  m.output("y", SINGA_ONNX_FLOAT, {c.N, channels, c.H, c.W});
  return m;
}

std::shared_ptr<singa::onnx::Rep> prepared(const ModelBuilder& m, bool plan) {
  singa::onnx::PrepareOptions o;
  o.memory_plan = plan;
  return singa::onnx::prepare_bytes(m.bytes(), o);
}

void expect_same(const singa::onnx::NamedTensors& a, const singa::onnx::NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].second.shape(), b[k].second.shape());
    for (int64_t i = 0; i < a[k].second.numel(); ++i)
      ASSERT_EQ(a[k].second.data<float>()[i], b[k].second.data<float>()[i]) << a[k].first << "[" << i << "]";
  }
}

}  // namespace

TEST(ConcatChains, ADenseBlockLivesInItsLastConcat) {
  testing_util::ensure_loaded();
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "reversed" : "prefixes");
    BlockCase c;
    c.reversed = reversed;
    int64_t last_bytes = 0;
    ModelBuilder m = dense_block(c, last_bytes);
    auto plain = prepared(m, false), planned = prepared(m, true);
    // Every feature and every Concat sits in c_L, the arena's only room (t
    // is left out: Tanh writes the graph output over it in place).
    EXPECT_EQ(planned->memory_plan().arena_bytes, size_t(last_bytes));
    for (unsigned seed = 1; seed <= 2; ++seed) {
      Tensor x = testing_util::randn({c.N, c.C0, c.H, c.W}, seed);
      expect_same(plain->run({x}), planned->run({x}));
    }
  }
}

TEST(ConcatChains, ReadersAfterTheBlockBatchesAndOtherOrdersComputeTheSame) {
  testing_util::ensure_loaded();
  BlockCase late;
  late.late = true;
  BlockCase batch;  // blocks of 2 images are not contiguous: nothing in place
  batch.N = 2;
  BlockCase odd;  // 5 growth channels on 3x3: 180-byte parts, not at 64-byte offsets
  odd.growth = 5, odd.C0 = 3, odd.H = 3, odd.W = 3, odd.layers = 3;
  for (const BlockCase& c : {late, batch, odd}) {
    int64_t last_bytes = 0;
    ModelBuilder m = dense_block(c, last_bytes);
    auto plain = prepared(m, false), planned = prepared(m, true);
    for (unsigned seed = 1; seed <= 2; ++seed) {
      Tensor x = testing_util::randn({c.N, c.C0, c.H, c.W}, seed);
      expect_same(plain->run({x}), planned->run({x}));
    }
  }
  // Two Concats of the same values in different orders, both alive, and a
  // third whose inputs are a run in the middle of the first's.
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 16, 4})
      .node("Sigmoid", {"x"}, {"a"})
      .node("Neg", {"x"}, {"b"})
      .node("Exp", {"x"}, {"c"})
      .node("Abs", {"x"}, {"d"});
  const std::vector<std::vector<std::string>> orders = {{"a", "b", "c", "d"}, {"c", "b", "a", "d"}, {"b", "c"}};
  for (size_t k = 0; k < orders.size(); ++k) {
    m.node("Concat", orders[k], {"k" + std::to_string(k)});
    add_int(m.last(), "axis", 1);
  }
  m.node("Concat", {"k0", "k1", "k2"}, {"y"});
  add_int(m.last(), "axis", 1);
  m.output("y", SINGA_ONNX_FLOAT, {1, 160, 4});
  auto plain = prepared(m, false), planned = prepared(m, true);
  for (unsigned seed = 1; seed <= 2; ++seed) {
    Tensor x = testing_util::randn({1, 16, 4}, seed);
    expect_same(plain->run({x}), planned->run({x}));
  }
}
