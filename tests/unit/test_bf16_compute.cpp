// The opt-in bfloat16 compute of the CPU pack (cpu.precision=bf16:
// plugins/ops_nn/conv_bf16.cpp, plugins/ops_math/matmul_bf16.cpp and their
// passes). Each product is checked against a reference that rounds the
// operands to bfloat16 (round to nearest even) and accumulates in double:
// the kernels accumulate in float, so the two differ only by float
// accumulation error, bounded here by 2^-20 of the sum of |x w| over the
// product's terms (2^-24 per term and a margin for the order of the sums).
// The float32 reference differs from the bfloat16 one by up to 2^-8 of
// that sum, so a kernel that skipped the rounding, or the option that did
// nothing, fails. Shapes are odd on purpose (channels not a multiple of 16,
// uneven pads and strides, rows not a multiple of a part).
#include "half_tensor.hpp"
#include "model_builder.hpp"

#include <singa/kernel.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

extern char** environ;

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_float;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::float_tensor;
using testing_util::float_values;

bool cpu_has_bf16() { return __builtin_cpu_supports("avx512bf16") && !std::getenv("ONEDNN_MAX_CPU_ISA"); }

float bf16_round(float x) { return float(singa::sdk::bfloat16(x)); }

std::vector<float> random(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// A reference value and the bound on float accumulation error around it.
struct Ref {
  std::vector<double> y, bound;
};

// y = conv(X, W) + B for NCHW X, OIHW W (one group), rounding X and W first when `round`.
Ref conv_ref(const std::vector<float>& x, const std::vector<int64_t>& xs, const std::vector<float>& w,
             const std::vector<int64_t>& ws, const std::vector<float>& b, const std::vector<int64_t>& strides,
             const std::vector<int64_t>& pads, bool round, std::vector<int64_t>& ys) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0], KH = ws[2], KW = ws[3];
  const int64_t OH = (H + pads[0] + pads[2] - KH) / strides[0] + 1, OW = (W + pads[1] + pads[3] - KW) / strides[1] + 1;
  ys = {N, M, OH, OW};
  Ref r;
  r.y.assign(size_t(N * M * OH * OW), 0);
  r.bound.assign(r.y.size(), 0);
  auto q = [&](float v) { return double(round ? bf16_round(v) : v); };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b.empty() ? 0 : b[size_t(m)], mag = std::fabs(s);
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * strides[0] - pads[0] + kh, iw = ow * strides[1] - pads[1] + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const double p = q(x[size_t(((n * C + c) * H + ih) * W + iw)]) * q(w[size_t(((m * C + c) * KH + kh) * KW + kw)]);
                s += p;
                mag += std::fabs(p);
              }
          const size_t i = size_t(((n * M + m) * OH + oh) * OW + ow);
          r.y[i] = s;
          r.bound[i] = mag;
        }
  return r;
}

struct Ran {
  std::vector<float> y;
  int bf16_nodes = 0;
};

Ran run(const std::string& model, const std::vector<Tensor>& inputs, const char* precision, int threads = 2) {
  singa::onnx::PrepareOptions o;
  o.threads = threads;
  if (precision) o.options["cpu.precision"] = precision;
  auto rep = singa::onnx::prepare_bytes(model, o);
  Ran r;
  for (const auto& p : rep->placement())
    r.bf16_nodes += (p.op_type == "Bf16Conv" || p.op_type == "Bf16MatMul") ? 1 : 0;
  auto out = rep->run(inputs);
  r.y = float_values(out.at(0).second);
  return r;
}

// The worst |y - ref| / bound, with bound = 2^-20 of the sum of |terms| (plus
// `ulp_of_y` of |ref| for a bfloat16 output's own rounding).
double worst(const std::vector<float>& y, const Ref& ref, double ulp_of_y = 0) {
  EXPECT_EQ(y.size(), ref.y.size());
  double w = 0;
  for (size_t i = 0; i < y.size() && i < ref.y.size(); ++i) {
    const double tol = std::ldexp(ref.bound[i], -20) + ulp_of_y * std::fabs(ref.y[i]) + 1e-30;
    w = std::max(w, std::fabs(double(y[i]) - ref.y[i]) / tol);
  }
  return w;
}

