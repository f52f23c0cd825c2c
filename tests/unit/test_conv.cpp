// Window ops. The oneDNN convolution path (plugins/ops_nn/conv_dnnl.cpp) against the
// im2col/direct path (option cpu.dnnl=0), at 1, 2 and 3 threads on one prepared
// model: each thread count builds its own split (bands of rows, or slices of
// output channels for weight-heavy layers), and every split must give the
// whole convolution's result.
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::random_floats;

namespace {

struct Case {
  const char* name;
  int64_t N, C, H, W, M, KH, KW, group;
  std::vector<int64_t> strides, pads, dilations;
  const char* activation = nullptr;  // a node after the Conv that the passes fuse into it
};

// Appends `act` (Relu, LeakyRelu or Clip with constant bounds) reading y0 and
// writing y.
void add_activation(ModelBuilder& m, const char* act) {
  const std::string a = act;
  if (a == "Clip") {
    Tensor lo({}, SINGA_ONNX_FLOAT), hi({}, SINGA_ONNX_FLOAT);
    lo.data<float>()[0] = -0.5f, hi.data<float>()[0] = 2.f;
    m.initializer("lo", lo).initializer("hi", hi).node("Clip", {"y0", "lo", "hi"}, {"y"}, "act");
    return;
  }
  m.node(a, {"y0"}, {"y"}, "act");
  if (a == "LeakyRelu") {
    auto* alpha = m.last()->add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(::onnx::AttributeProto::FLOAT);
    alpha->set_f(0.1f);
  }
}

std::shared_ptr<singa::onnx::Rep> prepare(const ModelBuilder& m, bool dnnl) {
  singa::onnx::PrepareOptions o;
  if (!dnnl) o.options["cpu.dnnl"] = "0";
  return singa::onnx::prepare_bytes(m.bytes(), o);
}

Tensor to_double(const Tensor& t) {
  Tensor d(t.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

// A MaxPool after the Conv and its activation (the passes fuse it into the Conv).
struct Pool {
  int64_t k, s;
  std::vector<int64_t> pads;
};

// The case with activation `act` ("" for none) and, if given, a MaxPool, in
// float at 1 to 3 threads against the same model in float64 (which takes the
// generic loops).
void check_against_float64(const Case& c, const char* act, const Pool* pool, double tolerance = 1e-5) {
  auto& rt = singa::Runtime::instance();
  SCOPED_TRACE(std::string(c.name) + " + " + act + (pool ? " + MaxPool" : ""));
  int64_t OH = (c.H + c.pads[0] + c.pads[2] - c.KH) / c.strides[0] + 1;
  int64_t OW = (c.W + c.pads[1] + c.pads[3] - c.KW) / c.strides[1] + 1;
  if (pool) {
    OH = (OH + pool->pads[0] + pool->pads[2] - pool->k) / pool->s + 1;
    OW = (OW + pool->pads[1] + pool->pads[3] - pool->k) / pool->s + 1;
  }
  const Tensor w = random_floats({c.M, c.C / c.group, c.KH, c.KW}, 7), b = random_floats({c.M}, 8);
  const Tensor x = random_floats({c.N, c.C, c.H, c.W}, 9);
  auto build = [&](int32_t dtype) {
    ModelBuilder m;
    const bool dbl = dtype == SINGA_ONNX_DOUBLE;
    const std::string a = act, conv_out = a.empty() && !pool ? "y" : "c", act_out = pool ? "a" : "y";
    m.input("x", dtype, {c.N, c.C, c.H, c.W})
        .initializer("W", dbl ? to_double(w) : w)
        .initializer("B", dbl ? to_double(b) : b)
        .node("Conv", {"x", "W", "B"}, {conv_out}, "conv");
    add_ints(m.last(), "strides", c.strides);
    add_ints(m.last(), "pads", c.pads);
    add_int(m.last(), "group", c.group);
    if (a == "Relu") m.node("Relu", {"c"}, {act_out}, "act");
    if (a == "LeakyRelu") {
      m.node("LeakyRelu", {"c"}, {act_out}, "act");
      auto* alpha = m.last()->add_attribute();
      alpha->set_name("alpha");
      alpha->set_type(::onnx::AttributeProto::FLOAT);
      alpha->set_f(0.2f);
    }
    if (a == "Clip") {
      Tensor lo({}, dtype), hi({}, dtype);
      if (dbl)
        lo.data<double>()[0] = 0, hi.data<double>()[0] = 0.5;
      else
        lo.data<float>()[0] = 0, hi.data<float>()[0] = 0.5f;
      m.initializer("lo", lo).initializer("hi", hi).node("Clip", {"c", "lo", "hi"}, {act_out}, "act");
    }
    if (pool) {
      m.node("MaxPool", {a.empty() ? "c" : "a"}, {"y"}, "pool");
      add_ints(m.last(), "kernel_shape", {pool->k, pool->k});
      add_ints(m.last(), "strides", {pool->s, pool->s});
      add_ints(m.last(), "pads", pool->pads);
    }
    m.output("y", dtype, {c.N, c.M, OH, OW});
    return singa::onnx::prepare_bytes(m.bytes(), {});
  };
  auto want = build(SINGA_ONNX_DOUBLE)->run({to_double(x)});
  auto fast = build(SINGA_ONNX_FLOAT);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    rt.cpu()->set_num_threads(threads);
    auto got = fast->run({x});
    ASSERT_EQ(got[0].second.shape(), want[0].second.shape());
    double worst = 0;
    for (int64_t i = 0; i < got[0].second.numel(); ++i)
      worst = std::max(worst, std::fabs(got[0].second.data<float>()[i] - want[0].second.data<double>()[i]));
    EXPECT_LE(worst, tolerance);
  }
}

}  // namespace

TEST(ConvDnnl, EverySplitMatchesTheReferencePath) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const std::vector<Case> cases = {
      {"3x3 pad 1", 2, 16, 10, 12, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"stride 2, uneven pads, dilation 2", 1, 8, 13, 11, 16, 3, 2, 1, {2, 2}, {0, 1, 2, 0}, {2, 2}},
      {"weight-heavy: channel slices", 1, 64, 3, 3, 64, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"one output row", 1, 16, 3, 5, 48, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"grouped", 1, 16, 9, 9, 32, 3, 3, 4, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"depthwise stride 2", 1, 32, 14, 14, 32, 3, 3, 32, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"1x1 stride 2", 2, 24, 8, 8, 40, 1, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      // A thin first layer with 16-channel-blocked output: bands go back to
      // NCHW through unblock16_f32 (two full 16-column blocks and a tail of 2).
      {"C=3 stride 2, blocked output", 2, 3, 21, 69, 32, 3, 3, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, "Relu"},
      // 3x3, stride 1, 16+ channels: oneDNN's Winograd code, which takes Relu
      // as a post-op but not LeakyRelu or Clip (those run after it).
      {"winograd + LeakyRelu", 1, 32, 20, 22, 48, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, "LeakyRelu"},
      {"winograd + Relu", 2, 16, 13, 13, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Relu"},
      {"winograd + Clip, unpadded", 1, 64, 9, 30, 64, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, "Clip"},
      // Transformed weights past cpu.dnnl_winograd_part_mib (1 here; 2.3 MiB or
      // more for this layer): slices of output channels even at 1 thread.
      {"winograd in channel slices", 1, 192, 8, 8, 192, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, "LeakyRelu"},
  };
  // The thin first layers here are oneDNN's (ConvThin has its own test).
  // Added to SINGA_OPTIONS, which a variant of this suite sets (meson.build).
  const char* had = std::getenv("SINGA_OPTIONS");
  const std::string saved_options = had ? had : "";
  setenv("SINGA_OPTIONS", (saved_options + ",cpu.dnnl_winograd_part_mib=1,cpu.conv_thin=0").c_str(), 1);
  const int32_t saved = rt.cpu()->num_threads();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
        .initializer("W", random_floats({c.M, c.C / c.group, c.KH, c.KW}, 1))
        .initializer("B", random_floats({c.M}, 2))
        .node("Conv", {"x", "W", "B"}, {c.activation ? "y0" : "y"}, "conv");
    add_ints(m.last(), "strides", c.strides);
    add_ints(m.last(), "pads", c.pads);
    add_ints(m.last(), "dilations", c.dilations);
    add_int(m.last(), "group", c.group);
    if (c.activation) add_activation(m, c.activation);
    const int64_t OH = (c.H + c.pads[0] + c.pads[2] - (c.KH - 1) * c.dilations[0] - 1) / c.strides[0] + 1;
    const int64_t OW = (c.W + c.pads[1] + c.pads[3] - (c.KW - 1) * c.dilations[1] - 1) / c.strides[1] + 1;
    m.output("y", SINGA_ONNX_FLOAT, {c.N, c.M, OH, OW});
    const Tensor x = random_floats({c.N, c.C, c.H, c.W}, 3);
    auto ref = prepare(m, false)->run({x});
    auto fast = prepare(m, true);
    for (int threads : {1, 2, 3, 1}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      auto got = fast->run({x});
      ASSERT_EQ(got[0].second.shape(), ref[0].second.shape());
      double worst = 0;
      for (int64_t i = 0; i < got[0].second.numel(); ++i)
        worst = std::max(worst, double(std::fabs(got[0].second.data<float>()[i] - ref[0].second.data<float>()[i])));
      EXPECT_LE(worst, 1e-4);
    }
  }
  if (had)
    setenv("SINGA_OPTIONS", saved_options.c_str(), 1);
  else
    unsetenv("SINGA_OPTIONS");
  rt.cpu()->set_num_threads(saved);
}

// An input shape unknown at prepare (symbolic H and W here; in Tiny-YOLO a Pad
// whose pads were folded after shape inference) is planned on the first run;
// a later run with another shape takes the im2col path.
TEST(ConvDnnl, ShapeUnknownAtPrepareIsPlannedOnTheFirstRun) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {1, 8, -1, -1}, {"", "", "H", "W"})
      .initializer("W", random_floats({16, 8, 3, 3}, 4))
      .initializer("B", random_floats({16}, 5))
      .node("Conv", {"x", "W", "B"}, {"y"}, "conv");
  add_ints(m.last(), "pads", {1, 1, 1, 1});
  m.output("y", SINGA_ONNX_FLOAT, {1, 16, -1, -1}, {"", "", "H", "W"});
  auto ref = prepare(m, false), fast = prepare(m, true);
  for (int64_t h : {9, 9, 6}) {
    SCOPED_TRACE("H = W = " + std::to_string(h));
    const Tensor x = random_floats({1, 8, h, h}, unsigned(h));
    auto want = ref->run({x}), got = fast->run({x});
    ASSERT_EQ(got[0].second.shape(), want[0].second.shape());
    double worst = 0;
    for (int64_t i = 0; i < got[0].second.numel(); ++i)
      worst = std::max(worst, double(std::fabs(got[0].second.data<float>()[i] - want[0].second.data<float>()[i])));
    EXPECT_LE(worst, 1e-4);
  }
}

