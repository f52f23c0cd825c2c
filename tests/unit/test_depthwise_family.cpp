// Depthwise blocks of the shapes nets bring (issue 33): inverted residual
// bodies and their expand + depthwise halves (an EfficientNet block's
// squeeze-and-excitation reads the depthwise result), 3x3, 5x5 and 7x7
// windows at strides 1 and 2, channel counts that are not whole vectors
// (kws-style 44 and 172, 20, 72), SiLU and HardSwish, skip connections,
// channels-last chains, 1 to 3 threads. Each prepared model's output is
// checked against a plain double-precision evaluation of the block written
// here, not against another of singa's kernels.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// One block: [1x1 expand ->] depthwise KxK -> [SE ->] [1x1 project] [+ X].
struct Block {
  int64_t N = 1, C = 8, Me = 20, M = 13, H = 9, W = 7, K = 3, S = 1;
  std::vector<int64_t> pads{1, 1, 1, 1};  // top, left, bottom, right
  bool expand = true, project = true, se = false;
  // The expand stage is a 3x3/2 stem Conv (pads 1) over an image of C <= 4
  // channels and 2H x 2W pixels (an EfficientNet's first Conv and block).
  bool stem = false;
  std::string se_act = "Relu", gate_act = "Sigmoid";  // the SE's squeeze and gate (Sigmoid, HardSigmoid)
  bool skip = false;  // y = x + block(x): stride 1, M == C
  std::string expand_act = "Swish", dw_act = "Swish", project_act;  // "", Relu, Swish, HardSwish
  int64_t OH() const { return (H + pads[0] + pads[2] - K) / S + 1; }
  int64_t OW() const { return (W + pads[1] + pads[3] - K) / S + 1; }
  int64_t out_channels() const { return project ? M : Me; }
  std::vector<int64_t> in_shape() const { return {N, expand ? C : Me, stem ? 2 * H : H, stem ? 2 * W : W}; }
};

