// Values in 16-channel blocks through MaxPool and channel Concat
// (plugins/ops_nn/passes/blocked_layout.cpp, pool.cpp, ops_tensor's
// concat_split.cpp, the in-place Concat plan in core/executor.cpp): small
// Inception stages over a family of shapes, each run optimised against the
// same graph without passes (the plain kernels on NCHW).
#include <gtest/gtest.h>

#include "model_builder.hpp"
#include "test_util.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>

#include <cmath>
#include <set>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::ensure_loaded;
using testing_util::random_floats;

namespace {

struct Pool {
  int64_t k = 3, s = 1, pad = 1, ceil = 0, dil = 1;
};

struct Stage {
  int64_t batch = 1;  // declared batch; -1 symbolic
  int64_t H = 14, W = 14, C0 = 32;
  // Branch widths: 1x1; 1x1 -> 3x3; 1x1 (reduce) -> 3x3; pool -> 1x1.
  int64_t b1 = 16, b2r = 32, b2 = 48, b3r = 24, b3 = 16, b4 = 32;
  int64_t b3r_first = 16;  // the first block's reducer, which reads the stem Conv
  Pool inner;                        // the branch pool (3x3/1 "same" in GoogLeNet)
  Pool between{3, 2, 0, 1, 1};       // between the two blocks (3x3/2 ceil_mode)
  bool bias = true, relu = true;
  bool duplicate = false;            // the 1x1 branch twice in the first Concat
  bool nested = false;               // the first Concat built as Concat(Concat(b1, b2), b3, b4)
};

// x [N, 3, H, W] -> 3x3 stem (C0) -> Inception block -> MaxPool `between`
// -> Inception block -> 3x3 Conv -> GlobalAveragePool -> y.
ModelBuilder inception_stage(const Stage& c) {
  ModelBuilder m(13);
  const std::vector<std::string> sym = c.batch < 0 ? std::vector<std::string>{"N"} : std::vector<std::string>{};
  m.input("x", SINGA_ONNX_FLOAT, {c.batch, 3, c.H, c.W}, sym);
  unsigned seed = 700;
  auto conv = [&](const std::string& in, const std::string& out, int64_t C, int64_t M, int64_t k) {
    const std::string w = out + "_w", b = out + "_b";
    seed += 2;
    m.initializer(w, random_floats({M, C, k, k}, seed, -0.3f, 0.3f));
    std::vector<std::string> ins{in, w};
    if (c.bias) {
      m.initializer(b, random_floats({M}, seed + 1));
      ins.push_back(b);
    }
    const std::string y = c.relu ? out + "_c" : out;
    m.node("Conv", ins, {y}, out);
    add_ints(m.last(), "pads", std::vector<int64_t>(4, k / 2));
    if (c.relu) m.node("Relu", {y}, {out}, out + "_relu");
  };
  auto pool = [&](const std::string& in, const std::string& out, const Pool& p) {
    m.node("MaxPool", {in}, {out}, out);
    add_ints(m.last(), "kernel_shape", {p.k, p.k});
    add_ints(m.last(), "strides", {p.s, p.s});
    add_ints(m.last(), "pads", std::vector<int64_t>(4, p.pad));
    if (p.ceil) add_int(m.last(), "ceil_mode", 1);
    if (p.dil != 1) add_ints(m.last(), "dilations", {p.dil, p.dil});
  };
  auto block = [&](const std::string& in, int64_t C, const std::string& tag, bool first) {
    conv(in, tag + "b1", C, c.b1, 1);
    conv(in, tag + "b2r", C, c.b2r, 1);
    conv(tag + "b2r", tag + "b2", c.b2r, c.b2, 3);
    const int64_t b3r = first ? c.b3r_first : c.b3r;
    conv(in, tag + "b3r", C, b3r, 1);
    conv(tag + "b3r", tag + "b3", b3r, c.b3, 3);
    pool(in, tag + "b4p", c.inner);
    conv(tag + "b4p", tag + "b4", C, c.b4, 1);
    std::vector<std::string> parts{tag + "b1", tag + "b2", tag + "b3", tag + "b4"};
    int64_t out = c.b1 + c.b2 + c.b3 + c.b4;
    if (first && c.duplicate) {
      parts.insert(parts.begin() + 1, tag + "b1");
      out += c.b1;
    }
    if (first && c.nested) {
      m.node("Concat", {parts[0], parts[1]}, {tag + "cat01"}, tag + "cat01");
      add_int(m.last(), "axis", 1);
      parts.erase(parts.begin(), parts.begin() + 2);
      parts.insert(parts.begin(), tag + "cat01");
    }
    m.node("Concat", parts, {tag + "cat"}, tag + "cat");
    add_int(m.last(), "axis", 1);
    return out;
  };
  conv("x", "stem", 3, c.C0, 3);
  const int64_t C1 = block("stem", c.C0, "i1", true);
  pool("i1cat", "mid", c.between);
  const int64_t C2 = block("mid", C1, "i2", false);
  conv("i2cat", "head", C2, 32, 3);
  m.node("GlobalAveragePool", {"head"}, {"y"}, "gap");
  m.output("y", SINGA_ONNX_FLOAT, {c.batch, 32, 1, 1}, sym);
  return m;
}

// The values the optimised graph keeps in 16-channel blocks.
std::set<std::string> blocked_values(const ModelBuilder& m) {
  std::set<std::string> blocked;
  const ::onnx::ModelProto optimized = singa::onnx::optimized_model(m.model, {});
  for (const auto& p : optimized.metadata_props())
    if (p.key().rfind("singa.layout:", 0) == 0 && p.value() == "ai.singa.cpu.nChw16c") blocked.insert(p.key().substr(13));
  return blocked;
}

// Worst absolute difference between the optimised and the plain run on x.
double worst_difference(const ModelBuilder& m, const Tensor& x, int threads) {
  singa::onnx::PrepareOptions o;
  o.threads = threads;
  o.optimize = false;
  auto plain = singa::onnx::prepare_bytes(m.bytes(), o);
  o.optimize = true;
  auto fast = singa::onnx::prepare_bytes(m.bytes(), o);
  auto a = plain->run({x}), b = fast->run({x});
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 1u);
  if (a.size() != 1 || b.size() != 1 || a[0].second.shape() != b[0].second.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a[0].second.numel(); ++i)
    worst = std::max(worst, double(std::fabs(a[0].second.data<float>()[i] - b[0].second.data<float>()[i])));
  return worst;
}

