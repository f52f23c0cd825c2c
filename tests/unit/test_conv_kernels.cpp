// The float conv kernels of ResNet-style nets (issue 33): a residual Add
// fused into its Conv (ai.singa.cpu::ConvAdd) on every path that takes it,
// the pointwise products adding Z in their tiles (NCHW, strided, sgemm),
// oneDNN's 1x1 and strided code on 16-channel blocks with Z added by the
// primitive; and bottleneck stacks whose 1x1 layers pass blocks between
// each other. Outputs are checked against a double-precision evaluation
// written here, or against the same model run without the graph passes
// (every node on its own, NCHW), at 1 to 3 threads.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::f32_tensor;
using testing_util::prepare_at;
using testing_util::random_values;

namespace {

int64_t numel(const singa::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Worst relative error (against max(1, |want|)); a NaN is the worst.
double worst_error(const Tensor& y, const std::vector<double>& want, int64_t* at) {
  double worst = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double err = std::fabs(y.data<float>()[i] - want[size_t(i)]) / std::max(1.0, std::fabs(want[size_t(i)]));
    if (!(err <= worst)) worst = err, *at = i;
  }
  return worst;
}

// Y = act(Conv(X, W, B) + Z) with Z a second input: one Conv (k x k,
// stride s, pad k/2), an Add and the activation ("Relu", "Clip" or "").
struct SumCase {
  int64_t N = 1, C = 24, M = 40, H = 13, W = 11, k = 1, s = 1;
  bool bias = true;
  std::string act = "Relu";
  int64_t OH() const { return (H + 2 * (k / 2) - k) / s + 1; }
  int64_t OW() const { return (W + 2 * (k / 2) - k) / s + 1; }
};

std::vector<double> sum_reference(const SumCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& b, const std::vector<float>& z) {
  const int64_t p = c.k / 2, OH = c.OH(), OW = c.OW();
  std::vector<double> y;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double v = c.bias ? b[size_t(m)] : 0.0;
          for (int64_t ci = 0; ci < c.C; ++ci)
            for (int64_t kh = 0; kh < c.k; ++kh)
              for (int64_t kw = 0; kw < c.k; ++kw) {
                const int64_t ih = oh * c.s - p + kh, iw = ow * c.s - p + kw;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                v += double(w[size_t(((m * c.C + ci) * c.k + kh) * c.k + kw)]) *
                     x[size_t(((n * c.C + ci) * c.H + ih) * c.W + iw)];
              }
          v += z[size_t(((n * c.M + m) * OH + oh) * OW + ow)];
          if (c.act == "Relu") v = std::max(0.0, v);
          if (c.act == "Clip") v = std::min(0.5, std::max(-0.25, v));
          y.push_back(v);
        }
  return y;
}

void check_sum(const SumCase& c, unsigned seed, const std::map<std::string, std::string>& options = {}) {
  const singa::Shape xs{c.N, c.C, c.H, c.W}, zs{c.N, c.M, c.OH(), c.OW()}, ws{c.M, c.C, c.k, c.k};
  const std::vector<float> x = random_values(size_t(numel(xs)), seed, 1.f), z = random_values(size_t(numel(zs)), seed + 1, 1.f);
  const std::vector<float> w = random_values(size_t(numel(ws)), seed + 2, 0.4f), b = random_values(size_t(c.M), seed + 3, 0.5f);
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, xs).input("z", SINGA_ONNX_FLOAT, zs);
  m.initializer("w", f32_tensor(ws, w));
  std::vector<std::string> conv_in{"x", "w"};
  if (c.bias) {
    m.initializer("b", f32_tensor({c.M}, b));
    conv_in.push_back("b");
  }
  m.node("Conv", conv_in, {"c"}, "conv");
  add_ints(m.last(), "pads", std::vector<int64_t>(4, c.k / 2));
  add_ints(m.last(), "strides", {c.s, c.s});
  m.node("Add", {"c", "z"}, {c.act.empty() ? "y" : "s"}, "add");
  if (c.act == "Relu") m.node("Relu", {"s"}, {"y"}, "relu");
  if (c.act == "Clip") {
    m.initializer("lo", f32_tensor({}, {-0.25f})).initializer("hi", f32_tensor({}, {0.5f}));
    m.node("Clip", {"s", "lo", "hi"}, {"y"}, "clip");
  }
  m.output("y", SINGA_ONNX_FLOAT, zs);
  const std::vector<double> want = sum_reference(c, x, w, b, z);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads, options);
    EXPECT_EQ(count_op(*rep, "ConvAdd"), 1);  // the Add is fused, so the fused paths are what is checked
    auto out = rep->run(std::vector<Tensor>{f32_tensor(xs, x), f32_tensor(zs, z)});
    ASSERT_EQ(out.size(), 1u);
    const Tensor& y = out[0].second;
    ASSERT_EQ(y.shape(), zs);
    int64_t at = 0;
    const double worst = worst_error(y, want, &at);
    EXPECT_LE(worst, 1e-4) << "at " << at << ": " << y.data<float>()[at] << " against " << want[size_t(at)];
  }
}

}  // namespace