double act(const std::string& a, double v) {
  if (a == "Relu") return std::max(0.0, v);
  if (a == "Swish") return v / (1.0 + std::exp(-v));
  if (a == "HardSwish") return v * std::clamp((v + 3.0) / 6.0, 0.0, 1.0);
  if (a == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (a == "HardSigmoid") return std::clamp(v / 6.0 + 0.5, 0.0, 1.0);  // as HardSwish's factor
  return v;
}

struct Weights {
  std::vector<float> w1, b1, wd, bd, w2, b2, s1, sb1, s2, sb2;  // s*: the SE's squeeze and excite
};

Weights make_weights(const Block& b, unsigned seed) {
  std::mt19937 rng(seed);
  Weights w;
  const int64_t r = std::max<int64_t>(1, b.Me / 4);
  w.w1 = random_values(size_t(b.Me * b.C * (b.stem ? 9 : 1)), rng, 0.5f);
  w.b1 = random_values(size_t(b.Me), rng, 0.5f);
  w.wd = random_values(size_t(b.Me * b.K * b.K), rng, 0.5f);
  w.bd = random_values(size_t(b.Me), rng, 0.5f);
  w.w2 = random_values(size_t(b.M * b.Me), rng, 0.3f);
  w.b2 = random_values(size_t(b.M), rng, 0.5f);
  w.s1 = random_values(size_t(r * b.Me), rng, 0.5f);
  w.sb1 = random_values(size_t(r), rng, 0.5f);
  w.s2 = random_values(size_t(b.Me * r), rng, 0.5f);
  w.sb2 = random_values(size_t(b.Me), rng, 0.5f);
  return w;
}

// The block in doubles, straight from the definitions: x [N, C, H, W] -> [N, out, OH, OW].
std::vector<double> reference(const Block& b, const Weights& w, const float* x) {
  const int64_t HW = b.H * b.W, OH = b.OH(), OW = b.OW(), OHW = OH * OW, Me = b.Me;
  std::vector<double> y;
  for (int64_t n = 0; n < b.N; ++n) {
    const int64_t in_plane = b.stem ? 4 * HW : HW;
    const float* xn = x + n * (b.expand ? b.C : Me) * in_plane;
    std::vector<double> e(size_t(Me * HW)), d(size_t(Me * OHW));
    for (int64_t m = 0; m < Me; ++m)
      for (int64_t p = 0; p < HW; ++p) {
        double v = b.expand ? 0.0 : xn[m * HW + p];
        if (b.stem) {  // 3x3, stride 2, pads 1 over the 2H x 2W image
          v = w.b1[size_t(m)];
          const int64_t oy = p / b.W, ox = p % b.W;
          for (int64_t c = 0; c < b.C; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                if (iy >= 0 && iy < 2 * b.H && ix >= 0 && ix < 2 * b.W)
                  v += double(w.w1[size_t(((m * b.C + c) * 3 + ky) * 3 + kx)]) * xn[c * in_plane + iy * 2 * b.W + ix];
              }
          v = act(b.expand_act, v);
        } else if (b.expand) {
          v = w.b1[size_t(m)];
          for (int64_t c = 0; c < b.C; ++c) v += double(w.w1[size_t(m * b.C + c)]) * xn[c * HW + p];
          v = act(b.expand_act, v);
        }
        e[size_t(m * HW + p)] = v;
      }
    for (int64_t m = 0; m < Me; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double v = w.bd[size_t(m)];
          for (int64_t ky = 0; ky < b.K; ++ky)
            for (int64_t kx = 0; kx < b.K; ++kx) {
              const int64_t iy = oy * b.S - b.pads[0] + ky, ix = ox * b.S - b.pads[1] + kx;
              if (iy >= 0 && iy < b.H && ix >= 0 && ix < b.W)
                v += double(w.wd[size_t((m * b.K + ky) * b.K + kx)]) * e[size_t(m * HW + iy * b.W + ix)];
            }
          d[size_t(m * OHW + oy * OW + ox)] = act(b.dw_act, v);
        }
    if (b.se) {  // mean -> Conv -> act -> Conv -> gate -> scale each channel
      const int64_t r = std::max<int64_t>(1, Me / 4);
      std::vector<double> mean(size_t(Me), 0.0), h(size_t(r), 0.0);
      for (int64_t m = 0; m < Me; ++m) {
        for (int64_t p = 0; p < OHW; ++p) mean[size_t(m)] += d[size_t(m * OHW + p)];
        mean[size_t(m)] /= double(OHW);
      }
      for (int64_t j = 0; j < r; ++j) {
        double v = w.sb1[size_t(j)];
        for (int64_t m = 0; m < Me; ++m) v += double(w.s1[size_t(j * Me + m)]) * mean[size_t(m)];
        h[size_t(j)] = act(b.se_act, v);
      }
      for (int64_t m = 0; m < Me; ++m) {
        double v = w.sb2[size_t(m)];
        for (int64_t j = 0; j < r; ++j) v += double(w.s2[size_t(m * r + j)]) * h[size_t(j)];
        const double gate = act(b.gate_act, v);
        for (int64_t p = 0; p < OHW; ++p) d[size_t(m * OHW + p)] *= gate;
      }
    }
    if (!b.project) {
      y.insert(y.end(), d.begin(), d.end());
      continue;
    }
    for (int64_t o = 0; o < b.M; ++o)
      for (int64_t p = 0; p < OHW; ++p) {
        double v = w.b2[size_t(o)];
        for (int64_t m = 0; m < Me; ++m) v += double(w.w2[size_t(o * Me + m)]) * d[size_t(m * OHW + p)];
        v = act(b.project_act, v);
        if (b.skip) v += xn[o * HW + p];
        y.push_back(v);
      }
  }
  return y;
}

// Appends `kind` after value `from` (SiLU as the exporters write it:
// Sigmoid then Mul); returns the activated value's name.
std::string append_act(ModelBuilder& m, const std::string& kind, const std::string& from) {
  if (kind.empty()) return from;
  const std::string to = from + "_" + kind;
  if (kind == "Swish") {
    m.node("Sigmoid", {from}, {from + "_sig"});
    m.node("Mul", {from, from + "_sig"}, {to});
  } else {
    m.node(kind, {from}, {to});
  }
  return to;
}

// The block as the ONNX exporters write it (opset 14, for HardSwish).
ModelBuilder block_model(const Block& b, const Weights& w) {
  ModelBuilder m(14);
  const int64_t Me = b.Me, r = std::max<int64_t>(1, Me / 4);
  m.input("x", SINGA_ONNX_FLOAT, b.in_shape());
  std::string v = "x";
  if (b.stem) {
    m.initializer("w1", f32_tensor({Me, b.C, 3, 3}, w.w1)).initializer("b1", f32_tensor({Me}, w.b1));
    m.node("Conv", {v, "w1", "b1"}, {"e"}, "stem");
    add_ints(m.last(), "pads", {1, 1, 1, 1});
    add_ints(m.last(), "strides", {2, 2});
    add_ints(m.last(), "kernel_shape", {3, 3});
    v = append_act(m, b.expand_act, "e");
  } else if (b.expand) {
    m.initializer("w1", f32_tensor({Me, b.C, 1, 1}, w.w1)).initializer("b1", f32_tensor({Me}, w.b1));
    m.node("Conv", {v, "w1", "b1"}, {"e"}, "expand");
    v = append_act(m, b.expand_act, "e");
  }
  m.initializer("wd", f32_tensor({Me, 1, b.K, b.K}, w.wd)).initializer("bd", f32_tensor({Me}, w.bd));
  m.node("Conv", {v, "wd", "bd"}, {"d"}, "dw");
  add_ints(m.last(), "pads", b.pads);
  add_ints(m.last(), "strides", {b.S, b.S});
  add_ints(m.last(), "kernel_shape", {b.K, b.K});
  auto* g = m.last()->add_attribute();
  g->set_name("group");
  g->set_type(::onnx::AttributeProto::INT);
  g->set_i(Me);
  v = append_act(m, b.dw_act, "d");
  if (b.se) {
    m.initializer("s1", f32_tensor({r, Me, 1, 1}, w.s1)).initializer("sb1", f32_tensor({r}, w.sb1));
    m.initializer("s2", f32_tensor({Me, r, 1, 1}, w.s2)).initializer("sb2", f32_tensor({Me}, w.sb2));
    m.node("GlobalAveragePool", {v}, {"mean"});
    m.node("Conv", {"mean", "s1", "sb1"}, {"h"});
    const std::string h = append_act(m, b.se_act, "h");
    m.node("Conv", {h, "s2", "sb2"}, {"logit"});
    m.node(b.gate_act, {"logit"}, {"gate"});
    if (b.gate_act == "HardSigmoid") {
      auto* a = m.last()->add_attribute();
      a->set_name("alpha");
      a->set_type(::onnx::AttributeProto::FLOAT);
      a->set_f(1.f / 6.f);
    }
    m.node("Mul", {v, "gate"}, {"gated"});
    v = "gated";
  }
  if (b.project) {
    m.initializer("w2", f32_tensor({b.M, Me, 1, 1}, w.w2)).initializer("b2", f32_tensor({b.M}, w.b2));
    m.node("Conv", {v, "w2", "b2"}, {"p"}, "project");
    v = append_act(m, b.project_act, "p");
    if (b.skip) {
      m.node("Add", {"x", v}, {"sum"});
      v = "sum";
    }
  }
  m.node("Identity", {v}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {b.N, b.out_channels(), b.OH(), b.OW()});
  return m;
}

// Runs the block prepared with `options` at 1 to 3 threads against the
// reference; returns the ExpandDepthwiseProject nodes of the last prepare.
int check_block(const Block& b, unsigned seed, const std::map<std::string, std::string>& options = {}) {
  const Weights w = make_weights(b, seed);
  const ModelBuilder m = block_model(b, w);
  const Tensor x = random_floats(b.in_shape(), seed + 1);
  const std::vector<double> want = reference(b, w, x.data<float>());
  int fused = -1;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads, options);
    auto out = rep->run({x});
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1) return -1;
    const Tensor& y = out[0].second;
    EXPECT_EQ(y.shape(), (singa::Shape{b.N, b.out_channels(), b.OH(), b.OW()}));
    if (y.numel() != int64_t(want.size())) return -1;
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double err = std::fabs(y.data<float>()[i] - want[size_t(i)]) / std::max(1.0, std::fabs(want[size_t(i)]));
      if (!(err <= worst)) worst = err, at = i;  // a NaN is the worst
    }
    EXPECT_LE(worst, 2e-5) << "at " << at << ": " << y.data<float>()[at] << " against " << want[size_t(at)];
    fused = count_op(*rep, "ExpandDepthwiseProject");
  }
  return fused;
}

