// SiLU in the depthwise family's fused kernels (issue 33): EfficientNet
// blocks (1x1 expand -> SiLU -> depthwise KxK -> SiLU -> [squeeze-excite] ->
// 1x1 project [+ X]) whose pre-activations reach far past the range where
// the sigmoid saturates (|z| up to a few hundred, where the fused SiLU
// clamps its exponent), with infinities and NaN in the input, over every
// window the band kernel takes (3x3, 5x5, 7x7 at strides 1 and 2), expanded
// channels that are not whole vectors, and 1 to 3 threads. Each output is
// checked against a double-precision evaluation of the ONNX graph written
// here (SiLU as x / (1 + e^-x), as the exporters' Sigmoid then Mul), not
// against another of singa's kernels.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::f32_tensor;
using testing_util::prepare_at;
using testing_util::random_floats;
using testing_util::random_values;

namespace {

struct Block {
  int64_t C = 8, Me = 37, M = 12, H = 11, W = 9, K = 3, S = 1;
  bool se = false, skip = false;
  float scale = 30.f;  // the expand weights' range: pre-activations of +-100 and more
  int64_t pad() const { return K / 2; }
  int64_t OH() const { return (H + 2 * pad() - K) / S + 1; }
  int64_t OW() const { return (W + 2 * pad() - K) / S + 1; }
  int64_t R() const { return std::max<int64_t>(1, Me / 4); }
};

double silu(double v) { return v / (1.0 + std::exp(-v)); }

struct Weights {
  std::vector<float> w1, b1, wd, bd, w2, b2, s1, sb1, s2, sb2;
};

Weights make_weights(const Block& b, unsigned seed) {
  std::mt19937 rng(seed);
  Weights w;
  w.w1 = random_values(size_t(b.Me * b.C), rng, b.scale);
  w.b1 = random_values(size_t(b.Me), rng, 1.f);
  w.wd = random_values(size_t(b.Me * b.K * b.K), rng, 1.f);
  w.bd = random_values(size_t(b.Me), rng, 1.f);
  w.w2 = random_values(size_t(b.M * b.Me), rng, 0.3f);
  w.b2 = random_values(size_t(b.M), rng, 0.5f);
  w.s1 = random_values(size_t(b.R() * b.Me), rng, 0.05f);
  w.sb1 = random_values(size_t(b.R()), rng, 0.5f);
  w.s2 = random_values(size_t(b.Me * b.R()), rng, 0.5f);
  w.sb2 = random_values(size_t(b.Me), rng, 0.5f);
  return w;
}

// The block in doubles: x [1, C, H, W] -> y [1, M, OH, OW].
std::vector<double> reference(const Block& b, const Weights& w, const float* x) {
  const int64_t HW = b.H * b.W, OH = b.OH(), OW = b.OW(), OHW = OH * OW, Me = b.Me;
  std::vector<double> e(size_t(Me * HW)), d(size_t(Me * OHW)), y;
  for (int64_t m = 0; m < Me; ++m)
    for (int64_t p = 0; p < HW; ++p) {
      double v = w.b1[size_t(m)];
      for (int64_t c = 0; c < b.C; ++c) v += double(w.w1[size_t(m * b.C + c)]) * x[c * HW + p];
      e[size_t(m * HW + p)] = silu(v);
    }
  for (int64_t m = 0; m < Me; ++m)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double v = w.bd[size_t(m)];
        for (int64_t ky = 0; ky < b.K; ++ky)
          for (int64_t kx = 0; kx < b.K; ++kx) {
            const int64_t iy = oy * b.S - b.pad() + ky, ix = ox * b.S - b.pad() + kx;
            if (iy >= 0 && iy < b.H && ix >= 0 && ix < b.W)
              v += double(w.wd[size_t((m * b.K + ky) * b.K + kx)]) * e[size_t(m * HW + iy * b.W + ix)];
          }
        d[size_t(m * OHW + oy * OW + ox)] = silu(v);
      }
  if (b.se) {
    std::vector<double> mean(size_t(Me), 0.0), h(size_t(b.R()));
    for (int64_t m = 0; m < Me; ++m) {
      for (int64_t p = 0; p < OHW; ++p) mean[size_t(m)] += d[size_t(m * OHW + p)];
      mean[size_t(m)] /= double(OHW);
    }
    for (int64_t j = 0; j < b.R(); ++j) {
      double v = w.sb1[size_t(j)];
      for (int64_t m = 0; m < Me; ++m) v += double(w.s1[size_t(j * Me + m)]) * mean[size_t(m)];
      h[size_t(j)] = silu(v);
    }
    for (int64_t m = 0; m < Me; ++m) {
      double v = w.sb2[size_t(m)];
      for (int64_t j = 0; j < b.R(); ++j) v += double(w.s2[size_t(m * b.R() + j)]) * h[size_t(j)];
      const double gate = 1.0 / (1.0 + std::exp(-v));
      for (int64_t p = 0; p < OHW; ++p) d[size_t(m * OHW + p)] *= gate;
    }
  }
  for (int64_t o = 0; o < b.M; ++o)
    for (int64_t p = 0; p < OHW; ++p) {
      double v = w.b2[size_t(o)];
      for (int64_t m = 0; m < Me; ++m) v += double(w.w2[size_t(o * Me + m)]) * d[size_t(m * OHW + p)];
      if (b.skip) v += x[o * HW + p];
      y.push_back(v);
    }
  return y;
}

