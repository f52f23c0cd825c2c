// Chains of inverted residual blocks ending in a ReduceMean head (the
// keyword spotting CNN's shape: stem Conv -> [depthwise KxK -> act -> 1x1
// project -> act] x n -> ReduceMean over H, W -> [Gemm]), over a family of
// windows (3x3, 5x5, 7x7 at strides 1 and 2), channel counts that are and are
// not whole vectors, with and without an expand stage, skip connections and
// the classifier, activations Relu, Relu6 (Clip), SiLU and HardSwish, batch 1
// and 2, 1 to 3 threads. The fused path (the last block writing only Y's
// means, the stencil reading channels-last X in place with a masked last
// vector, NCHW inputs of part vectors through register transposes) is
// checked against a double-precision evaluation of the ONNX graph written
// here, and against the same graph with the fusion turned off.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

namespace {

enum class Act { kNone, kRelu, kRelu6, kSilu, kHardSwish };

double apply(Act a, double v) {
  switch (a) {
    case Act::kNone: return v;
    case Act::kRelu: return std::max(0.0, v);
    case Act::kRelu6: return std::min(6.0, std::max(0.0, v));
    case Act::kSilu: return v / (1.0 + std::exp(-v));
    case Act::kHardSwish: return v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5));
  }
  return v;
}

struct Net {
  int64_t N = 1, C0 = 6, H = 13, W = 11;  // the image; C0 > 4 keeps the stem out of the first block
  int64_t stem_kh = 3, stem_kw = 3, stem_s = 1;  // the stem's window (pads half of it)
  int64_t C = 37;                        // the blocks' channels
  int64_t expand = 0;                    // expanded channels (0: no expand stage)
  int64_t K = 3, S = 1, blocks = 3;
  int64_t last_stride_block = -1;        // the block with stride S (others stride 1); -1: none
  bool skip = false;                     // skip connections on the stride-1 blocks
  bool keepdims = false, gemm = true;    // the head
  int64_t classes = 12;
  Act act = Act::kRelu, project_act = Act::kRelu;
};

struct Conv {
  int64_t cin = 0, cout = 0, k = 1, s = 1, pad = 0, group = 1;
  int64_t kw = 0, pad_w = 0;  // a window of k x kw where kw > 0 (pads pad and pad_w)
  std::vector<float> w, b;
};

struct Image {
  int64_t C = 0, H = 0, W = 0;
  std::vector<double> v;  // [N][C][H][W]
};

std::vector<float> uniform(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Conv make_conv(int64_t cin, int64_t cout, int64_t k, int64_t s, int64_t group, std::mt19937& rng) {
  Conv c;
  c.cin = cin, c.cout = cout, c.k = k, c.s = s, c.pad = k / 2, c.group = group;
  const float scale = 1.5f / std::sqrt(float(cin / group * k * k));
  c.w = uniform(size_t(cout * (cin / group) * k * k), rng, scale);
  c.b = uniform(size_t(cout), rng, 0.3f);
  return c;
}

Image conv(const Image& x, int64_t N, const Conv& c, Act a) {
  Image y;
  y.C = c.cout;
  y.H = (x.H + 2 * c.pad - c.k) / c.s + 1;
  const int64_t KW = c.kw ? c.kw : c.k, PW = c.kw ? c.pad_w : c.pad;
  y.W = (x.W + 2 * PW - KW) / c.s + 1;
  y.v.assign(size_t(N * y.C * y.H * y.W), 0.0);
  const int64_t cpg = c.cin / c.group, opg = c.cout / c.group;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < c.cout; ++o)
      for (int64_t oy = 0; oy < y.H; ++oy)
        for (int64_t ox = 0; ox < y.W; ++ox) {
          double v = c.b[size_t(o)];
          for (int64_t ci = 0; ci < cpg; ++ci) {
            const int64_t ic = o / opg * cpg + ci;
            for (int64_t ky = 0; ky < c.k; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t iy = oy * c.s - c.pad + ky, ix = ox * c.s - PW + kx;
                if (iy < 0 || iy >= x.H || ix < 0 || ix >= x.W) continue;
                v += double(c.w[size_t(((o * cpg + ci) * c.k + ky) * KW + kx)]) *
                     x.v[size_t(((n * x.C + ic) * x.H + iy) * x.W + ix)];
              }
          }
          y.v[size_t(((n * y.C + o) * y.H + oy) * y.W + ox)] = apply(a, v);
        }
  return y;
}