std::vector<Block> full_blocks() {
  std::vector<Block> cases;
  Block b;  // 20 expanded channels (a vector and 4), 13 outputs (a masked vector)
  cases.push_back(b);
  b.K = 5, b.S = 2, b.pads = {2, 2, 1, 1}, b.H = 11, b.W = 10, b.project_act = "Relu";
  cases.push_back(b);
  b = Block();  // 7x7 at stride 1 with the skip connection, HardSwish
  b.C = b.M = 16, b.Me = 40, b.K = 7, b.pads = {3, 3, 3, 3}, b.H = 12, b.W = 9, b.skip = true;
  b.expand_act = "HardSwish", b.dw_act = "Relu";
  cases.push_back(b);
  b = Block();  // 7x7 at stride 2, one-sided pads, two images
  b.N = 2, b.Me = 32, b.M = 24, b.K = 7, b.S = 2, b.pads = {3, 3, 2, 2}, b.H = 15, b.W = 12;
  cases.push_back(b);
  b = Block();  // 4.5 vectors in and out on a small plane: channel slices at 2 and 3 threads
  b.C = b.M = 72, b.Me = 72 * 3 / 2 + 4, b.H = b.W = 7, b.skip = true, b.expand_act = "Relu";
  cases.push_back(b);
  b = Block();  // 172 outputs: 10 whole vectors and a masked one
  b.C = 16, b.Me = 48, b.M = 172, b.H = 6, b.W = 5;
  cases.push_back(b);
  b = Block();  // kws_cnn's block: no expand stage, 44 channels
  b.expand = false, b.Me = b.M = 44, b.H = 13, b.W = 10, b.dw_act = "Relu", b.project_act = "Relu";
  cases.push_back(b);
  b.skip = true, b.K = 5, b.pads = {2, 2, 2, 2}, b.dw_act = "Swish", b.project_act = "";
  cases.push_back(b);
  b = Block();  // several bands per chunk, odd expanded channels
  b.N = 2, b.C = 24, b.Me = 52, b.M = 24, b.H = 70, b.W = 41, b.K = 5, b.pads = {2, 2, 2, 2};
  cases.push_back(b);
  return cases;
}

}  // namespace