class Bf16Compute : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
    if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16 (see FallsBackWithoutBf16Cpu)";
  }
};

struct ConvCase {
  std::vector<int64_t> xs, ws, strides, pads;
  bool bias;
};

std::string conv_model(const ConvCase& c, const std::vector<float>& w, const std::vector<float>& b,
                       const std::vector<int64_t>& ys, const char* activation = nullptr, bool add_z = false) {
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, c.xs);
  m.initializer("W", f32_tensor(c.ws, w));
  if (c.bias) m.initializer("B", f32_tensor({c.ws[0]}, b));
  m.node("Conv", c.bias ? std::vector<std::string>{"X", "W", "B"} : std::vector<std::string>{"X", "W"}, {"c"});
  add_ints(m.last(), "strides", c.strides);
  add_ints(m.last(), "pads", c.pads);
  std::string y = "c";
  if (add_z) {
    m.input("Z", SINGA_ONNX_FLOAT, ys);
    m.node("Add", {y, "Z"}, {"s"});
    y = "s";
  }
  if (activation) {
    m.node(activation, {y}, {"a"});
    y = "a";
  }
  m.node("Identity", {y}, {"Y"});
  m.output("Y", SINGA_ONNX_FLOAT, ys);
  return m.bytes();
}

TEST_F(Bf16Compute, ConvMatchesTheBf16ReferenceOnOddShapes) {
  const ConvCase cases[] = {
      {{2, 5, 11, 9}, {19, 5, 3, 2}, {2, 1}, {1, 0, 2, 1}, true},    // uneven pads, 19 outputs
      {{1, 3, 17, 17}, {40, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, false},  // a stem: 3 inputs, 40 outputs in 3 parts
      {{1, 37, 6, 10}, {33, 37, 1, 1}, {1, 1}, {0, 0, 0, 0}, true},  // pointwise
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    const auto x = random(size_t(c.xs[0] * c.xs[1] * c.xs[2] * c.xs[3]), seed++);
    const auto w = random(size_t(c.ws[0] * c.ws[1] * c.ws[2] * c.ws[3]), seed++, 0.3f);
    const auto b = random(size_t(c.ws[0]), seed++, 0.5f);
    std::vector<int64_t> ys;
    const Ref ref = conv_ref(x, c.xs, w, c.ws, c.bias ? b : std::vector<float>(), c.strides, c.pads, true, ys);
    const Ref f32 = conv_ref(x, c.xs, w, c.ws, c.bias ? b : std::vector<float>(), c.strides, c.pads, false, ys);
    const std::string model = conv_model(c, w, b, ys);
    for (int threads : {1, 2}) {
      const Ran on = run(model, {f32_tensor(c.xs, x)}, "bf16", threads);
      EXPECT_EQ(on.bf16_nodes, 1);
      EXPECT_LE(worst(on.y, ref), 1.0) << "W " << c.ws[0] << "x" << c.ws[1] << ", threads " << threads;
      // The float32 result is far outside that bound: the rounding did happen.
      EXPECT_GT(worst(on.y, f32), 4.0);
    }
  }
}

TEST_F(Bf16Compute, FusedActivationAndSummandRideInTheConv) {
  const ConvCase c{{1, 24, 9, 9}, {32, 24, 3, 3}, {1, 1}, {1, 1, 1, 1}, true};
  const auto x = random(24 * 81, 11), w = random(32 * 24 * 9, 12, 0.2f), b = random(32, 13, 0.5f);
  std::vector<int64_t> ys;
  const Ref ref = conv_ref(x, c.xs, w, c.ws, b, c.strides, c.pads, true, ys);
  const auto z = random(size_t(32 * 81), 14);
  const Ran on = run(conv_model(c, w, b, ys, "Relu", true), {f32_tensor(c.xs, x), f32_tensor(ys, z)}, "bf16");
  EXPECT_EQ(on.bf16_nodes, 1) << "Conv + Add + Relu: one Bf16Conv";
  Ref want = ref;
  for (size_t i = 0; i < want.y.size(); ++i) {
    want.y[i] = std::max(0.0, ref.y[i] + z[i]);
    want.bound[i] += std::fabs(z[i]);
  }
  EXPECT_LE(worst(on.y, want), 1.0);
}

TEST_F(Bf16Compute, ConvChainKeepsChannelsLastBetweenConvs) {
  // X -> Conv(8->20, 3x3) -> Relu -> Conv(20->17, 3x3 stride 2) -> Y: the value
  // between the two is channels-last; the second Conv rounds it to bfloat16.
  const std::vector<int64_t> xs{1, 8, 12, 10}, w1s{20, 8, 3, 3}, w2s{17, 20, 3, 3};
  const auto x = random(8 * 120, 21), w1 = random(20 * 72, 22, 0.3f), w2 = random(17 * 180, 23, 0.3f);
  const auto b1 = random(20, 24), b2 = random(17, 25);
  std::vector<int64_t> hs, ys;
  Ref h = conv_ref(x, xs, w1, w1s, b1, {1, 1}, {1, 1, 1, 1}, true, hs);
  std::vector<float> hf(h.y.size());
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = float(std::max(0.0, h.y[i]));
  const Ref ref = conv_ref(hf, hs, w2, w2s, b2, {2, 2}, {1, 1, 1, 1}, true, ys);
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, xs);
  m.initializer("W1", f32_tensor(w1s, w1));
  m.initializer("B1", f32_tensor({20}, b1));
  m.initializer("W2", f32_tensor(w2s, w2));
  m.initializer("B2", f32_tensor({17}, b2));
  m.node("Conv", {"X", "W1", "B1"}, {"c1"});
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Conv", {"r1", "W2", "B2"}, {"Y"});
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  add_ints(m.last(), "strides", {2, 2});
  m.output("Y", SINGA_ONNX_FLOAT, ys);
  for (int threads : {1, 2}) {
    const Ran on = run(m.bytes(), {f32_tensor(xs, x)}, "bf16", threads);
    EXPECT_EQ(on.bf16_nodes, 2);
    // The hidden value differs from the reference's by float accumulation
    // error, which may move its bfloat16 rounding by one step: 2^-7 of |h|
    // per term, so this bound is looser than the single Conv's.
    double w = 0;
    for (size_t i = 0; i < on.y.size(); ++i)
      w = std::max(w, std::fabs(on.y[i] - ref.y[i]) / (std::ldexp(ref.bound[i], -10) + 1e-30));
    EXPECT_LE(w, 1.0) << "threads " << threads;
  }
}