// SiLU as the exporters write it: Sigmoid, then Mul.
std::string silu_nodes(ModelBuilder& m, const std::string& from) {
  m.node("Sigmoid", {from}, {from + "_sig"});
  m.node("Mul", {from, from + "_sig"}, {from + "_silu"});
  return from + "_silu";
}

ModelBuilder block_model(const Block& b, const Weights& w) {
  ModelBuilder m(13);
  const int64_t Me = b.Me, R = b.R();
  m.input("x", SINGA_ONNX_FLOAT, {1, b.C, b.H, b.W});
  m.initializer("w1", f32_tensor({Me, b.C, 1, 1}, w.w1)).initializer("b1", f32_tensor({Me}, w.b1));
  m.node("Conv", {"x", "w1", "b1"}, {"e"}, "expand");
  const std::string e = silu_nodes(m, "e");
  m.initializer("wd", f32_tensor({Me, 1, b.K, b.K}, w.wd)).initializer("bd", f32_tensor({Me}, w.bd));
  m.node("Conv", {e, "wd", "bd"}, {"d"}, "dw");
  add_ints(m.last(), "pads", {b.pad(), b.pad(), b.pad(), b.pad()});
  add_ints(m.last(), "strides", {b.S, b.S});
  add_ints(m.last(), "kernel_shape", {b.K, b.K});
  auto* g = m.last()->add_attribute();
  g->set_name("group");
  g->set_type(::onnx::AttributeProto::INT);
  g->set_i(Me);
  std::string v = silu_nodes(m, "d");
  if (b.se) {
    m.initializer("s1", f32_tensor({R, Me, 1, 1}, w.s1)).initializer("sb1", f32_tensor({R}, w.sb1));
    m.initializer("s2", f32_tensor({Me, R, 1, 1}, w.s2)).initializer("sb2", f32_tensor({Me}, w.sb2));
    m.node("GlobalAveragePool", {v}, {"mean"});
    m.node("Conv", {"mean", "s1", "sb1"}, {"h"});
    const std::string h = silu_nodes(m, "h");
    m.node("Conv", {h, "s2", "sb2"}, {"logit"});
    m.node("Sigmoid", {"logit"}, {"gate"});
    m.node("Mul", {v, "gate"}, {"gated"});
    v = "gated";
  }
  m.initializer("w2", f32_tensor({b.M, Me, 1, 1}, w.w2)).initializer("b2", f32_tensor({b.M}, w.b2));
  m.node("Conv", {v, "w2", "b2"}, {"p"}, "project");
  v = "p";
  if (b.skip) {
    m.node("Add", {"x", v}, {"sum"});
    v = "sum";
  }
  m.node("Identity", {v}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {1, b.M, b.OH(), b.OW()});
  return m;
}

// Agreement where both are finite (relative to max(1, |want|)), the same
// infinity, or both NaN: infinities and NaN spread from the input pixels
// that hold them the same way whatever order the sums take.
bool agrees(float got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// Runs the block at 1 to 3 threads; returns its ExpandDepthwiseProject nodes.
int check_block(const Block& b, const Tensor& x, unsigned seed) {
  const Weights w = make_weights(b, seed);
  const ModelBuilder m = block_model(b, w);
  const std::vector<double> want = reference(b, w, x.data<float>());
  int fused = -1;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads);
    auto out = rep->run({x});
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1) return -1;
    const Tensor& y = out[0].second;
    EXPECT_EQ(y.shape(), (singa::Shape{1, b.M, b.OH(), b.OW()}));
    if (y.numel() != int64_t(want.size())) return -1;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < y.numel(); ++i)
      if (!agrees(y.data<float>()[i], want[size_t(i)], 2e-5)) bad += 1, first = first < 0 ? i : first;
    EXPECT_EQ(bad, 0) << "first at " << first << ": " << y.data<float>()[std::max<int64_t>(first, 0)]
                      << " against " << want[size_t(std::max<int64_t>(first, 0))];
    fused = count_op(*rep, "ExpandDepthwiseProject");
  }
  return fused;
}