// The ONNX nodes of one activation after value `from`; returns the result's name.
std::string act_nodes(ModelBuilder& m, Act a, const std::string& from) {
  switch (a) {
    case Act::kNone: return from;
    case Act::kRelu: m.node("Relu", {from}, {from + "_relu"}); return from + "_relu";
    case Act::kRelu6: m.node("Clip", {from, "zero", "six"}, {from + "_clip"}); return from + "_clip";
    case Act::kSilu:
      m.node("Sigmoid", {from}, {from + "_sig"});
      m.node("Mul", {from, from + "_sig"}, {from + "_silu"});
      return from + "_silu";
    case Act::kHardSwish: m.node("HardSwish", {from}, {from + "_hs"}); return from + "_hs";
  }
  return from;
}

std::string conv_node(ModelBuilder& m, const Conv& c, const std::string& from, const std::string& name) {
  const int64_t KW = c.kw ? c.kw : c.k, PW = c.kw ? c.pad_w : c.pad;
  m.initializer(name + "_w", f32_tensor({c.cout, c.cin / c.group, c.k, KW}, c.w));
  m.initializer(name + "_b", f32_tensor({c.cout}, c.b));
  m.node("Conv", {from, name + "_w", name + "_b"}, {name}, name);
  add_ints(m.last(), "kernel_shape", {c.k, KW});
  add_ints(m.last(), "strides", {c.s, c.s});
  add_ints(m.last(), "pads", {c.pad, PW, c.pad, PW});
  if (c.group != 1) add_int(m.last(), "group", c.group);
  return name;
}

struct Built {
  std::string model;
  std::vector<double> want;
  singa::Shape shape;
  Tensor x;
};

Built build(const Net& net, unsigned seed) {
  std::mt19937 rng(seed);
  ModelBuilder m(14);
  m.input("x", SINGA_ONNX_FLOAT, {net.N, net.C0, net.H, net.W});
  m.initializer("zero", f32_tensor({}, {0.f})).initializer("six", f32_tensor({}, {6.f}));
  Built b;
  b.x = Tensor({net.N, net.C0, net.H, net.W}, SINGA_ONNX_FLOAT);
  const std::vector<float> xv = uniform(size_t(b.x.numel()), rng, 1.f);
  std::copy(xv.begin(), xv.end(), b.x.data<float>());
  Image v;
  v.C = net.C0, v.H = net.H, v.W = net.W;
  v.v.assign(xv.begin(), xv.end());
  Conv stem = make_conv(net.C0, net.C, net.stem_kh, net.stem_s, 1, rng);
  if (net.stem_kw != net.stem_kh) {  // the window's other side and its weights
    stem.kw = net.stem_kw, stem.pad_w = net.stem_kw / 2;
    stem.w = uniform(size_t(net.C * net.C0 * net.stem_kh * net.stem_kw), rng, 1.f / std::sqrt(float(net.C0 * 20)));
  }
  v = conv(v, net.N, stem, Act::kRelu);
  std::string name = act_nodes(m, Act::kRelu, conv_node(m, stem, "x", "stem"));
  for (int64_t i = 0; i < net.blocks; ++i) {
    const std::string at = "b" + std::to_string(i);
    const Image in = v;
    const std::string block_in = name;
    const int64_t stride = i == net.last_stride_block ? net.S : 1;
    int64_t Me = net.C;
    if (net.expand) {
      const Conv e = make_conv(net.C, net.expand, 1, 1, 1, rng);
      v = conv(v, net.N, e, net.act);
      name = act_nodes(m, net.act, conv_node(m, e, name, at + "e"));
      Me = net.expand;
    }
    const Conv d = make_conv(Me, Me, net.K, stride, Me, rng);
    v = conv(v, net.N, d, net.act);
    name = act_nodes(m, net.act, conv_node(m, d, name, at + "d"));
    const Conv p = make_conv(Me, net.C, 1, 1, 1, rng);
    v = conv(v, net.N, p, net.project_act);
    name = act_nodes(m, net.project_act, conv_node(m, p, name, at + "p"));
    if (net.skip && stride == 1) {
      for (size_t j = 0; j < v.v.size(); ++j) v.v[j] += in.v[j];
      m.node("Add", {block_in, name}, {at + "sum"});
      name = at + "sum";
    }
  }
  // ReduceMean over H and W.
  std::vector<double> mean(size_t(net.N * net.C), 0.0);
  const int64_t P = v.H * v.W;
  for (int64_t i = 0; i < net.N * net.C; ++i) {
    for (int64_t p = 0; p < P; ++p) mean[size_t(i)] += v.v[size_t(i * P + p)];
    mean[size_t(i)] /= double(P);
  }
  m.node("ReduceMean", {name}, {"mean"}, "head_mean");
  add_ints(m.last(), "axes", {2, 3});
  add_int(m.last(), "keepdims", net.keepdims ? 1 : 0);
  if (net.gemm && !net.keepdims) {
    const std::vector<float> fc = uniform(size_t(net.classes * net.C), rng, 0.5f);
    const std::vector<float> fb = uniform(size_t(net.classes), rng, 0.5f);
    m.initializer("fc_w", f32_tensor({net.classes, net.C}, fc)).initializer("fc_b", f32_tensor({net.classes}, fb));
    m.node("Gemm", {"mean", "fc_w", "fc_b"}, {"y"}, "fc");
    add_int(m.last(), "transB", 1);
    for (int64_t n = 0; n < net.N; ++n)
      for (int64_t o = 0; o < net.classes; ++o) {
        double s = fb[size_t(o)];
        for (int64_t c = 0; c < net.C; ++c) s += double(fc[size_t(o * net.C + c)]) * mean[size_t(n * net.C + c)];
        b.want.push_back(s);
      }
    b.shape = {net.N, net.classes};
  } else {
    m.node("Identity", {"mean"}, {"y"});
    b.want = mean;
    b.shape = net.keepdims ? singa::Shape{net.N, net.C, 1, 1} : singa::Shape{net.N, net.C};
  }
  m.output("y", SINGA_ONNX_FLOAT, std::vector<int64_t>(b.shape.begin(), b.shape.end()));
  b.model = m.bytes();
  return b;
}