TEST_F(Bf16Compute, ResidualBetweenConvsIsAddedInFloat) {
  // X -> Conv1 -> h; Y = Relu(Conv2(h) + h): h is channels-last float32
  // (read as Z), added in float after Conv2's bfloat16 product (a binary
  // post-op at 1 thread, a copy and a sum at 2).
  const std::vector<int64_t> xs{1, 6, 9, 7}, w1s{24, 6, 3, 3}, w2s{24, 24, 1, 1};
  const auto x = random(6 * 63, 91), w1 = random(24 * 54, 92, 0.3f), w2 = random(24 * 24, 93, 0.3f);
  const auto b1 = random(24, 94), b2 = random(24, 95);
  std::vector<int64_t> hs, ys;
  const Ref h = conv_ref(x, xs, w1, w1s, b1, {1, 1}, {1, 1, 1, 1}, true, hs);
  std::vector<float> hf(h.y.size());
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = float(h.y[i]);
  Ref ref = conv_ref(hf, hs, w2, w2s, b2, {1, 1}, {0, 0, 0, 0}, true, ys);
  for (size_t i = 0; i < ref.y.size(); ++i) {
    ref.y[i] = std::max(0.0, ref.y[i] + hf[i]);
    ref.bound[i] += std::fabs(hf[i]);
  }
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, xs);
  m.initializer("W1", f32_tensor(w1s, w1));
  m.initializer("B1", f32_tensor({24}, b1));
  m.initializer("W2", f32_tensor(w2s, w2));
  m.initializer("B2", f32_tensor({24}, b2));
  m.node("Conv", {"X", "W1", "B1"}, {"h"});
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.node("Conv", {"h", "W2", "B2"}, {"c"});
  m.node("Add", {"c", "h"}, {"s"});
  m.node("Relu", {"s"}, {"Y"});
  m.output("Y", SINGA_ONNX_FLOAT, ys);
  for (int threads : {1, 2}) {
    const Ran on = run(m.bytes(), {f32_tensor(xs, x)}, "bf16", threads);
    EXPECT_EQ(on.bf16_nodes, 2);
    // h itself carries float accumulation error into Conv2's rounding: a
    // bfloat16 step of h (2^-8) at most per term, as in the chain above.
    double w = 0;
    for (size_t i = 0; i < on.y.size(); ++i)
      w = std::max(w, std::fabs(on.y[i] - ref.y[i]) / (std::ldexp(ref.bound[i], -10) + 1e-30));
    EXPECT_LE(w, 1.0) << "threads " << threads;
  }
}

