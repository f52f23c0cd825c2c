// What QDQ models go through at prepare and between their int8 convolutions:
//
// - Two QDQ convolutions of one shape in a chain, their weights read from
//   DequantizeLinear as the model stores them (s8 without a zero point or
//   with an all-zero one: no copy; u8 or a nonzero zero point: recovered and
//   stored as s8), at 1 and 2 threads (at 2 the output rows are split into
//   bands that share one reordered copy of the weights). Each node's 8-bit
//   result is checked against a double reference of the quantized math
//   computed here from the integers the node read: equal up to rounding ties
//   (the kernel scales in float), at most one step and on few elements.
// - Image stems (under 8 input channels), which run as unfolded windows on
//   oneDNN's int8 matmul: against the same reference.
// - QdqRequantize, QuantizeLinear(Relu?(DequantizeLinear(x))), which now
//   looks its results up in a 256-entry table: every input byte, u8 and s8,
//   at lengths around the 64-byte vector width, against the ONNX formula
//   written here as a scalar loop (the same float steps, so bit for bit).
// - int8::fit_s8 on a Conv's (contiguous) and a MatMul's (strided) channel
//   layout against a direct per-channel loop.
#include "model_builder.hpp"
#include "run_threads.hpp"
#include "../../plugins/common/int8_lattice.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::q_at;
using testing_util::q_tensor;

namespace {

int count_op(const std::vector<singa::onnx::NodeTiming>& prof, const std::string& op) {
  return int(std::count_if(prof.begin(), prof.end(), [&](const auto& t) { return t.op_type == op; }));
}

class QdqPrepare : public testing_util::KeepsCpuThreads {};

// How a convolution's weights are stored in the model.
struct WeightForm {
  const char* name;
  int32_t dtype;      // u8 or s8
  bool zp_input;      // a zero point input at all
  int zp;             // its value
  bool per_channel;   // scales per output channel
};

// A 2-D convolution of one image's worth of windows (N images, square
// kernel k, stride st, padding pd on every side), bias, Relu, then
// QuantizeLinear (u8, scale ys, zero point yz): the 8-bit result from the
// quantized integers, in double; `exact` gets the value before rounding.
struct Geo {
  int64_t N, C, H, W, M, k, st, pd;
  int64_t OH() const { return (H + 2 * pd - k) / st + 1; }
  int64_t OW() const { return (W + 2 * pd - k) / st + 1; }
};

std::vector<int> conv_reference(const Geo& q, const std::vector<int>& xq, int xz, float xs, const std::vector<int>& wq,
                                int wz, const std::vector<float>& ws, const std::vector<float>& b, float ys, int yz,
                                std::vector<double>* exact) {
  const int64_t OH = q.OH(), OW = q.OW();
  std::vector<int> y(size_t(q.N * q.M * OH * OW));
  exact->assign(y.size(), 0.0);
  for (int64_t n = 0; n < q.N; ++n)
    for (int64_t m = 0; m < q.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          for (int64_t c = 0; c < q.C; ++c)
            for (int64_t kh = 0; kh < q.k; ++kh)
              for (int64_t kw = 0; kw < q.k; ++kw) {
                const int64_t ih = oh * q.st - q.pd + kh, iw = ow * q.st - q.pd + kw;
                if (ih < 0 || ih >= q.H || iw < 0 || iw >= q.W) continue;
                acc += int64_t(xq[size_t(((n * q.C + c) * q.H + ih) * q.W + iw)] - xz) *
                       (wq[size_t(((m * q.C + c) * q.k + kh) * q.k + kw)] - wz);
              }
          const double v =
              std::max(0.0, double(acc) * double(xs) * double(ws[ws.size() == 1 ? 0 : size_t(m)]) + b[size_t(m)]);
          const size_t at = size_t(((n * q.M + m) * OH + oh) * OW + ow);
          (*exact)[at] = v / double(ys) + yz;
          y[at] = int(std::min(255.0, std::max(0.0, std::nearbyint(v / double(ys)) + yz)));
        }
  return y;
}

// Differences from the reference: more than one step fails; one step only
// where the exact value lies within a float rounding of a tie.
void expect_close(const Tensor& got, const std::vector<int>& want, const std::vector<double>& exact, const char* what) {
  int64_t steps = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int d = std::abs(q_at(got, i) - want[size_t(i)]);
    ASSERT_LE(d, 1) << what << " at " << i;
    if (d == 1) {
      ++steps;
      const double frac = exact[size_t(i)] - std::floor(exact[size_t(i)]);
      EXPECT_NEAR(frac, 0.5, 1e-3) << what << " at " << i << ": a one-step difference away from a tie";
    }
  }
  EXPECT_LE(steps, got.numel() / 100 + 1) << what;
}