std::vector<Block> windows() {
  std::vector<Block> cases;
  for (int64_t k : {3, 5, 7})
    for (int64_t s : {1, 2}) {
      Block b;
      b.K = k, b.S = s;
      b.Me = s == 1 ? 37 : 48;  // 2.3 vectors (padded), or 3 whole ones
      cases.push_back(b);
    }
  return cases;
}

}  // namespace

// The fused SiLU against the formula over pre-activations of up to a few
// hundred either way, at every window, with and without the SE and skip.
TEST(DepthwiseFamily2, SiluSaturatesLikeTheFormula) {
  testing_util::ensure_loaded();
  unsigned seed = 300;
  for (Block b : windows()) {
    for (bool se : {false, true}) {
      b.se = se;
      b.skip = b.S == 1 && se;
      b.M = b.skip ? b.C : 12;
      SCOPED_TRACE("K " + std::to_string(b.K) + " S " + std::to_string(b.S) + (se ? " SE" : ""));
      EXPECT_EQ(check_block(b, random_floats({1, b.C, b.H, b.W}, seed), seed), 1);
      ++seed;
    }
  }
}

// The pre-activations that saturate do: their range reaches past the
// fused SiLU's clamp at |z| = 80 (else the test above would not test it).
TEST(DepthwiseFamily2, InputsReachTheClamp) {
  const Block b;
  const Weights w = make_weights(b, 300);
  const Tensor x = random_floats({1, b.C, b.H, b.W}, 300);
  double lo = 0, hi = 0;
  const int64_t HW = b.H * b.W;
  for (int64_t m = 0; m < b.Me; ++m)
    for (int64_t p = 0; p < HW; ++p) {
      double v = w.b1[size_t(m)];
      for (int64_t c = 0; c < b.C; ++c) v += double(w.w1[size_t(m * b.C + c)]) * x.data<float>()[c * HW + p];
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  EXPECT_LT(lo, -80.0);
  EXPECT_GT(hi, 80.0);
}

// Infinities and NaN in the input: SiLU(+inf) = +inf, SiLU(-inf) = -inf / inf
// = NaN as the formula has it, NaN through; they spread through the sums.
TEST(DepthwiseFamily2, InfinitiesAndNanPropagate) {
  testing_util::ensure_loaded();
  Block b;
  b.K = 5, b.H = 12, b.W = 12, b.scale = 1.f;
  Tensor x = random_floats({1, b.C, b.H, b.W}, 400);
  const float inf = std::numeric_limits<float>::infinity();
  float* v = x.data<float>();
  v[0 * 144 + 2 * 12 + 3] = inf;  // channel 0, pixel (2, 3)
  v[3 * 144 + 9 * 12 + 8] = -inf;
  v[5 * 144 + 6 * 12 + 1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(check_block(b, x, 401), 1);
}

// Odd channel counts and planes that leave tile and strip remainders, a
// skip connection, 7x7 at stride 2 over a plane narrower than two strips.
TEST(DepthwiseFamily2, OddShapes) {
  testing_util::ensure_loaded();
  Block b;
  b.C = b.M = 13, b.Me = 51, b.H = 5, b.W = 17, b.K = 5, b.skip = true;
  EXPECT_EQ(check_block(b, random_floats({1, b.C, b.H, b.W}, 500), 500), 1);
  b = Block();
  b.C = 3, b.Me = 17, b.M = 5, b.H = 9, b.W = 6, b.K = 7, b.S = 2, b.se = true;
  EXPECT_EQ(check_block(b, random_floats({1, b.C, b.H, b.W}, 501), 501), 1);
  // Outputs that end in 8 channels: after one whole vector (a half vector
  // of 256-bit FMAs), after two, three, or a group of four and three (a
  // masked vector).
  for (int64_t M : {24, 40, 56, 120, 88}) {
    b = Block();
    b.M = M, b.Me = 48, b.H = 8, b.W = 7, b.scale = 2.f;
    SCOPED_TRACE("M " + std::to_string(M));
    EXPECT_EQ(check_block(b, random_floats({1, b.C, b.H, b.W}, 502), 502), 1);
  }
}

namespace {

// y = SiLU(Conv(x)) for one input channel, a KxK window (pads K / 2) and 16
// outputs whose only nonzero tap (the centre) is +-1 or +-3: each output sees
// x's values themselves, so SiLU's own limits show (-inf gives NaN, as -inf /
// inf).
void check_conv_silu(int64_t K, const std::vector<float>& xs) {
  const int64_t M = 16, W = int64_t(xs.size()), pad = K / 2;
  std::vector<float> w(size_t(M * K * K), 0.f), bias(size_t(M), 0.f);
  for (int64_t m = 0; m < M; ++m) w[size_t(m * K * K + pad * K + pad)] = (m % 2 ? -1.f : 1.f) * (m % 4 < 2 ? 1.f : 3.f);
  ModelBuilder mb(13);
  mb.input("x", SINGA_ONNX_FLOAT, {1, 1, 1, W});
  mb.initializer("w", f32_tensor({M, 1, K, K}, w)).initializer("b", f32_tensor({M}, bias));
  mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints(mb.last(), "pads", {pad, pad, pad, pad});
  add_ints(mb.last(), "kernel_shape", {K, K});
  mb.node("Identity", {silu_nodes(mb, "c")}, {"y"});
  mb.output("y", SINGA_ONNX_FLOAT, {1, M, 1, W});
  auto rep = singa::onnx::prepare_bytes(mb.bytes());
  const Tensor x = f32_tensor({1, 1, 1, W}, xs);
  auto out = rep->run({x});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& y = out[0].second;
  ASSERT_EQ(y.numel(), M * W);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t p = 0; p < W; ++p) {
      // The product as the kernel rounds it (one nonzero tap, zero bias).
      const float z = w[size_t(m * K * K + pad * K + pad)] * xs[size_t(p)];
      const double want = double(z) / (1.0 + std::exp(-double(z)));
      EXPECT_TRUE(agrees(y.data<float>()[m * W + p], want, 1e-6))
          << "output " << m << " at x = " << xs[size_t(p)] << ": " << y.data<float>()[m * W + p] << " against "
          << want;
    }
}

}  // namespace

// Plain Convs with SiLU fused (the same vector SiLU in the 1x1 and KxK
// kernels) at the formula's limits.
TEST(DepthwiseFamily2, FusedConvSiluLimits) {
  testing_util::ensure_loaded();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs{-inf, inf, nan, -1000.f, 1000.f, -90.f, -85.f, -79.f, -27.f, -26.f, 26.f, 27.f, 0.f, -0.f,
                        1e-30f, -1e-30f, 1.5f, -1.5f, 0.25f, 88.f, -88.f, 200.f, -200.f, 5.f, -5.f, 17.f, -17.f};
  for (int i = -160; i <= 160; ++i) xs.push_back(float(i) / 8.f);  // every regime in steps of 1/8
  check_conv_silu(1, xs);
  // A KxK window's zero taps times a neighbour's infinity are NaN: finite values only.
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](float v) { return !std::isfinite(v); }), xs.end());
  check_conv_silu(3, xs);
}