void check_stage(const Stage& c, unsigned seed) {
  ModelBuilder m = inception_stage(c);
  const int64_t n = c.batch < 0 ? 2 : c.batch;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    EXPECT_LE(worst_difference(m, random_floats({n, 3, c.H, c.W}, seed), threads), 2e-3);
  }
}

}  // namespace

// Every channel count a multiple of 16 but the second block's reducer of
// 24: both blocks' Concats, their branch MaxPools and the pool between them
// hold blocks (the reducer reads the pool's blocks), the last Concat too (a
// 3x3 Conv reads it).
TEST(BlockedConcat, InceptionBlocksStayBlocked) {
  ensure_loaded();
  Stage c;
  auto blocked = blocked_values(inception_stage(c));
  for (const char* v : {"i1cat", "i1b4p", "mid", "i2cat", "i2b4p", "i1b1", "i1b2", "i1b3", "i1b4", "i2b2", "stem"})
    EXPECT_EQ(blocked.count(v), 1u) << v;
  EXPECT_EQ(blocked.count("i2b3r"), 0u);  // 24 channels
  check_stage(c, 1);

  // An odd reducer of a Conv's output keeps that output NCHW (its direct
  // kernel), so the first block stays plain; the pool between the blocks,
  // read by four nodes, starts the blocks again.
  c.b3r_first = 24;
  blocked = blocked_values(inception_stage(c));
  for (const char* v : {"stem", "i1b1", "i1cat"}) EXPECT_EQ(blocked.count(v), 0u) << v;
  for (const char* v : {"mid", "i2cat", "i2b1"}) EXPECT_EQ(blocked.count(v), 1u) << v;
  check_stage(c, 2);
}

// Pool windows, strides, padding, ceil_mode and dilation (the portable
// loop), odd planes, no bias or activation, a Concat reading one input
// twice and Concats of Concats.
TEST(BlockedConcat, FamilyMatchesThePlainGraph) {
  ensure_loaded();
  std::vector<Stage> cases;
  Stage c;
  cases.push_back(c);
  c.H = 15, c.W = 11, c.between = {2, 2, 0, 1, 1};
  cases.push_back(c);
  c = Stage();
  c.inner = {5, 1, 2, 0, 1}, c.between = {3, 2, 1, 0, 1}, c.H = c.W = 13;
  cases.push_back(c);
  c = Stage();
  c.inner = {3, 1, 2, 0, 2}, c.between = {2, 3, 1, 1, 1};  // dilated branch pool
  cases.push_back(c);
  c = Stage();
  c.bias = false, c.relu = false, c.duplicate = true, c.C0 = 48, c.b1 = 64;
  cases.push_back(c);
  c = Stage();
  c.nested = true, c.H = c.W = 9, c.b2 = 80;
  cases.push_back(c);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_GE(blocked_values(inception_stage(cases[i])).count("i1cat"), 1u);
    check_stage(cases[i], 10 + unsigned(i));
  }
}