TEST_F(QdqPrepare, SameShapeConvChainMatchesQuantizedReference) {
  auto& rt = singa::Runtime::instance();
  const std::vector<WeightForm> forms = {
      {"s8 no zero point, per tensor", SINGA_ONNX_INT8, false, 0, false},
      {"s8 zero zero point, per channel", SINGA_ONNX_INT8, true, 0, true},
      {"s8 nonzero zero point", SINGA_ONNX_INT8, true, 3, true},
      {"u8 zero point 128", SINGA_ONNX_UINT8, true, 128, true},
  };
  const int64_t C = 32, H = 13, W = 11;
  for (const WeightForm& f : forms) {
    SCOPED_TRACE(f.name);
    std::mt19937 rng(5);
    // Weights within 120 of the zero point: every form stays on the int8 path.
    std::uniform_int_distribution<int> uw(f.zp - 120, f.zp + 120), ux(0, 255);
    std::uniform_real_distribution<float> us(0.002f, 0.006f), ub(-0.5f, 0.5f);
    std::vector<int> w1(static_cast<size_t>(C * C * 9)), w2(w1.size()), xq(static_cast<size_t>(C * H * W));
    for (auto& v : w1) v = uw(rng);
    for (auto& v : w2) v = uw(rng);
    for (auto& v : xq) v = ux(rng);
    std::vector<float> ws1(f.per_channel ? size_t(C) : 1), ws2(ws1.size()), b1(static_cast<size_t>(C)), b2(static_cast<size_t>(C));
    for (auto& v : ws1) v = us(rng);
    for (auto& v : ws2) v = us(rng);
    for (auto& v : b1) v = ub(rng);
    for (auto& v : b2) v = ub(rng);
    const float xs = 0.02f, s1 = 0.04f, s2 = 0.05f;
    const int xz = 10, z1 = 3, z2 = 0;
    const singa::Shape wshape{C, C, 3, 3}, sshape = f.per_channel ? singa::Shape{C} : singa::Shape{};
    Tensor x({1, C, H, W}, SINGA_ONNX_FLOAT);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(xq[size_t(i)] - xz) * xs;

    ModelBuilder mb;
    mb.input("x", SINGA_ONNX_FLOAT, {1, C, H, W})
        .initializer("xs", f32_tensor({}, {xs}))
        .initializer("xz", q_tensor({}, SINGA_ONNX_UINT8, {xz}))
        .initializer("s1", f32_tensor({}, {s1}))
        .initializer("z1", q_tensor({}, SINGA_ONNX_UINT8, {z1}))
        .initializer("s2", f32_tensor({}, {s2}))
        .initializer("z2", q_tensor({}, SINGA_ONNX_UINT8, {z2}))
        .initializer("w1", q_tensor(wshape, f.dtype, w1))
        .initializer("w2", q_tensor(wshape, f.dtype, w2))
        .initializer("ws1", f32_tensor(sshape, ws1))
        .initializer("ws2", f32_tensor(sshape, ws2))
        .initializer("wz", q_tensor(sshape, f.dtype, std::vector<int>(ws1.size(), f.zp)))
        .initializer("b1", f32_tensor({C}, b1))
        .initializer("b2", f32_tensor({C}, b2))
        .node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
        .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
    for (const char* w : {"w1", "w2"}) {
      const std::string s = std::string("ws") + w[1];
      if (f.zp_input)
        mb.node("DequantizeLinear", {w, s, "wz"}, {std::string(w) + "d"});
      else
        mb.node("DequantizeLinear", {w, s}, {std::string(w) + "d"});
      add_int(mb.last(), "axis", 0);
    }
    mb.node("Conv", {"xd", "w1d", "b1"}, {"c1"}, "conv1");
    add_ints(mb.last(), "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c1"}, {"r1"})
        .node("QuantizeLinear", {"r1", "s1", "z1"}, {"q1"})
        .node("DequantizeLinear", {"q1", "s1", "z1"}, {"d1"})
        .node("Conv", {"d1", "w2d", "b2"}, {"c2"}, "conv2");
    add_ints(mb.last(), "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c2"}, {"r2"})
        .node("QuantizeLinear", {"r2", "s2", "z2"}, {"q2"})
        .output("q1", SINGA_ONNX_UINT8, {1, C, H, W})
        .output("q2", SINGA_ONNX_UINT8, {1, C, H, W});

    auto model = singa::onnx::prepare_bytes(mb.bytes(), {});
    const int wz = f.zp_input ? f.zp : 0;
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      std::vector<singa::onnx::NodeTiming> prof;
      singa::onnx::RunOptions ro;
      ro.profile = &prof;
      auto y = model->run(std::vector<Tensor>{x}, ro);
      ASSERT_EQ(y.size(), 2u);
      if (count_op(prof, "QdqConv") != 2) std::cout << "note: the QDQ conv pass did not run (no VNNI/AMX int8)\n";
      std::vector<double> exact;
      const Geo geo{1, C, H, W, C, 3, 1, 1};
      const auto want1 = conv_reference(geo, xq, xz, xs, w1, wz, ws1, b1, s1, z1, &exact);
      expect_close(y[0].second, want1, exact, "conv1");
      // conv2 from the q1 singa wrote: each node on its own input.
      std::vector<int> got1(size_t(y[0].second.numel()));
      for (int64_t i = 0; i < y[0].second.numel(); ++i) got1[size_t(i)] = q_at(y[0].second, i);
      const auto want2 = conv_reference(geo, got1, z1, s1, w2, wz, ws2, b2, s2, z2, &exact);
      expect_close(y[1].second, want2, exact, "conv2");
    }
  }
}