// Whole inverted residual bodies become one node and match the reference.
TEST(DepthwiseFamily, InvertedResidualBlocks) {
  testing_util::ensure_loaded();
  const auto cases = full_blocks();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(check_block(cases[i], 100 + unsigned(i)), 1);
  }
}

// The same blocks with the band's products through oneDNN's sgemm (its
// weights padded the same way) and with the passes off (the plain Convs).
TEST(DepthwiseFamily, InvertedResidualBlocksOtherPaths) {
  testing_util::ensure_loaded();
  const auto cases = full_blocks();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(check_block(cases[i], 100 + unsigned(i), {{"cpu.band_tiles", "0"}}), 1);
    EXPECT_EQ(check_block(cases[i], 100 + unsigned(i), {{"pass.cpu.inverted_residuals", "0"}}), 0);
  }
}

namespace {

// Squeeze-and-excitation blocks (EfficientNet, MnasNet, MobileNetV3): the
// SE's pool, two 1x1 Convs and gate join the block's node between its
// depthwise and project stages, with or without an expand stage or stem,
// the gates scaling the project weights (more pixels than outputs) or the
// depthwise result (fewer), on row chunks or channel slices.
std::vector<Block> squeeze_excite_blocks() {
  std::vector<Block> cases;
  Block b;
  b.se = true, b.C = 16, b.Me = 48, b.M = 24, b.K = 5, b.pads = {2, 2, 2, 2}, b.H = 14, b.W = 14, b.se_act = "Swish";
  cases.push_back(b);
  b.K = 3, b.S = 2, b.pads = {1, 1, 1, 1}, b.H = 23, b.W = 20, b.Me = 32, b.expand_act = "Relu";
  cases.push_back(b);
  b.K = 7, b.S = 1, b.pads = {3, 3, 3, 3}, b.N = 2, b.H = b.W = 7, b.Me = 64, b.dw_act = "HardSwish";
  cases.push_back(b);
  b.N = 1, b.Me = 96, b.K = 5, b.pads = {2, 2, 2, 2};  // one small image: channel slices at 2 and 3 threads
  cases.push_back(b);
  b = Block();  // MobileNetV3-style: more outputs than pixels (the result scaled), skip, HardSigmoid gate
  b.se = true, b.C = b.M = 64, b.Me = 120, b.H = b.W = 5, b.K = 5, b.pads = {2, 2, 2, 2}, b.skip = true;
  b.expand_act = b.dw_act = "HardSwish", b.gate_act = "HardSigmoid";
  cases.push_back(b);
  b.N = 2, b.H = b.W = 4;  // the same on two images of 16 pixels, channel slices at 2 threads
  cases.push_back(b);
  b = Block();  // EfficientNet's first block: no expand stage
  b.se = true, b.expand = false, b.Me = 32, b.M = 16, b.H = b.W = 28, b.se_act = "Swish";
  cases.push_back(b);
  b.stem = true, b.expand = true, b.C = 3, b.H = b.W = 20;  // ... behind the stem Conv
  cases.push_back(b);
  b = Block();  // expanded channels that are not whole vectors, 5x5 at stride 2
  b.se = true, b.Me = 40, b.H = 9, b.W = 9;
  cases.push_back(b);
  b.Me = 20, b.M = 13, b.K = 5, b.S = 2, b.pads = {2, 2, 1, 1}, b.H = 11, b.W = 10;
  cases.push_back(b);
  b = Block();  // a large plane: several bands per row chunk, two images
  b.se = true, b.N = 2, b.C = 24, b.Me = 144, b.M = 40, b.H = b.W = 48, b.K = 5, b.pads = {2, 2, 2, 2};
  cases.push_back(b);
  return cases;
}

int other_nodes(const singa::onnx::Rep& rep) {
  int n = 0;
  for (const auto& p : rep.placement()) n += p.op_type != "ExpandDepthwiseProject" && p.op_type != "Identity";
  return n;
}

}  // namespace