struct Result {
  int blocks = -1, reduce_means = -1, convs = -1;
};

Result run_and_check(const Built& b, int threads, const std::map<std::string, std::string>& options = {}) {
  singa::onnx::PrepareOptions o;
  o.threads = threads;
  o.options = options;
  auto rep = singa::onnx::prepare_bytes(b.model, o);
  auto out = rep->run({b.x});
  Result r;
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return r;
  const Tensor& y = out[0].second;
  EXPECT_EQ(y.shape(), b.shape);
  if (y.numel() != int64_t(b.want.size())) return r;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double want = b.want[size_t(i)], got = y.data<float>()[i];
    if (!(std::fabs(got - want) <= 2e-5 * std::max(1.0, std::fabs(want)))) bad += 1, first = first < 0 ? i : first;
  }
  EXPECT_EQ(bad, 0) << "first at " << first << ": " << y.data<float>()[std::max<int64_t>(first, 0)] << " against "
                    << b.want[size_t(std::max<int64_t>(first, 0))];
  r.blocks = count_op(*rep, "ExpandDepthwiseProject");
  r.reduce_means = count_op(*rep, "ReduceMean");
  r.convs = count_op(*rep, "Conv") + count_op(*rep, "FusedConv");
  return r;
}

std::string describe(const Net& n) {
  return "K " + std::to_string(n.K) + " S " + std::to_string(n.S) + " C " + std::to_string(n.C) + " expand " +
         std::to_string(n.expand) + " N " + std::to_string(n.N) + (n.skip ? " skip" : "") +
         (n.keepdims ? " keepdims" : "") + (n.gemm ? " gemm" : "") + " act " + std::to_string(int(n.act)) +
         " project act " + std::to_string(int(n.project_act));
}