// Image stems (under 8 input channels) run as unfolded windows times the
// weights on oneDNN's int8 matmul: ResNet's 7x7 stride-2 stem and odd
// shapes (1 and 5 channels, 3x3 and 5x5, batch 2, windows that leave the
// image on every side, an image of 9230 output pixels run in several
// matmul calls), u8 output, against the quantized reference.
TEST_F(QdqPrepare, ImageStemMatchesQuantizedReference) {
  auto& rt = singa::Runtime::instance();
  for (const Geo& q : {Geo{1, 3, 40, 37, 64, 7, 2, 3}, Geo{2, 1, 9, 12, 16, 3, 1, 1}, Geo{1, 5, 17, 6, 24, 5, 2, 2},
                       Geo{1, 3, 130, 71, 8, 3, 1, 1}}) {
    SCOPED_TRACE("stem " + std::to_string(q.N) + "x" + std::to_string(q.C) + "x" + std::to_string(q.H) + "x" +
                 std::to_string(q.W) + " k" + std::to_string(q.k));
    std::mt19937 rng(23);
    std::uniform_int_distribution<int> uw(-127, 127), ux(0, 255);
    std::uniform_real_distribution<float> us(0.002f, 0.006f), ub(-0.5f, 0.5f);
    std::vector<int> w(static_cast<size_t>(q.M * q.C * q.k * q.k)), xq(static_cast<size_t>(q.N * q.C * q.H * q.W));
    for (auto& v : w) v = uw(rng);
    for (auto& v : xq) v = ux(rng);
    std::vector<float> ws(static_cast<size_t>(q.M)), b(static_cast<size_t>(q.M));
    for (auto& v : ws) v = us(rng);
    for (auto& v : b) v = ub(rng);
    const float xs = 0.02f, ys = 0.03f;
    const int xz = 117, yz = 5;
    const singa::Shape xshape{q.N, q.C, q.H, q.W};
    Tensor x(xshape, SINGA_ONNX_FLOAT);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(xq[size_t(i)] - xz) * xs;
    ModelBuilder mb;
    mb.input("x", SINGA_ONNX_FLOAT, xshape)
        .initializer("xs", f32_tensor({}, {xs}))
        .initializer("xz", q_tensor({}, SINGA_ONNX_UINT8, {xz}))
        .initializer("ys", f32_tensor({}, {ys}))
        .initializer("yz", q_tensor({}, SINGA_ONNX_UINT8, {yz}))
        .initializer("w", q_tensor({q.M, q.C, q.k, q.k}, SINGA_ONNX_INT8, w))
        .initializer("ws", f32_tensor({q.M}, ws))
        .initializer("b", f32_tensor({q.M}, b))
        .node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
        .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"})
        .node("DequantizeLinear", {"w", "ws"}, {"wd"});
    add_int(mb.last(), "axis", 0);
    mb.node("Conv", {"xd", "wd", "b"}, {"c"}, "stem");
    add_ints(mb.last(), "strides", {q.st, q.st});
    add_ints(mb.last(), "pads", {q.pd, q.pd, q.pd, q.pd});
    mb.node("Relu", {"c"}, {"r"})
        .node("QuantizeLinear", {"r", "ys", "yz"}, {"y"})
        .output("y", SINGA_ONNX_UINT8, {q.N, q.M, q.OH(), q.OW()});
    auto model = singa::onnx::prepare_bytes(mb.bytes(), {});
    std::vector<double> exact;
    const auto want = conv_reference(q, xq, xz, xs, w, 0, ws, b, ys, yz, &exact);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      std::vector<singa::onnx::NodeTiming> prof;
      singa::onnx::RunOptions ro;
      ro.profile = &prof;
      auto y = model->run(std::vector<Tensor>{x}, ro);
      if (count_op(prof, "QdqConv") != 1) std::cout << "note: the stem ran unfused (no VNNI/AMX int8)\n";
      expect_close(y[0].second, want, exact, "stem");
    }
  }
}