TEST(DepthwiseFamily, SqueezeExciteBlocks) {
  testing_util::ensure_loaded();
  const auto cases = squeeze_excite_blocks();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(check_block(cases[i], 200 + unsigned(i)), 1);
    auto rep = singa::onnx::prepare_bytes(block_model(cases[i], make_weights(cases[i], 1)).bytes());
    EXPECT_EQ(other_nodes(*rep), 0);
  }
}

// The optimized model, with its SE node's S1..SB2 inputs and squeeze_/gate_
// attributes, loads again without the passes and gives the same result.
TEST(DepthwiseFamily, SqueezeExciteNodeLoadsAgain) {
  testing_util::ensure_loaded();
  const Block b = squeeze_excite_blocks()[4];  // HardSwish stages, HardSigmoid gate, skip
  const Weights w = make_weights(b, 7);
  const ModelBuilder m = block_model(b, w);
  const ::onnx::ModelProto out = singa::onnx::optimized_model(m.model, {});
  int fused = 0;
  for (const auto& n : out.graph().node()) fused += n.op_type() == "ExpandDepthwiseProject" && n.input_size() == 11;
  EXPECT_EQ(fused, 1);
  std::string bytes;
  ASSERT_TRUE(out.SerializeToString(&bytes));
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  auto rep = singa::onnx::prepare_bytes(bytes, o);
  const Tensor x = random_floats(b.in_shape(), 8);
  const std::vector<double> want = reference(b, w, x.data<float>());
  auto y = rep->run({x});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].second.numel(), int64_t(want.size()));
  for (int64_t i = 0; i < y[0].second.numel(); ++i)
    ASSERT_NEAR(y[0].second.data<float>()[i], want[size_t(i)], 2e-5 * std::max(1.0, std::fabs(want[size_t(i)])));
}