namespace {

// A classifier head as torch exports x.mean([2, 3]): a 1x1 Conv, Relu,
// ReduceMean over the spatial axes, then (keepdims = 0) a Gemm.
struct MeanHead {
  int64_t N = 1, C = 24, M = 70, H = 7, W = 7, outputs = 37;
  std::vector<int64_t> axes{2, 3};
  int64_t keepdims = 0;
  bool gemm = true, trans_b = true, axes_input = false;  // axes_input: opset 18's axes as an input
};

// Runs the head and checks it against sums in double; returns the op types run.
std::vector<std::string> check_mean_head(const MeanHead& h, unsigned seed) {
  std::mt19937 rng(seed);
  const std::vector<float> w = random_values(size_t(h.M * h.C), rng, 1.f), b = random_values(size_t(h.M), rng, 1.f);
  const std::vector<float> wfc = random_values(size_t(h.outputs * h.M), rng, 1.f), bfc = random_values(size_t(h.outputs), rng, 1.f);
  const std::vector<float> xv = random_values(size_t(h.N * h.C * h.H * h.W), rng, 1.f);
  ModelBuilder m(h.axes_input ? 18 : 13);
  m.input("x", SINGA_ONNX_FLOAT, {h.N, h.C, h.H, h.W});
  m.initializer("w", f32_tensor({h.M, h.C, 1, 1}, w)).initializer("b", f32_tensor({h.M}, b));
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  m.node("Relu", {"c"}, {"r"});
  if (h.axes_input) {
    Tensor a({int64_t(h.axes.size())}, SINGA_ONNX_INT64);
    std::copy(h.axes.begin(), h.axes.end(), a.data<int64_t>());
    m.initializer("axes", a);
    m.node("ReduceMean", {"r", "axes"}, {"mean"});
  } else {
    m.node("ReduceMean", {"r"}, {"mean"});
    add_ints(m.last(), "axes", h.axes);
  }
  auto* k = m.last()->add_attribute();
  k->set_name("keepdims");
  k->set_type(::onnx::AttributeProto::INT);
  k->set_i(h.keepdims);
  // Means [N, M] by the formula.
  const int64_t P = h.H * h.W;
  std::vector<double> means(size_t(h.N * h.M));
  for (int64_t n = 0; n < h.N; ++n)
    for (int64_t o = 0; o < h.M; ++o) {
      double s = 0;
      for (int64_t p = 0; p < P; ++p) {
        double v = b[size_t(o)];
        for (int64_t c = 0; c < h.C; ++c) v += double(w[size_t(o * h.C + c)]) * xv[size_t((n * h.C + c) * P + p)];
        s += std::max(v, 0.0);
      }
      means[size_t(n * h.M + o)] = s / double(P);
    }
  std::vector<double> want = means;
  singa::Shape ys = h.keepdims ? singa::Shape{h.N, h.M, 1, 1} : singa::Shape{h.N, h.M};
  if (h.gemm) {
    m.initializer("wfc", f32_tensor(h.trans_b ? singa::Shape{h.outputs, h.M} : singa::Shape{h.M, h.outputs}, wfc));
    m.initializer("bfc", f32_tensor({h.outputs}, bfc));
    m.node("Gemm", {"mean", "wfc", "bfc"}, {"y"});
    auto* t = m.last()->add_attribute();
    t->set_name("transB");
    t->set_type(::onnx::AttributeProto::INT);
    t->set_i(h.trans_b ? 1 : 0);
    want.assign(size_t(h.N * h.outputs), 0.0);
    for (int64_t n = 0; n < h.N; ++n)
      for (int64_t j = 0; j < h.outputs; ++j) {
        double s = bfc[size_t(j)];
        for (int64_t o = 0; o < h.M; ++o)
          s += means[size_t(n * h.M + o)] * wfc[size_t(h.trans_b ? j * h.M + o : o * h.outputs + j)];
        want[size_t(n * h.outputs + j)] = s;
      }
    ys = {h.N, h.outputs};
  } else {
    m.node("Identity", {"mean"}, {"y"});
  }
  m.output("y", SINGA_ONNX_FLOAT, ys);
  std::vector<std::string> ops;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads);
    auto out = rep->run({f32_tensor({h.N, h.C, h.H, h.W}, xv)});
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1) return {};
    const Tensor& y = out[0].second;
    EXPECT_EQ(y.shape(), ys);
    if (y.numel() != int64_t(want.size())) return {};
    for (int64_t i = 0; i < y.numel(); ++i)
      EXPECT_TRUE(agrees(y.data<float>()[i], want[size_t(i)], 2e-5)) << i << ": " << y.data<float>()[i] << " against "
                                                                       << want[size_t(i)];
    ops.clear();
    for (const auto& p : rep->placement()) ops.push_back(p.op_type);
  }
  return ops;
}

}  // namespace