// The ONNX formula, step by step in float as QuantizeLinear and
// DequantizeLinear define it.
int requantize_formula(int x, float sx, int zx, float sy, int zy, bool relu, bool s8_out) {
  float v = (float(x) - float(zx)) * sx;
  if (relu) v = std::max(v, 0.0f);
  const float q = std::nearbyint(v / sy) + float(zy);
  const float lo = s8_out ? -128.f : 0.f, hi = s8_out ? 127.f : 255.f;
  return int(std::min(std::max(q, lo), hi));
}

TEST_F(QdqPrepare, RequantizeTableMatchesFormula) {
  auto& rt = singa::Runtime::instance();
  struct Case {
    int32_t xt, yt;
    float sx, sy;
    int zx, zy;
    bool relu;
  };
  // Scales whose ratio puts many values on exact ties (0.5 steps) and others on none.
  const std::vector<Case> cases = {
      {SINGA_ONNX_UINT8, SINGA_ONNX_UINT8, 0.05f, 0.1f, 128, 7, true},
      {SINGA_ONNX_INT8, SINGA_ONNX_UINT8, 0.037f, 0.023f, -9, 17, false},
      {SINGA_ONNX_UINT8, SINGA_ONNX_INT8, 0.2f, 0.05f, 3, -5, true},
      {SINGA_ONNX_INT8, SINGA_ONNX_INT8, 0.011f, 0.033f, 0, 0, false},
  };
  for (const Case& c : cases)
    for (int64_t n : {1, 63, 64, 65, 256, 1000, 70001}) {
      SCOPED_TRACE("length " + std::to_string(n) + (c.xt == SINGA_ONNX_INT8 ? " s8 in" : " u8 in") +
                   (c.yt == SINGA_ONNX_INT8 ? " s8 out" : " u8 out") + (c.relu ? " relu" : ""));
      ModelBuilder mb;
      mb.input("x", c.xt, {n})
          .initializer("sx", f32_tensor({}, {c.sx}))
          .initializer("zx", q_tensor({}, c.xt, {c.zx}))
          .initializer("sy", f32_tensor({}, {c.sy}))
          .initializer("zy", q_tensor({}, c.yt, {c.zy}))
          .node("DequantizeLinear", {"x", "sx", "zx"}, {"d"});
      std::string v = "d";
      if (c.relu) {
        mb.node("Relu", {"d"}, {"r"});
        v = "r";
      }
      mb.node("QuantizeLinear", {v, "sy", "zy"}, {"y"}).output("y", c.yt, {n});
      // Every byte value in turn, from an odd start.
      Tensor x({n}, c.xt);
      for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(x.raw_data())[i] = uint8_t((i * 7 + 11) & 255);
      auto model = singa::onnx::prepare_bytes(mb.bytes(), {});
      for (int threads : {1, 2}) {
        rt.cpu()->set_num_threads(threads);
        std::vector<singa::onnx::NodeTiming> prof;
        singa::onnx::RunOptions ro;
        ro.profile = &prof;
        auto y = model->run(std::vector<Tensor>{x}, ro);
        if (count_op(prof, "QdqRequantize") != 1) std::cout << "note: the QDQ elementwise pass did not run\n";
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int want = requantize_formula(q_at(x, i), c.sx, c.zx, c.sy, c.zy, c.relu, c.yt == SINGA_ONNX_INT8);
          bad += q_at(y[0].second, i) != want;
        }
        EXPECT_EQ(bad, 0) << "threads " << threads;
      }
    }
}