TEST_F(Bf16Compute, SymbolicBatchIsPlannedPerRunShape) {
  const ConvCase c{{-1, 5, 7, 6}, {18, 5, 3, 3}, {1, 2}, {1, 1, 0, 1}, true};
  const auto w = random(18 * 45, 81, 0.3f), b = random(18, 82);
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, c.xs, {"N"});
  m.initializer("W", f32_tensor(c.ws, w));
  m.initializer("B", f32_tensor({18}, b));
  m.node("Conv", {"X", "W", "B"}, {"Y"});
  add_ints(m.last(), "strides", c.strides);
  add_ints(m.last(), "pads", c.pads);
  m.output("Y", SINGA_ONNX_FLOAT, {-1, 18, 7, 3}, {"N"});
  singa::onnx::PrepareOptions o;
  o.options["cpu.precision"] = "bf16";
  auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
  int bf16 = 0;
  for (const auto& p : rep->placement()) bf16 += p.op_type == "Bf16Conv" ? 1 : 0;
  EXPECT_EQ(bf16, 1);
  for (int64_t n : {3, 1, 3}) {
    const std::vector<int64_t> xs{n, 5, 7, 6};
    const auto x = random(size_t(n * 5 * 42), uint32_t(83 + n));
    std::vector<int64_t> ys;
    const Ref ref = conv_ref(x, xs, w, c.ws, b, c.strides, c.pads, true, ys);
    auto out = rep->run({f32_tensor(xs, x)});
    EXPECT_EQ(out.at(0).second.shape(), ys);
    EXPECT_LE(worst(float_values(out.at(0).second), ref), 1.0) << "batch " << n;
  }
}

// Y = A B (+ bias) with A [rows..., K], B [K, N] ([N, K] when trans_b), times alpha.
Ref matmul_ref(const std::vector<float>& a, int64_t rows, int64_t K, const std::vector<float>& b, int64_t N,
               bool trans_b, float alpha, const std::vector<float>& bias, bool round) {
  auto q = [&](float v) { return double(round ? bf16_round(v) : v); };
  Ref r;
  r.y.assign(size_t(rows * N), 0);
  r.bound.assign(r.y.size(), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = q(a[size_t(i * K + k)]) * q(alpha * b[size_t(trans_b ? n * K + k : k * N + n)]);
        s += p;
        mag += std::fabs(p);
      }
      if (!bias.empty()) s += bias[size_t(n)], mag += std::fabs(bias[size_t(n)]);
      r.y[size_t(i * N + n)] = s;
      r.bound[size_t(i * N + n)] = mag;
    }
  return r;
}