// On a plane of 512 pixels or more a Concat stays plain (blocked_layout.cpp,
// kMaxConcatPlane); the pool after it starts the blocked region from its
// NCHW input (the NCHW pool, then its output into blocks; with dilation, X
// into blocks first).
TEST(BlockedConcat, PoolStartsTheRegionAfterALargePlane) {
  ensure_loaded();
  Stage c;
  c.H = 28, c.W = 28, c.C0 = 64, c.b1 = 64, c.b2r = 96, c.b2 = 128, c.b3r = 16, c.b3 = 32;  // GoogLeNet's 3a
  auto blocked = blocked_values(inception_stage(c));
  EXPECT_EQ(blocked.count("i1cat"), 0u);
  EXPECT_EQ(blocked.count("mid"), 1u);
  EXPECT_EQ(blocked.count("i2cat"), 1u);
  check_stage(c, 20);
  c.between = {3, 2, 2, 1, 2};  // dilated
  c.H = 25, c.W = 23;
  blocked = blocked_values(inception_stage(c));
  EXPECT_EQ(blocked.count("i1cat"), 0u);
  EXPECT_EQ(blocked.count("mid"), 1u);
  check_stage(c, 21);
  c.batch = 2;
  check_stage(c, 22);
}

// Two images (each image's blocks are one run, the images apart: the Concat
// copies) and a symbolic batch run at other sizes than planned.
TEST(BlockedConcat, OtherBatchSizes) {
  ensure_loaded();
  Stage c;
  c.batch = 2;
  check_stage(c, 30);
  c.batch = -1;
  ModelBuilder m = inception_stage(c);
  singa::onnx::PrepareOptions o;
  o.threads = 2;
  o.optimize = false;
  auto plain = singa::onnx::prepare_bytes(m.bytes(), o);
  o.optimize = true;
  auto fast = singa::onnx::prepare_bytes(m.bytes(), o);
  for (int64_t n : {1, 3, 1}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    const Tensor x = random_floats({n, 3, c.H, c.W}, 40 + unsigned(n));
    auto a = plain->run({x}), b = fast->run({x});
    ASSERT_EQ(a[0].second.shape(), b[0].second.shape());
    for (int64_t i = 0; i < a[0].second.numel(); ++i)
      EXPECT_NEAR(a[0].second.data<float>()[i], b[0].second.data<float>()[i], 2e-3) << i;
  }
}

// Where a branch's channels are no multiple of 16, its Concat and every
// input stay plain (a Concat moves one layout), the pools before it too
// when only they read it; a Concat read by the graph's output stays plain.
TEST(BlockedConcat, MixedChannelsFallBackToPlain) {
  ensure_loaded();
  Stage c;
  c.b2 = 40;
  auto blocked = blocked_values(inception_stage(c));
  EXPECT_EQ(blocked.count("i1cat"), 0u);
  EXPECT_EQ(blocked.count("i1b1"), 0u);
  EXPECT_EQ(blocked.count("i2cat"), 0u);
  check_stage(c, 50);
  c = Stage();
  c.b4 = 8;
  blocked = blocked_values(inception_stage(c));
  EXPECT_EQ(blocked.count("i1cat"), 0u);
  check_stage(c, 51);

  // The Concat as a graph output: plain, and so are its inputs.
  ModelBuilder m = inception_stage(Stage());
  m.output("i1cat", SINGA_ONNX_FLOAT, {1, 112, 14, 14});
  blocked = blocked_values(m);
  EXPECT_EQ(blocked.count("i1cat"), 0u);
  EXPECT_EQ(blocked.count("i1b2"), 0u);
}