// The NCHW paths (plugins/ops_nn/conv_nchw_f32.cpp: pointwise as a product, strided or not,
// depthwise 3x3/5x5 through phase planes or 16-channel blocks), with a fused
// Relu, Clip or LeakyRelu, against the same model in float64 (which takes the
// generic loops), at 1 to 3 threads.
TEST(ConvNchw, PointwiseAndDepthwiseMatchFloat64) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const std::vector<Case> cases = {
      {"pointwise", 2, 16, 9, 11, 24, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, many column blocks", 1, 8, 70, 70, 12, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, small plane split by channels", 1, 32, 7, 7, 80, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Planes whose last tile of pointwise_direct_f32 holds one, two or three
      // vectors, the last one partial; 8-channel panels with a tail of 5.
      {"pointwise, 20 pixels", 2, 24, 5, 4, 40, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, 40 pixels, a panel tail", 1, 40, 4, 10, 29, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, 107 pixels, one input channel", 1, 1, 1, 107, 13, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Weights heavier than the image: one call per slice of output channels.
      {"pointwise, weight-heavy, a channel tail", 1, 128, 8, 9, 300, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, weight-heavy batch", 3, 128, 8, 8, 256, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // ... on planes below 64 pixels: oneDNN's planned convolution (pointwise_prefers_dnnl).
      {"pointwise, weight-heavy, 25 pixels", 1, 96, 5, 5, 200, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise, weight-heavy batch, 16 pixels", 3, 64, 4, 4, 128, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Strided: the pixels read are gathered first (ResNet's downsampling shortcuts).
      {"pointwise stride 2, odd sizes", 2, 16, 9, 11, 24, 1, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {"pointwise strides 3x2, weight-heavy", 1, 96, 7, 10, 200, 1, 1, 1, {3, 2}, {0, 0, 0, 0}, {1, 1}},
      {"depthwise 3x3", 2, 6, 7, 7, 6, 3, 3, 6, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"depthwise 3x3 stride 2, odd sizes", 1, 5, 15, 13, 5, 3, 3, 5, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"depthwise 3x3 no padding", 1, 3, 9, 20, 3, 3, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"depthwise 5x5 stride 2, uneven pads", 2, 4, 17, 12, 4, 5, 5, 4, {2, 2}, {1, 2, 2, 1}, {1, 1}},
      {"depthwise 5x5", 1, 3, 20, 33, 3, 5, 5, 3, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      // 16 channels and more: blocks of 16 channels on AVX-512
      // (depthwise_blocked_f32.cpp), the last C % 16 plane by plane; wide
      // rows split the output rows into several bands.
      {"depthwise 3x3, a block and a tail", 2, 21, 14, 14, 21, 3, 3, 21, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"depthwise 3x3 stride 2, wide rows in bands", 1, 32, 23, 130, 32, 3, 3, 32, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"depthwise 5x5, bands, uneven pads", 1, 16, 40, 100, 16, 5, 5, 16, {1, 1}, {2, 1, 1, 2}, {1, 1}},
      {"depthwise 5x5 stride 2, small planes", 2, 48, 9, 9, 48, 5, 5, 48, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {"depthwise 3x3 unpadded 7x7", 1, 64, 7, 7, 64, 3, 3, 64, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  const int32_t saved = rt.cpu()->num_threads();
  for (const Case& c : cases)
    for (const char* act : {"Relu", "Clip", "LeakyRelu", ""}) check_against_float64(c, act, nullptr);
  rt.cpu()->set_num_threads(saved);
}

// 3x3 convolutions of few input channels by Winograd's F(2x2, 3x3) or
// F(4x4, 3x3) (plugins/ops_nn/winograd_f32.cpp: 16 tiles of a tile row per
// vector, blocks of up to three vectors, panels of 8 output channels),
// against float64: whole and partial tile vectors, planes that end inside a
// tile, padding on any side, a panel tail, batches. Most take F(4x4)
// (winograd_tile: the fewest products) and the meson test conv_winograd_f2
// reruns them all as F(2x2). F(4x4)'s transforms lose more: its results
// here are within 1e-4 of float64, at values up to about 20.
TEST(ConvWinograd, MatchesFloat64) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const std::vector<Case> cases = {
      {"SqueezeNet's 16 -> 64 on 55x55", 1, 16, 55, 55, 64, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"odd plane, a panel tail, 2 images", 2, 5, 9, 13, 13, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"no padding, 3 images", 3, 3, 8, 11, 16, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"uneven pads, two vectors per tile row", 1, 8, 20, 40, 8, 3, 3, 1, {1, 1}, {0, 2, 1, 0}, {1, 1}},
      {"wide rows, three vectors per tile row", 1, 7, 3, 70, 24, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"pads of 2 on a 3x5 plane, 4 images", 4, 1, 3, 5, 8, 3, 3, 1, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      {"one row, one input channel", 1, 1, 1, 37, 8, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // Narrow planes: two or four tile rows share a vector.
      {"27x27, two tile rows per vector", 1, 16, 27, 27, 24, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"13x13, four tile rows in one vector", 1, 8, 13, 13, 16, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"7x10 unpadded, 2 images, a panel tail", 2, 6, 7, 10, 20, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Unpadded planes whose tile rows fill their lanes: each group's last
      // tile reads the two columns after the group's.
      {"18x18 unpadded, four full tile rows per vector", 1, 4, 18, 18, 16, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"9x34 unpadded, two full tile rows per vector", 1, 6, 9, 34, 8, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  const int32_t saved = rt.cpu()->num_threads();
  for (const Case& c : cases)
    for (const char* act : {"Relu", "Clip", "LeakyRelu", ""}) check_against_float64(c, act, nullptr, 2e-4);
  rt.cpu()->set_num_threads(saved);
}

// Convolutions of inputs with 1 to 4 channels (plugins/ops_nn/conv_thin_f32.cpp:
// 6 pixels x 64 channels or 12 x 32 per register strip, the row's ends and
// narrow rows pixel by pixel), alone and with a fused MaxPool whose bands
// keep the conv rows that the next step's windows share, against float64.
TEST(ConvThin, StemsMatchFloat64) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const std::vector<Case> cases = {
      {"ResNet-like 7x7 stride 2", 1, 3, 40, 38, 64, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}},
      {"SqueezeNet-like 3x3 stride 2 unpadded", 2, 3, 31, 45, 64, 3, 3, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {"MobileNet-like 32 channels", 1, 3, 33, 29, 32, 3, 3, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"stride 1, uneven pads, 96 channels", 1, 4, 17, 26, 96, 3, 3, 1, {1, 1}, {0, 1, 2, 0}, {1, 1}},
      {"one channel, 5x3, rows past the budget", 1, 1, 120, 200, 64, 5, 3, 1, {1, 1}, {2, 1, 2, 1}, {1, 1}},
      {"narrower than a strip", 2, 2, 9, 6, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"pads as wide as the window", 1, 3, 5, 5, 32, 3, 3, 1, {2, 2}, {2, 2, 2, 2}, {1, 1}},
  };
  const Pool pools[] = {{3, 2, {1, 1, 1, 1}}, {3, 2, {0, 0, 0, 0}}, {2, 2, {0, 0, 0, 0}}};
  const int32_t saved = rt.cpu()->num_threads();
  for (const Case& c : cases) {
    for (const char* act : {"Relu", "Clip", "LeakyRelu", ""}) check_against_float64(c, act, nullptr);
    for (const Pool& p : pools) check_against_float64(c, "Relu", &p);
  }
  check_against_float64(cases[0], "", &pools[0]);
  check_against_float64(cases[1], "Clip", &pools[1]);
  rt.cpu()->set_num_threads(saved);
}

// MaxPool's vector rows (plugins/ops_nn/pool.cpp, taken without Indices)
// against the scalar loop (taken when Indices is asked for), NaNs included:
// both keep the first tap and let a later tap win only when strictly greater.
TEST(MaxPoolRows, MatchTheScalarLoopNaNsIncluded) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  struct PoolCase {
    const char* name;
    int64_t k, s;
    std::vector<int64_t> pads;
    int64_t ceil;
  };
  const std::vector<PoolCase> cases = {
      {"3x3 stride 2, ceil_mode (SqueezeNet)", 3, 2, {0, 0, 0, 0}, 1},
      {"3x3 stride 2, pads 1 (ResNet)", 3, 2, {1, 1, 1, 1}, 0},
      {"3x3 stride 1, pads 1", 3, 1, {1, 1, 1, 1}, 0},
      {"2x2 stride 1", 2, 1, {0, 0, 0, 0}, 0},
      {"2x2 stride 2, uneven pads", 2, 2, {1, 0, 0, 1}, 1},
  };
  // Widths with rows of more than 16 windows and a partial block (37), whole
  // blocks only (33) and fewer than 16 windows (13).
  for (const int64_t W : {37, 33, 13})
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(c.name) + ", width " + std::to_string(W));
      const int64_t H = 23;
      Tensor x = random_floats({2, 3, H, W}, 11);
      for (int64_t i = 0; i < x.numel(); i += 17) x.data<float>()[i] = std::nanf("");
      auto build = [&](bool indices) {
        ModelBuilder m;
        m.input("x", SINGA_ONNX_FLOAT, {2, 3, H, W});
        m.node("MaxPool", {"x"}, indices ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"}, "pool");
        add_ints(m.last(), "kernel_shape", {c.k, c.k});
        add_ints(m.last(), "strides", {c.s, c.s});
        add_ints(m.last(), "pads", c.pads);
        auto* a = m.last()->add_attribute();
        a->set_name("ceil_mode");
        a->set_type(::onnx::AttributeProto::INT);
        a->set_i(c.ceil);
        const std::vector<int64_t> any{-1, -1, -1, -1};
        const std::vector<std::string> names{"n", "c", "h", "w"};
        m.output("y", SINGA_ONNX_FLOAT, any, names);
        if (indices) m.output("i", SINGA_ONNX_INT64, any, names);
        return singa::onnx::prepare_bytes(m.bytes(), {});
      };
      auto want = build(true)->run({x}), got = build(false)->run({x});
      ASSERT_EQ(got[0].second.shape(), want[0].second.shape());
      int64_t differ = 0, nans = 0;
      for (int64_t i = 0; i < got[0].second.numel(); ++i) {
        const float a = got[0].second.data<float>()[i], b = want[0].second.data<float>()[i];
        nans += std::isnan(b);
        differ += std::isnan(a) != std::isnan(b) || (!std::isnan(a) && a != b);
      }
      EXPECT_EQ(differ, 0);
      EXPECT_GT(nans, 0);  // some windows start on a NaN
    }
}