TEST(Int8Weights, FitS8MatchesDirectLoop) {
  std::mt19937 rng(9);
  // (channels, count) and both layouts: a Conv's rows, a MatMul's columns.
  for (auto [channels, count] : {std::pair<int64_t, int64_t>{5, 37}, {64, 9}, {1, 1}, {33, 130}})
    for (bool columns : {false, true}) {
      SCOPED_TRACE(std::to_string(channels) + "x" + std::to_string(count) + (columns ? " columns" : " rows"));
      singa::int8::ChannelInts w;
      w.view = columns ? singa::int8::ChannelView{channels, count, 1, channels}
                       : singa::int8::ChannelView{channels, count, count, 1};
      w.q.resize(size_t(channels * count));
      w.scale.assign(size_t(channels), 1.0f);
      // Per channel a window of up to 256 values within [-255, 255] (what q - zero point spans).
      std::vector<int> base(static_cast<size_t>(channels));
      for (auto& b : base) b = std::uniform_int_distribution<int>(-255, 0)(rng);
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t k = 0; k < count; ++k)
          w.q[size_t(w.view.at(c, k))] = base[size_t(c)] + std::uniform_int_distribution<int>(0, 255)(rng);
      std::vector<int8_t> stored, zp;
      ASSERT_TRUE(singa::int8::fit_s8(w, stored, zp));
      for (int64_t c = 0; c < channels; ++c) {
        int lo = 1 << 30, hi = -(1 << 30);
        for (int64_t k = 0; k < count; ++k) {
          lo = std::min(lo, w.q[size_t(w.view.at(c, k))]);
          hi = std::max(hi, w.q[size_t(w.view.at(c, k))]);
        }
        const int z = hi > 127 ? 127 - hi : (lo < -128 ? -128 - lo : 0);
        ASSERT_EQ(int(zp[size_t(c)]), z) << "channel " << c;
        for (int64_t k = 0; k < count; ++k) {
          const int64_t at = w.view.at(c, k);
          ASSERT_EQ(int(stored[size_t(at)]), w.q[size_t(at)] + z) << "channel " << c << " element " << k;
        }
      }
      // A channel spanning 257 values does not fit.
      w.q[size_t(w.view.at(0, 0))] = base[0] - 1;
      w.q[size_t(w.view.at(0, count - 1))] = base[0] + 256;
      if (count > 1) {
        EXPECT_FALSE(singa::int8::fit_s8(w, stored, zp));
      }
    }
}

// QuantizeLinear's vector loop bit for bit against nearbyint(x / scale), on
// values placed on, and one float either side of, every tie (k + 0.5) *
// scale (where a loop multiplying by 1 / scale instead of dividing goes
// wrong), besides random values, NaN, infinities and signed zeros, for u8
// and s8 outputs and several scales.
TEST_F(QdqPrepare, QuantizeLinearMatchesDivision) {
  const float scales[] = {0.0173f, 0.1f, 1.f / 255.f, 3.7e-3f, 0.021f, 1.f};
  for (float sc : scales)
    for (int32_t yt : {SINGA_ONNX_UINT8, SINGA_ONNX_INT8}) {
      const int zp = yt == SINGA_ONNX_UINT8 ? 131 : -7;
      std::vector<float> xs;
      for (int k = -300; k <= 300; ++k) {
        const float t = (float(k) + 0.5f) * sc;
        xs.push_back(t);
        xs.push_back(std::nextafter(t, 1e30f));
        xs.push_back(std::nextafter(t, -1e30f));
      }
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> u(-400.f * sc, 400.f * sc);
      for (int i = 0; i < 1001; ++i) xs.push_back(u(rng));
      for (float v : {0.f, -0.f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(), 3e38f, -3e38f, 1e-40f})
        xs.push_back(v);
      const int64_t n = int64_t(xs.size());
      SCOPED_TRACE("scale " + std::to_string(sc) + (yt == SINGA_ONNX_INT8 ? " s8" : " u8"));
      ModelBuilder mb;
      mb.input("x", SINGA_ONNX_FLOAT, {n})
          .initializer("s", f32_tensor({}, {sc}))
          .initializer("z", q_tensor({}, yt, {zp}))
          .node("QuantizeLinear", {"x", "s", "z"}, {"y"})
          .output("y", yt, {n});
      const Tensor x = f32_tensor({n}, xs);
      const auto y = singa::onnx::prepare_bytes(mb.bytes(), {})->run(std::vector<Tensor>{x});
      const float lo = yt == SINGA_ONNX_INT8 ? -128.f : 0.f, hi = yt == SINGA_ONNX_INT8 ? 127.f : 255.f;
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < n; ++i) {
        const float v = std::nearbyint(xs[size_t(i)] / sc) + float(zp);
        const int want = v != v ? zp : int(std::min(std::max(v, lo), hi));
        if (q_at(y[0].second, i) != want && bad++ == 0) first = i;
      }
      EXPECT_EQ(bad, 0) << "first at " << first << " (x " << (first >= 0 ? xs[size_t(first)] : 0.f) << ")";
    }
}

}  // namespace