// The same with the products through oneDNN's sgemm (the gates scale its
// transposed weights) and with the passes off.
TEST(DepthwiseFamily, SqueezeExciteBlocksOtherPaths) {
  testing_util::ensure_loaded();
  const auto cases = squeeze_excite_blocks();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(check_block(cases[i], 200 + unsigned(i), {{"cpu.band_tiles", "0"}}), 1);
    EXPECT_EQ(check_block(cases[i], 200 + unsigned(i), {{"pass.cpu.inverted_residuals", "0"}}), 0);
  }
}

// Where the SE's gated result is no project Conv's input, the expand and
// depthwise stages fuse alone (no W2) with the SE's pool as the node's
// second output; without any SE the result itself is the output.
TEST(DepthwiseFamily, ExpandDepthwiseWithoutProject) {
  testing_util::ensure_loaded();
  std::vector<Block> cases;
  Block b;
  b.se = true, b.project = false, b.C = 16, b.Me = 48, b.K = 5, b.pads = {2, 2, 2, 2}, b.H = 14, b.W = 14;
  cases.push_back(b);
  b.N = 1, b.Me = 96, b.H = b.W = 7;  // one small image: channel slices at 2 and 3 threads
  cases.push_back(b);
  b = Block();  // the result itself is the output, no SE
  b.project = false, b.C = 24, b.Me = 144, b.H = 30, b.W = 28, b.S = 2;
  cases.push_back(b);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(check_block(cases[i], 250 + unsigned(i)), 1);
    auto rep = singa::onnx::prepare_bytes(block_model(cases[i], make_weights(cases[i], 1)).bytes());
    EXPECT_EQ(count_op(*rep, "GlobalAveragePool"), 0);
  }
}

namespace {

// A chain of blocks built from block_model's parts, each value named after
// its block; x is the first block's input.
ModelBuilder chain_model(const std::vector<Block>& blocks, const std::vector<Weights>& ws) {
  ModelBuilder m(14);
  const Block& first = blocks.front();
  m.input("x", SINGA_ONNX_FLOAT, first.in_shape());
  std::string v = "x";
  for (size_t i = 0; i < blocks.size(); ++i) {
    ModelBuilder one = block_model(blocks[i], ws[i]);
    const std::string s = "b" + std::to_string(i) + "_";
    auto rename = [&](const std::string& n) { return n == "x" ? v : n.empty() ? n : s + n; };
    for (const auto& init : one.g->initializer()) {
      *m.g->add_initializer() = init;
      m.g->mutable_initializer(m.g->initializer_size() - 1)->set_name(s + init.name());
    }
    for (const auto& node : one.g->node()) {
      auto* n = m.g->add_node();
      *n = node;
      n->set_name(s + node.name());
      for (int k = 0; k < n->input_size(); ++k) n->set_input(k, rename(node.input(k)));
      for (int k = 0; k < n->output_size(); ++k) n->set_output(k, rename(node.output(k)));
    }
    v = s + "y";
  }
  const Block& last = blocks.back();
  m.node("Identity", {v}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {last.N, last.out_channels(), last.OH(), last.OW()});
  return m;
}

// Runs a chain against the blocks' references one after the other, at 1 to 3 threads.
void check_chain(const std::vector<Block>& blocks, unsigned seed, int want_fused) {
  std::vector<Weights> ws;
  for (size_t i = 0; i < blocks.size(); ++i) ws.push_back(make_weights(blocks[i], seed + unsigned(i)));
  const ModelBuilder m = chain_model(blocks, ws);
  const Block& first = blocks.front();
  const Tensor x = random_floats(first.in_shape(), seed + 50);
  std::vector<float> in(x.data<float>(), x.data<float>() + x.numel());
  std::vector<double> want;
  for (size_t i = 0; i < blocks.size(); ++i) {
    want = reference(blocks[i], ws[i], in.data());
    in.assign(want.begin(), want.end());
  }
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads);
    EXPECT_EQ(count_op(*rep, "ExpandDepthwiseProject"), want_fused);
    auto out = rep->run({x});
    ASSERT_EQ(out.size(), 1u);
    const Tensor& y = out[0].second;
    ASSERT_EQ(y.numel(), int64_t(want.size()));
    double worst = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double err = std::fabs(y.data<float>()[i] - want[size_t(i)]) / std::max(1.0, std::fabs(want[size_t(i)]));
      if (!(err <= worst)) worst = err;
    }
    EXPECT_LE(worst, 2e-5);
  }
}

}  // namespace