TEST_F(Bf16Compute, MatMulAndGemmMatchTheBf16Reference) {
  const int64_t K = 37, N = 21;
  {  // MatMul of a rank-3 A: 2 x 19 rows, split into parts unevenly.
    const auto a = random(size_t(2 * 19 * K), 31), b = random(size_t(K * N), 32, 0.3f);
    ModelBuilder m(13);
    m.input("A", SINGA_ONNX_FLOAT, {2, 19, K});
    m.initializer("Bw", f32_tensor({K, N}, b));
    m.node("MatMul", {"A", "Bw"}, {"Y"});
    m.output("Y", SINGA_ONNX_FLOAT, {2, 19, N});
    const Ref ref = matmul_ref(a, 38, K, b, N, false, 1.f, {}, true);
    const Ref f32 = matmul_ref(a, 38, K, b, N, false, 1.f, {}, false);
    for (int threads : {1, 2}) {
      const Ran on = run(m.bytes(), {f32_tensor({2, 19, K}, a)}, "bf16", threads);
      EXPECT_EQ(on.bf16_nodes, 1);
      EXPECT_LE(worst(on.y, ref), 1.0);
      EXPECT_GT(worst(on.y, f32), 4.0);
    }
  }
  {  // Gemm with transB, alpha 0.5 (a power of two: folding it into B rounds nothing) and a bias row.
    const auto a = random(size_t(7 * K), 33), b = random(size_t(N * K), 34, 0.3f), c = random(size_t(N), 35);
    ModelBuilder m(13);
    m.input("A", SINGA_ONNX_FLOAT, {7, K});
    m.initializer("Bw", f32_tensor({N, K}, b));
    m.initializer("C", f32_tensor({N}, c));
    m.node("Gemm", {"A", "Bw", "C"}, {"Y"});
    add_int(m.last(), "transB", 1);
    add_float(m.last(), "alpha", 0.5f);
    m.output("Y", SINGA_ONNX_FLOAT, {7, N});
    const Ref ref = matmul_ref(a, 7, K, b, N, true, 0.5f, c, true);
    const Ran on = run(m.bytes(), {f32_tensor({7, K}, a)}, "bf16");
    EXPECT_EQ(on.bf16_nodes, 1);
    EXPECT_LE(worst(on.y, ref), 1.0);
  }
}

TEST_F(Bf16Compute, OptionOffOrFp32ChangesNothing) {
  const ConvCase c{{1, 6, 8, 8}, {16, 6, 3, 3}, {1, 1}, {1, 1, 1, 1}, true};
  const auto x = random(6 * 64, 41), w = random(16 * 54, 42, 0.3f), b = random(16, 43);
  std::vector<int64_t> ys;
  const Ref f32 = conv_ref(x, c.xs, w, c.ws, b, c.strides, c.pads, false, ys);
  const std::string model = conv_model(c, w, b, ys);
  const Ran unset = run(model, {f32_tensor(c.xs, x)}, nullptr);
  const Ran fp32 = run(model, {f32_tensor(c.xs, x)}, "fp32");
  EXPECT_EQ(unset.bf16_nodes, 0);
  EXPECT_EQ(fp32.bf16_nodes, 0);
  EXPECT_EQ(unset.y, fp32.y);
  // float32 kernels: within float rounding of the float32 reference.
  EXPECT_LE(worst(unset.y, f32), 64.0);  // 2^-14: Winograd and blocked sums round differently
}

TEST_F(Bf16Compute, MalformedPrecisionFailsThePrepareNamingTheOption) {
  const ConvCase c{{1, 2, 4, 4}, {3, 2, 1, 1}, {1, 1}, {0, 0, 0, 0}, false};
  std::vector<int64_t> ys{1, 3, 4, 4};
  try {
    run(conv_model(c, random(6, 51), {}, ys), {f32_tensor(c.xs, random(32, 52))}, "bf17");
    FAIL() << "cpu.precision=bf17 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.precision=bf17"), std::string::npos) << e.what();
  }
}