// 1x1 ConvAdds on NCHW: output channels that are not a whole panel of 8,
// planes that are not a whole tile of 48 pixels, strides (the gathered
// pixels), with and without bias, Relu, Clip or no activation after the sum;
// through the register tiles and, with cpu.pointwise_direct=0, through
// sgemm with the sum in its epilogue.
TEST(ConvKernels, PointwiseConvAddAddsZInItsTiles) {
  testing_util::ensure_loaded();
  for (const char* direct : {"1", "0"}) {
    SCOPED_TRACE(std::string("cpu.pointwise_direct=") + direct);
    const std::map<std::string, std::string> o{{"cpu.pointwise_direct", direct}};
    SumCase c;
    check_sum(c, 1, o);
    c.M = 13, c.H = 9, c.W = 23, c.act = "";
    check_sum(c, 2, o);
    c.M = 64, c.C = 17, c.H = 12, c.W = 12, c.bias = false, c.act = "Clip";
    check_sum(c, 3, o);
    c = SumCase();
    c.s = 2, c.H = 15, c.W = 20, c.M = 33;
    check_sum(c, 4, o);
    c.N = 2, c.C = 32, c.M = 48, c.H = 8, c.W = 9, c.act = "";
    check_sum(c, 5, o);
  }
}

// ConvAdds that oneDNN runs (3x3, and 1x1 of 16-channel multiples) with
// and without a blocked layout around them; Z added by the primitive or in
// the pass that moves the rows to NCHW.
TEST(ConvKernels, OneDnnConvAdd) {
  testing_util::ensure_loaded();
  SumCase c;
  c.C = 32, c.M = 48, c.k = 3, c.H = 14, c.W = 14;
  check_sum(c, 10);
  c.s = 2, c.act = "Clip";
  check_sum(c, 11);
  c.C = 16, c.M = 16, c.k = 3, c.s = 1, c.H = 9, c.W = 31, c.bias = false, c.act = "";
  check_sum(c, 12);
  c.C = 64, c.M = 32, c.k = 1, c.H = 5, c.W = 7, c.act = "Relu";  // a small plane: oneDNN's 1x1 code
  check_sum(c, 13);
}