// Bottleneck stages with grouped 3x3 convs (RegNetX, ResNeXt): the grouped
// conv keeps its neighbours NCHW, so a strided or plain 1x1 shortcut that
// reads NCHW and feeds only a sum written NCHW stays NCHW too; on a small
// plane the residual chain still runs in blocks.
namespace {

struct Bottleneck {
  int64_t batch = 1, C0 = 32, H = 28, W = 28;
  std::vector<int64_t> widths{48, 64};  // one stage each
  std::vector<int64_t> depths{2, 2};
  int64_t group_width = 16, stride = 2;
  bool bias = true;
  // Add(shortcut, c) as torchvision's RegNet writes it; false: Add(c,
  // shortcut) as its ResNets do, where the shortcut Conv takes the sum.
  bool shortcut_first = true;
};

// x [N, C0, H, W] -> stages of bottlenecks (1x1 -> grouped 3x3 with the
// stride -> 1x1, plus the shortcut: a 1x1 Conv with the stride where the
// shape changes) -> GlobalAveragePool -> y. Stage s block i names its sum
// "s<s>b<i>", its shortcut "s<s>proj".
ModelBuilder bottleneck_net(const Bottleneck& c) {
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {c.batch, c.C0, c.H, c.W});
  unsigned seed = 900;
  auto conv = [&](const std::string& in, const std::string& out, int64_t C, int64_t M, int64_t k, int64_t stride,
                  int64_t group) {
    const std::string w = out + "_w", b = out + "_b";
    seed += 2;
    m.initializer(w, random_floats({M, C / group, k, k}, seed, -0.25f, 0.25f));
    std::vector<std::string> ins{in, w};
    if (c.bias) {
      m.initializer(b, random_floats({M}, seed + 1));
      ins.push_back(b);
    }
    m.node("Conv", ins, {out}, out);
    add_ints(m.last(), "pads", std::vector<int64_t>(4, k / 2));
    add_ints(m.last(), "strides", {stride, stride});
    if (group != 1) add_int(m.last(), "group", group);
  };
  auto relu = [&](const std::string& in, const std::string& out) { m.node("Relu", {in}, {out}, out); };
  std::string x = "x";
  int64_t C = c.C0, H = c.H;
  for (size_t s = 0; s < c.widths.size(); ++s) {
    const int64_t W = c.widths[s];
    for (int64_t i = 0; i < c.depths[s]; ++i) {
      const std::string t = "s" + std::to_string(s) + "b" + std::to_string(i);
      const int64_t stride = i == 0 ? c.stride : 1;
      std::string shortcut = x;
      if (stride != 1 || C != W) {
        shortcut = "s" + std::to_string(s) + "proj";
        conv(x, shortcut, C, W, 1, stride, 1);
      }
      conv(x, t + "a_c", C, W, 1, 1, 1);
      relu(t + "a_c", t + "a");
      conv(t + "a", t + "b_c", W, W, 3, stride, W / c.group_width);
      relu(t + "b_c", t + "b");
      conv(t + "b", t + "c", W, W, 1, 1, 1);
      if (c.shortcut_first)
        m.node("Add", {shortcut, t + "c"}, {t + "sum"}, t + "add");
      else
        m.node("Add", {t + "c", shortcut}, {t + "sum"}, t + "add");
      relu(t + "sum", t);
      x = t, C = W, H = (H - 1) / stride + 1;
    }
  }
  m.node("GlobalAveragePool", {x}, {"y"}, "gap");
  m.output("y", SINGA_ONNX_FLOAT, {c.batch, C, 1, 1});
  return m;
}

void check_bottleneck(const Bottleneck& c, unsigned seed) {
  ModelBuilder m = bottleneck_net(c);
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    EXPECT_LE(worst_difference(m, random_floats({c.batch, c.C0, c.H, c.W}, seed), threads), 2e-3);
  }
}

}  // namespace

// 28x28 -> 14x14 (196 pixels, where the 1x1 readers take NCHW) -> 7x7: the
// first stage's shortcut feeds only its NCHW sum and stays plain; the
// second's sums are read by small-plane 1x1 Convs and stay blocked with the
// shortcut that starts their chain.
TEST(BlockedConcat, GroupedBottleneckShortcuts) {
  ensure_loaded();
  Bottleneck c;
  auto blocked = blocked_values(bottleneck_net(c));
  EXPECT_EQ(blocked.count("s0proj"), 0u);
  EXPECT_EQ(blocked.count("s0b0"), 0u);
  EXPECT_EQ(blocked.count("s1proj"), 1u);
  EXPECT_EQ(blocked.count("s1b0"), 1u);
  check_bottleneck(c, 60);
}

// Strides 1 and 2, group widths 8 and 16, channels no multiple of 16, odd
// planes, no bias, two images, either side of the sum a Conv's: each
// matches the plain graph.
TEST(BlockedConcat, GroupedBottleneckFamily) {
  ensure_loaded();
  std::vector<Bottleneck> cases;
  Bottleneck c;
  cases.push_back(c);
  c.stride = 1, c.H = c.W = 9, c.widths = {32, 48};
  cases.push_back(c);
  c = Bottleneck();
  c.group_width = 8, c.widths = {24, 80}, c.H = 15, c.W = 13, c.bias = false;
  cases.push_back(c);
  c = Bottleneck();
  c.C0 = 16, c.widths = {32, 32}, c.depths = {1, 3}, c.H = c.W = 17, c.batch = 2;
  cases.push_back(c);
  c = Bottleneck();
  c.widths = {64}, c.depths = {3}, c.H = c.W = 11, c.group_width = 4;
  cases.push_back(c);
  c = Bottleneck();
  c.shortcut_first = false;
  cases.push_back(c);
  c.stride = 1, c.widths = {48, 96}, c.H = c.W = 10;
  cases.push_back(c);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_bottleneck(cases[i], 70 + unsigned(i));
  }
}