// kws_cnn's chain: blocks without an expand stage, 44 channels, the values
// between them channels-last (X copied into the band's padded rows, Y's rows
// written with a masked last vector).
TEST(DepthwiseFamily, ChannelsLastChainOfOddChannels) {
  testing_util::ensure_loaded();
  Block b;
  b.expand = false, b.Me = b.M = 44, b.H = 13, b.W = 10, b.dw_act = "Relu", b.project_act = "Relu";
  check_chain({b, b}, 400, 2);
}

// Two depthwise Convs in a row: the first fuses with the expand stage alone
// (its reader is no pointwise Conv), the second with the project stage, and
// the value between them goes channels-last. On one 9x9 image at 2 and 3
// threads the first splits its channels (slices written to Y's rows).
TEST(DepthwiseFamily, ExpandDepthwiseThenDepthwiseProject) {
  testing_util::ensure_loaded();
  Block a;
  a.project = false, a.C = 16, a.Me = 64, a.H = a.W = 9, a.K = 5, a.pads = {2, 2, 2, 2}, a.expand_act = "Relu";
  Block b;
  b.expand = false, b.Me = 64, b.M = 24, b.H = b.W = 9, b.dw_act = "HardSwish";
  check_chain({a, b}, 500, 2);
}

// EfficientNet's chain: SE blocks whose values between them go channels-last
// (the stem block's X stays NCHW), the second with its skip connection.
TEST(DepthwiseFamily, ChannelsLastChainOfSqueezeExciteBlocks) {
  testing_util::ensure_loaded();
  Block a;
  a.se = true, a.stem = true, a.C = 3, a.Me = 32, a.M = 16, a.H = a.W = 12, a.se_act = "Swish";
  Block b;
  b.se = true, b.C = b.M = 16, b.Me = 72, b.H = b.W = 12, b.K = 5, b.pads = {2, 2, 2, 2}, b.skip = true;
  b.se_act = "Swish";
  Block c = b;
  c.S = 2, c.M = 24, c.skip = false, c.pads = {1, 1, 2, 2};
  check_chain({a, b, c}, 600, 3);
}

// A hand-written SE node whose S1 does not match the expanded channels is
// refused with an error naming S1, not run.
TEST(DepthwiseFamily, SqueezeExciteNodeChecksItsWeights) {
  testing_util::ensure_loaded();
  ModelBuilder m(14);
  auto* op = m.model.add_opset_import();
  op->set_domain("ai.singa.cpu");
  op->set_version(1);
  const int64_t C = 16, Me = 32, M = 16, R = 8;
  m.input("x", SINGA_ONNX_FLOAT, {1, C, 6, 6});
  m.initializer("w1", f32_tensor({Me, C, 1, 1}, std::vector<float>(size_t(Me * C), 0.1f)));
  m.initializer("wd", f32_tensor({Me, 1, 3, 3}, std::vector<float>(size_t(Me * 9), 0.1f)));
  m.initializer("w2", f32_tensor({M, Me, 1, 1}, std::vector<float>(size_t(M * Me), 0.1f)));
  m.initializer("s1", f32_tensor({R, Me + 1, 1, 1}, std::vector<float>(size_t(R * (Me + 1)), 0.1f)));  // one too many
  m.initializer("s2", f32_tensor({Me, R, 1, 1}, std::vector<float>(size_t(Me * R), 0.1f)));
  m.node("ExpandDepthwiseProject", {"x", "w1", "", "wd", "", "w2", "", "s1", "", "s2", ""}, {"y"}, "edp");
  m.last()->set_domain("ai.singa.cpu");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.output("y", SINGA_ONNX_FLOAT, {1, M, 6, 6});
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  try {
    auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
    rep->run({random_floats({1, C, 6, 6}, 1)});
    ADD_FAILURE() << "a wrong S1 ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("S1"), std::string::npos) << e.what();
  }
}