namespace {

// A stack of ResNet bottlenecks on [1, C, H, W]: a stem 3x3 conv to C0
// channels, then per block 1x1 (C -> Cm) -> Relu -> 3x3 (stride s) -> Relu ->
// 1x1 (Cm -> Co), plus the shortcut (identity, or a 1x1 of stride s where
// the shape changes), Add, Relu; then (`head`) a 3x3 Conv to 16 channels and
// GlobalAveragePool. With planes of 64 pixels and more the 1x1 layers pass
// 16-channel blocks to each other.
struct Block {
  int64_t mid, out, stride;
};

ModelBuilder bottlenecks(int64_t H, int64_t W, int64_t C0, const std::vector<Block>& blocks, unsigned seed,
                         bool head = false) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {1, 3, H, W});
  int serial = 0;
  auto conv = [&](const std::string& in, int64_t C, int64_t M, int64_t k, int64_t s, bool relu) {
    const std::string name = "c" + std::to_string(serial++);
    m.initializer(name + "_w", f32_tensor({M, C, k, k}, random_values(size_t(M * C * k * k), seed++, 1.2f / std::sqrt(float(C * k * k)))));
    m.initializer(name + "_b", f32_tensor({M}, random_values(size_t(M), seed++, 0.1f)));
    m.node("Conv", {in, name + "_w", name + "_b"}, {relu ? name + "_c" : name}, name);
    add_ints(m.last(), "pads", std::vector<int64_t>(4, k / 2));
    add_ints(m.last(), "strides", {s, s});
    if (relu) m.node("Relu", {name + "_c"}, {name}, name + "_relu");
    return name;
  };
  std::string x = conv("x", 3, C0, 3, 1, true);
  int64_t C = C0;
  for (const Block& b : blocks) {
    const std::string a = conv(x, C, b.mid, 1, 1, true);
    const std::string d = conv(a, b.mid, b.mid, 3, b.stride, true);
    const std::string e = conv(d, b.mid, b.out, 1, 1, false);
    const std::string shortcut = (b.stride != 1 || b.out != C) ? conv(x, C, b.out, 1, b.stride, false) : x;
    const std::string sum = "sum" + std::to_string(serial++);
    m.node("Add", {e, shortcut}, {sum + "_a"}, sum + "_add");
    m.node("Relu", {sum + "_a"}, {sum}, sum + "_relu");
    x = sum;
    C = b.out;
  }
  if (head) {
    x = conv(x, C, 16, 3, 1, true);  // a Conv reads the last sum, so the residual chain may stay blocked
    C = 16;
  }
  m.node("GlobalAveragePool", {x}, {"y"}, "gap");
  m.output("y", SINGA_ONNX_FLOAT, {1, C, 1, 1});
  return m;
}

// The optimised model's values in 16-channel blocks.
int blocked_values(const ModelBuilder& m) {
  const ::onnx::ModelProto optimized = singa::onnx::optimized_model(m.model, {});
  int n = 0;
  for (const auto& p : optimized.metadata_props())
    n += p.key().rfind("singa.layout:", 0) == 0 && p.value() == "ai.singa.cpu.nChw16c";
  return n;
}

void check_against_unfused(const ModelBuilder& m, int64_t H, int64_t W, unsigned seed,
                           const std::map<std::string, std::string>& options = {}) {
  const Tensor x = f32_tensor({1, 3, H, W}, random_values(size_t(3 * H * W), seed, 1.f));
  singa::onnx::PrepareOptions plain;
  plain.optimize = false;
  plain.threads = 1;
  const Tensor want = singa::onnx::prepare_bytes(m.bytes(), plain)->run({x})[0].second;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads, options);
    EXPECT_GT(count_op(*rep, "ConvAdd"), 0);
    const Tensor y = rep->run({x})[0].second;
    ASSERT_EQ(y.shape(), want.shape());
    double worst = 0;
    for (int64_t i = 0; i < y.numel(); ++i)
      worst = std::max<double>(worst, std::fabs(y.data<float>()[i] - want.data<float>()[i]) /
                                          std::max(1.f, std::fabs(want.data<float>()[i])));
    EXPECT_LE(worst, 2e-4);
  }
}

}  // namespace

// ResNet-50's pattern at small sizes: the 1x1 layers of every bottleneck
// read and write blocks (oneDNN's 1x1 code, no reorders), the strided blocks
// and the shortcut ConvAdds included; the same outputs as the unfused model.
TEST(ConvKernels, BottlenecksPassBlocks) {
  testing_util::ensure_loaded();
  const std::vector<Block> blocks{{16, 64, 1}, {16, 64, 1}, {32, 128, 2}, {32, 128, 1}};
  const ModelBuilder m = bottlenecks(20, 18, 64, blocks, 40);
  // Every Conv output is blocked but the last sum, which GlobalAveragePool
  // reads: its ConvAdd adds the blocked Z before the result leaves the
  // blocks (3 values were blocked when the 1x1 layers read NCHW).
  EXPECT_EQ(blocked_values(m), 13);
  check_against_unfused(m, 20, 18, 41);
  check_against_unfused(m, 20, 18, 42, {{"pass.cpu.blocked_layout", "0"}});
  check_against_unfused(m, 20, 18, 43, {{"cpu.dnnl_unblock16", "0"}});
  check_against_unfused(m, 20, 18, 44, {{"cpu.dnnl", "0"}});  // blocked values through the NCHW paths
  // Odd planes and a stride-2 block on an odd height.
  check_against_unfused(bottlenecks(17, 23, 32, {{16, 32, 1}, {16, 48, 2}}, 50), 17, 23, 51);
  // A Conv after the last block: the sums, the shortcuts and the widening
  // 1x1 ConvAdds are blocked too (split by output channels at 2-3 threads,
  // Z added by the primitive).
  const ModelBuilder h = bottlenecks(20, 18, 64, blocks, 60, true);
  EXPECT_EQ(blocked_values(h), 14);  // every Conv output but the head's
  check_against_unfused(h, 20, 18, 61);
}