TEST_F(Bf16Compute, Bfloat16GraphsRunOnTheSameKernelsWithoutTheOption) {
  // Conv -> MatMul, all in bfloat16: operands are bfloat16 already, the
  // output is the float accumulation rounded once to bfloat16.
  const std::vector<int64_t> xs{1, 4, 5, 5}, ws{6, 4, 3, 3};
  const auto x = random(100, 61), w = random(216, 62, 0.3f);
  std::vector<int64_t> ys;
  const Ref conv = conv_ref(x, xs, w, ws, {}, {1, 1}, {0, 0, 0, 0}, true, ys);  // [1, 6, 3, 3]
  std::vector<float> h(conv.y.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = bf16_round(float(conv.y[i]));
  const auto b = random(3 * 5, 63, 0.5f);
  const Ref ref = matmul_ref(h, 18, 3, b, 5, false, 1.f, {}, true);
  ModelBuilder m(22);
  m.input("X", SINGA_ONNX_BFLOAT16, xs);
  m.initializer("W", float_tensor(ws, SINGA_ONNX_BFLOAT16, w));
  m.initializer("Bw", float_tensor({3, 5}, SINGA_ONNX_BFLOAT16, b));
  m.node("Conv", {"X", "W"}, {"c"});
  m.node("MatMul", {"c", "Bw"}, {"Y"});
  m.output("Y", SINGA_ONNX_BFLOAT16, {1, 6, 3, 5});
  const Ran r = run(m.bytes(), {float_tensor(xs, SINGA_ONNX_BFLOAT16, x)}, nullptr);
  EXPECT_EQ(r.bf16_nodes, 2);
  // The Conv's own output rounding (one bfloat16 step of h, 2^-8) reaches Y
  // through the MatMul's terms; Y's rounding adds 2^-8 of |Y|.
  double w_ = 0;
  for (size_t i = 0; i < r.y.size(); ++i)
    w_ = std::max(w_, std::fabs(r.y[i] - ref.y[i]) / (std::ldexp(ref.bound[i], -7) + std::ldexp(std::fabs(ref.y[i]), -8) + 1e-30));
  EXPECT_LE(w_, 1.0);
}

// On a CPU without bfloat16 dot products the option is a logged no-op. Taken
// here by running this test again in a child process with
// ONEDNN_MAX_CPU_ISA=AVX512_CORE, which oneDNN reads once per process.
TEST(Bf16ComputeFallback, FallsBackWithoutBf16Cpu) {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!isa) {
    if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 to cap oneDNN's ISA at";
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ASSERT_GT(n, 0);
    exe[n] = '\0';
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    env.push_back("ONEDNN_MAX_CPU_ISA=AVX512_CORE");
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=Bf16ComputeFallback.FallsBackWithoutBf16Cpu";
    char* argv[] = {exe, filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child run failed";
    return;
  }
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const ConvCase c{{1, 6, 8, 8}, {16, 6, 3, 3}, {1, 1}, {1, 1, 1, 1}, true};
  const auto x = random(6 * 64, 71), w = random(16 * 54, 72, 0.3f), b = random(16, 73);
  std::vector<int64_t> ys;
  const Ref f32 = conv_ref(x, c.xs, w, c.ws, b, c.strides, c.pads, false, ys);
  const Ran r = run(conv_model(c, w, b, ys), {f32_tensor(c.xs, x)}, "bf16");
  EXPECT_EQ(r.bf16_nodes, 0) << "ONEDNN_MAX_CPU_ISA=" << isa << " leaves no bfloat16 code";
  EXPECT_LE(worst(r.y, f32), 64.0) << "the float32 result";
}

}  // namespace