// Checks one net fused at 1-3 threads (every block fused, the ReduceMean
// taken by the last one) and unfused.
void check_net(const Net& net, unsigned seed, bool stem_joins = false) {
  SCOPED_TRACE(describe(net));
  const Built b = build(net, seed);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const Result r = run_and_check(b, threads);
    EXPECT_EQ(r.blocks, net.blocks);
    EXPECT_EQ(r.reduce_means, 0);
    if (stem_joins) {
      EXPECT_EQ(r.convs, 0);
    }
  }
  const Result off = run_and_check(b, 1, {{"pass.cpu.conv_reduce_means", "0"}});
  EXPECT_EQ(off.reduce_means, 1);
  // NCHW values between the blocks: a skip connection's X is then NCHW, and
  // the means-only block runs whole into a buffer before summing it.
  EXPECT_EQ(run_and_check(b, 2, {{"pass.cpu.channels_last", "0"}}).reduce_means, 0);
}

}  // namespace

// The keyword spotting CNN's family: no expand stage, channels that are and
// are not whole vectors (the stencil reads channels-last X in place, the last
// vector masked), every window, a stride-2 block in the middle, both heads.
TEST(DepthwiseFamily3, BlockChainsEndInTheirMeans) {
  testing_util::ensure_loaded();
  unsigned seed = 700;
  for (int64_t k : {3, 5, 7})
    for (int64_t s : {1, 2})
      for (int64_t c : {20, 37, 48, 172}) {
        Net n;
        n.K = k, n.S = s, n.C = c;
        n.last_stride_block = s == 2 ? 1 : -1;
        n.gemm = c != 48;
        n.keepdims = c == 20;
        check_net(n, seed++);
      }
}

// Skip connections (the last block adds X to the result it never stores),
// expand stages of part vectors, batch 2, and the other activations.
TEST(DepthwiseFamily3, ResidualExpandedAndOtherActivations) {
  testing_util::ensure_loaded();
  unsigned seed = 800;
  const Act acts[] = {Act::kRelu6, Act::kSilu, Act::kHardSwish, Act::kRelu};
  int i = 0;
  for (int64_t k : {3, 5, 7})
    for (int64_t expand : {int64_t(0), int64_t(44), int64_t(96)}) {
      Net n;
      n.K = k, n.expand = expand, n.C = expand == 96 ? 24 : 29;
      n.skip = true;
      n.N = i % 2 ? 2 : 1;
      n.act = acts[i % 4];
      n.project_act = i % 3 == 0 ? Act::kNone : acts[(i + 1) % 4];
      n.gemm = i % 2 == 0;
      n.blocks = 2;
      check_net(n, seed++);
      ++i;
    }
}

// The register tiles off (oneDNN's sgemm for the products) take the same
// means, and so do odd planes where a band ends mid-image.
TEST(DepthwiseFamily3, OtherPathsTakeTheSameMeans) {
  testing_util::ensure_loaded();
  Net n;
  n.C = 172, n.H = 49, n.W = 20, n.blocks = 2;
  const Built b = build(n, 900);
  for (int threads : {1, 2}) {
    const Result r = run_and_check(b, threads, {{"cpu.band_tiles", "0"}});
    EXPECT_EQ(r.reduce_means, 0);
    EXPECT_EQ(run_and_check(b, threads, {{"pass.cpu.channels_last", "0"}}).reduce_means, 0);
  }
}

// A stem of few input channels runs inside the first block (conv_thin's
// rows, outputs padded to groups of 32 where they are not: 172 -> 192,
// 37 -> 64), non-square windows (the keyword spotting CNN's 10x4/2) too.
TEST(DepthwiseFamily3, StemsOfAnyWidthJoinTheFirstBlock) {
  testing_util::ensure_loaded();
  unsigned seed = 950;
  for (int64_t c : {172, 37, 64, 16})
    for (int64_t c0 : {1, 3}) {
      Net n;
      n.C0 = c0, n.C = c, n.H = 49, n.W = 40;
      n.stem_kh = c == 172 ? 10 : 3, n.stem_kw = c == 172 ? 4 : 3, n.stem_s = 2;
      n.K = c == 37 ? 5 : 3;
      n.blocks = 2;
      n.skip = c == 64;
      n.act = c == 16 ? Act::kHardSwish : Act::kRelu;
      check_net(n, seed++, !n.skip);  // the first block's skip reads the stem's output too
    }
}