// MaxPool 3x3, stride 1, pad 1 on planes up to 32 wide (GoogLeNet's
// Inception pools on 28x28, 14x14 and 7x7 planes) takes a kernel of its own:
// each plane row in one or two vectors. Against a scalar evaluation of the ONNX
// definition (padding never wins, the first of equal maxima, NaN where the
// first tap of a window is NaN and never chosen otherwise), on widths 1-32
// and heights 1-18, and on a wider plane that keeps the general path.
TEST(ConvKernels, MaxPool3x3Stride1OnNarrowPlanes) {
  testing_util::ensure_loaded();
  auto reference = [](const std::vector<float>& x, int64_t P, int64_t H, int64_t W) {
    std::vector<float> y(x.size());
    for (int64_t p = 0; p < P; ++p)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          bool have = false;
          float best = 0;
          for (int64_t a = i - 1; a <= i + 1; ++a)
            for (int64_t b = j - 1; b <= j + 1; ++b) {
              if (a < 0 || a >= H || b < 0 || b >= W) continue;
              const float v = x[size_t((p * H + a) * W + b)];
              if (!have || v > best) best = v, have = true;
            }
          y[size_t((p * H + i) * W + j)] = best;
        }
    return y;
  };
  std::mt19937 rng(70);
  for (int64_t W : {1, 2, 3, 5, 7, 8, 13, 14, 15, 16, 17, 18, 23, 28, 31, 32, 33}) {
    for (int64_t H : {1, 2, 3, 4, 7, 14, 18}) {
      const int64_t C = 48;  // planes enough for two threads to split them
      const singa::Shape xs{1, C, H, W};
      // Values from a small set (ties), with some NaN, -inf and -0.
      std::vector<float> x(size_t(C * H * W));
      std::uniform_int_distribution<int> pick(0, 19);
      for (float& v : x) {
        const int k = pick(rng);
        v = k == 0 ? std::nanf("") : k == 1 ? -std::numeric_limits<float>::infinity() : k == 2 ? -0.f : float(k % 6) - 3;
      }
      ModelBuilder m(13);
      m.input("x", SINGA_ONNX_FLOAT, xs);
      m.node("MaxPool", {"x"}, {"y"}, "pool");
      add_ints(m.last(), "kernel_shape", {3, 3});
      add_ints(m.last(), "pads", {1, 1, 1, 1});
      m.output("y", SINGA_ONNX_FLOAT, xs);
      const std::vector<float> want = reference(x, C, H, W);
      for (int threads : {1, 2}) {
        SCOPED_TRACE("H " + std::to_string(H) + " W " + std::to_string(W) + " threads " + std::to_string(threads));
        const Tensor y = prepare_at(m, threads)->run({f32_tensor(xs, x)})[0].second;
        ASSERT_EQ(y.shape(), xs);
        for (size_t i = 0; i < want.size(); ++i) {
          const float got = y.data<float>()[i];
          // Bit-exact: -0 against 0 and NaN against NaN included.
          ASSERT_TRUE(std::memcmp(&got, &want[i], sizeof got) == 0 || (std::isnan(got) && std::isnan(want[i])))
              << "at " << i << ": " << got << " against " << want[i];
        }
      }
    }
  }
}