// A ReduceMean over H and W after a pointwise Conv runs as the pooled head's
// fused kernels: with keepdims = 0 and a Gemm as one ConvMeanGemm (Wfc either
// way round, batch 2, axes negative or as opset 18's input), with keepdims = 1
// as a FusedConv that writes the means; [N, M] means without a Gemm stay a ReduceMean.
TEST(DepthwiseFamily2, ReduceMeanHeadsRunFused) {
  testing_util::ensure_loaded();
  using Ops = std::vector<std::string>;
  MeanHead h;
  EXPECT_EQ(check_mean_head(h, 1), (Ops{"ConvMeanGemm"}));
  h.trans_b = false, h.N = 2, h.axes = {-1, -2};
  EXPECT_EQ(check_mean_head(h, 2), (Ops{"ConvMeanGemm"}));
  h = MeanHead();
  h.axes_input = true, h.M = 130, h.outputs = 1000, h.H = 5, h.W = 3;
  EXPECT_EQ(check_mean_head(h, 3), (Ops{"ConvMeanGemm"}));
  h = MeanHead();
  h.keepdims = 1, h.gemm = false;
  EXPECT_EQ(check_mean_head(h, 4).at(0), "FusedConv");
  h = MeanHead();
  h.gemm = false;  // means [N, M] without a classifier: no fused kernel writes that shape
  const Ops kept = check_mean_head(h, 5);
  EXPECT_NE(std::find(kept.begin(), kept.end(), "ReduceMean"), kept.end());
}