// The optimized model (the last block writing only its means, Y left out)
// saves and loads again without the passes, with the same outputs.
TEST(DepthwiseFamily3, MeansOnlyNodeLoadsAgain) {
  testing_util::ensure_loaded();
  Net n;
  n.C = 172, n.C0 = 1, n.H = 49, n.W = 40, n.stem_kh = 10, n.stem_kw = 4, n.stem_s = 2, n.blocks = 3;
  const Built b = build(n, 990);
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(b.model));
  const ::onnx::ModelProto out = singa::onnx::optimized_model(model, {});
  int means_only = 0;
  for (const auto& node : out.graph().node())
    means_only += node.op_type() == "ExpandDepthwiseProject" && node.output_size() == 2 && node.output(0).empty();
  EXPECT_EQ(means_only, 1);
  Built again = b;
  ASSERT_TRUE(out.SerializeToString(&again.model));
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  auto rep = singa::onnx::prepare_bytes(again.model, o);
  auto y = rep->run({b.x});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].second.numel(), int64_t(b.want.size()));
  for (int64_t i = 0; i < y[0].second.numel(); ++i)
    EXPECT_NEAR(y[0].second.data<float>()[i], b.want[size_t(i)], 2e-5 * std::max(1.0, std::fabs(b.want[size_t(i)])));
}

// A node that leaves Y out must have a project stage and the Mean output.
TEST(DepthwiseFamily3, MeansOnlyNodeChecksItsOutputs) {
  testing_util::ensure_loaded();
  ModelBuilder m(14);
  auto* op = m.model.add_opset_import();
  op->set_domain("ai.singa.cpu");
  op->set_version(1);
  const int64_t C = 20;
  m.input("x", SINGA_ONNX_FLOAT, {1, C, 6, 6});
  m.initializer("wd", f32_tensor({C, 1, 3, 3}, std::vector<float>(size_t(C * 9), 0.1f)));
  m.node("ExpandDepthwiseProject", {"x", "", "", "wd", ""}, {"", "mean"}, "edp");  // no W2
  m.last()->set_domain("ai.singa.cpu");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.output("mean", SINGA_ONNX_FLOAT, {1, C, 1, 1});
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  try {
    auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
    Tensor x({1, C, 6, 6}, SINGA_ONNX_FLOAT);
    std::fill(x.data<float>(), x.data<float>() + x.numel(), 1.f);
    rep->run({x});
    ADD_FAILURE() << "a node without Y or W2 ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("project stage"), std::string::npos) << e.what();
  }
}

// The pointwise products' tiles over pixel counts that leave 1-7 pixels
// after the whole tiles (6 pixels by 4 vectors; 8 by 3 where the products
// have 256+ inputs): 7x7, 5x5, 6x5, 5x3 images and rows of 13 or 19 pixels,
// outputs of whole, half (24) and masked vectors (20, 36, 40, 100), groups
// of 3 vectors ending in 1, 2, 3 or 4, with and without skip connections, at
// both strides.
TEST(DepthwiseFamily3, PixelAndChannelRemaindersOfTheProductTiles) {
  struct Shape {
    int64_t H, W, C, expand, K, S;
    bool skip;
  };
  const Shape shapes[] = {
      {7, 7, 24, 72, 5, 1, true},     {7, 7, 40, 480, 3, 1, true},  {7, 13, 36, 200, 3, 2, false},
      {5, 5, 100, 300, 3, 1, true},   {13, 7, 20, 260, 5, 2, false}, {7, 7, 64, 384, 3, 1, true},
      {7, 19, 48, 96, 7, 1, false},   {6, 5, 112, 672, 5, 1, true}, {5, 3, 160, 960, 3, 1, true},
      {6, 5, 16, 256, 3, 2, false},
  };
  unsigned seed = 700;
  for (const Shape& s : shapes) {
    Net net;
    net.C0 = 6, net.H = s.H, net.W = s.W, net.C = s.C, net.expand = s.expand, net.K = s.K, net.S = s.S;
    net.skip = s.skip, net.blocks = 2, net.last_stride_block = 1, net.gemm = false;
    net.act = Act::kRelu6, net.project_act = Act::kNone;
    check_net(net, seed++);
  }
}
