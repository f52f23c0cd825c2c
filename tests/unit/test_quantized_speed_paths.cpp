// ConvInteger and QLinearConv on oneDNN's int8 primitives
// (plugins/ops_nn/conv_integer_dnnl.cpp) against a plain loop reference
// written here: u8 and s8 activations and weights, scalar and per-channel
// nonzero zero points, groups, strides, pads, dilations, at 1 to 3 threads
// (each count splits the rows differently). Integer results must match
// exactly; accumulators past 2^24 check that nothing rounds through float.
#include "model_builder.hpp"
#include "run_threads.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::q_at;
using testing_util::q_tensor;
using testing_util::random_q;

namespace {

struct Case {
  const char* name;
  int64_t N, C, H, W, M, KH, KW, group;
  std::vector<int64_t> strides, pads, dilations;
  int32_t xt, wt;
  bool per_channel_wz;
  int xlo = 0, xhi = 255, wlo = 0, whi = 255;  // value ranges (clamped to the type below)
};

// y[n, m, oh, ow] = sum over in-bounds taps of (x - xz) * (w - wz[m]).
std::vector<int64_t> reference(const Case& c, const Tensor& x, int64_t xz, const Tensor& w, const Tensor& wz,
                               int64_t OH, int64_t OW) {
  std::vector<int64_t> y(size_t(c.N * c.M * OH * OW), 0);
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m) {
      const int64_t g = m / Mg, z = q_at(wz, wz.numel() == 1 ? 0 : m);
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t s = 0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                const int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const int64_t xv = q_at(x, ((n * c.C + g * Cg + ci) * c.H + ih) * c.W + iw);
                const int64_t wv = q_at(w, ((m * Cg + ci) * c.KH + kh) * c.KW + kw);
                s += (xv - xz) * (wv - z);
              }
          y[size_t(((n * c.M + m) * OH + oh) * OW + ow)] = s;
        }
    }
  return y;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"u8 x u8, 3x3 pad 1", 1, 32, 17, 19, 48, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_UINT8, SINGA_ONNX_UINT8, false},
      {"u8 x u8 per-channel wz, stride 2, uneven pads", 2, 16, 15, 14, 32, 3, 3, 1, {2, 2}, {1, 0, 2, 1}, {1, 1},
       SINGA_ONNX_UINT8, SINGA_ONNX_UINT8, true},
      {"u8 x s8, 1x1", 1, 64, 9, 11, 40, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, SINGA_ONNX_UINT8, SINGA_ONNX_INT8, false,
       0, 255, -128, 127},
      {"s8 x s8, groups 4, dilation 2", 1, 32, 13, 13, 16, 3, 3, 4, {1, 1}, {2, 2, 2, 2}, {2, 2}, SINGA_ONNX_INT8,
       SINGA_ONNX_INT8, true, -128, 127, -128, 127},
      {"u8 x u8, depthwise 5x5 stride 2", 1, 24, 16, 16, 24, 5, 5, 24, {2, 2}, {2, 2, 2, 2}, {1, 1}, SINGA_ONNX_UINT8,
       SINGA_ONNX_UINT8, true},
      {"u8 x u8, 7x7 stride 2 thin input", 1, 3, 30, 28, 16, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}, SINGA_ONNX_UINT8,
       SINGA_ONNX_UINT8, false},
      // 576 taps of 255 * 128: accumulators near 1.9e7, past float's 2^24.
      {"large accumulators", 1, 64, 6, 6, 16, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_UINT8, SINGA_ONNX_UINT8,
       false, 250, 255, 250, 255},
  };
  return all;
}

struct Built {
  Tensor x, w, wz;
  int64_t xz, OH, OW;
};

Built make_data(const Case& c, unsigned seed) {
  Built b;
  b.OH = (c.H + c.pads[0] + c.pads[2] - (c.KH - 1) * c.dilations[0] - 1) / c.strides[0] + 1;
  b.OW = (c.W + c.pads[1] + c.pads[3] - (c.KW - 1) * c.dilations[1] - 1) / c.strides[1] + 1;
  b.x = random_q({c.N, c.C, c.H, c.W}, c.xt, seed, c.xlo, c.xhi);
  b.w = random_q({c.M, c.C / c.group, c.KH, c.KW}, c.wt, seed + 1, c.wlo, c.whi);
  const bool big = std::string(c.name) == "large accumulators";
  // Zero points far from the values in the large case: the differences stay large.
  b.xz = big ? 0 : (c.xt == SINGA_ONNX_UINT8 ? 117 : -9);
  if (c.per_channel_wz) {
    b.wz = random_q({c.M}, c.wt, seed + 2, c.wt == SINGA_ONNX_UINT8 ? 60 : -30, c.wt == SINGA_ONNX_UINT8 ? 200 : 30);
  } else {
    b.wz = q_tensor({}, c.wt, {big ? 0 : (c.wt == SINGA_ONNX_UINT8 ? 131 : 3)});
  }
  return b;
}

class QuantizedSpeedPaths : public testing_util::KeepsCpuThreads {};

TEST_F(QuantizedSpeedPaths, ConvIntegerMatchesReference) {
  auto& rt = singa::Runtime::instance();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Built b = make_data(c, 11);
    // x's zero point is a graph input (as DynamicQuantizeLinear gives it);
    // the weights and their zero points are initializers.
    ModelBuilder m;
    m.input("x", c.xt, {c.N, c.C, c.H, c.W})
        .input("xz", c.xt, {})
        .initializer("w", b.w)
        .initializer("wz", b.wz)
        .node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, "conv");
    add_ints(m.last(), "strides", c.strides);
    add_ints(m.last(), "pads", c.pads);
    add_ints(m.last(), "dilations", c.dilations);
    add_int(m.last(), "group", c.group);
    m.output("y", SINGA_ONNX_INT32, {c.N, c.M, b.OH, b.OW});
    auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
    const std::vector<int64_t> want = reference(c, b.x, b.xz, b.w, b.wz, b.OH, b.OW);
    if (std::string(c.name) == "large accumulators") {
      int64_t top = 0;
      for (int64_t v : want) top = std::max(top, std::abs(v));
      ASSERT_GT(top, int64_t(1) << 24);
    }
    for (int threads : {1, 2, 3, 1}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      auto got = rep->run(std::vector<Tensor>{b.x, q_tensor({}, c.xt, {int(b.xz)})});
      const Tensor& y = got[0].second;
      ASSERT_EQ(y.numel(), int64_t(want.size()));
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < y.numel(); ++i)
        if (int64_t(y.data<int32_t>()[i]) != want[size_t(i)] && wrong++ == 0) first = i;
      EXPECT_EQ(wrong, 0) << "first at " << first << ": got " << (first >= 0 ? y.data<int32_t>()[first] : 0)
                          << " want " << (first >= 0 ? want[size_t(first)] : 0);
    }
  }
}

// QLinearConv: the same accumulator, plus an int32 bias, requantized with
// round-half-even and saturation (reference: the same formula in double).
TEST_F(QuantizedSpeedPaths, QLinearConvMatchesReference) {
  auto& rt = singa::Runtime::instance();
  for (size_t k : {0u, 1u, 3u}) {
    const Case& c = cases()[k];
    SCOPED_TRACE(c.name);
    const Built b = make_data(c, 23);
    auto f32 = [](float v) {
      Tensor t({}, SINGA_ONNX_FLOAT);
      t.data<float>()[0] = v;
      return t;
    };
    Tensor ws({c.M}, SINGA_ONNX_FLOAT), bias({c.M}, SINGA_ONNX_INT32);
    for (int64_t i = 0; i < c.M; ++i) {
      ws.data<float>()[i] = 0.002f + 0.0001f * float(i);
      bias.data<int32_t>()[i] = int32_t(i * 37 - 500);
    }
    Tensor wz = b.wz;
    if (wz.numel() == 1) {  // QLinearConv's w_zero_point pairs with per-channel scales
      Tensor full({c.M}, c.wt);
      for (int64_t i = 0; i < c.M; ++i) {
        if (c.wt == SINGA_ONNX_UINT8)
          full.data<uint8_t>()[i] = wz.data<uint8_t>()[0];
        else
          full.data<int8_t>()[i] = wz.data<int8_t>()[0];
      }
      wz = full;
    }
    const float xs = 0.05f, ys = 0.7f;
    const int64_t yz = 100;
    ModelBuilder m;
    m.input("x", c.xt, {c.N, c.C, c.H, c.W})
        .initializer("xs", f32(xs))
        .initializer("xz", q_tensor({}, c.xt, {int(b.xz)}))
        .initializer("w", b.w)
        .initializer("ws", ws)
        .initializer("wz", wz)
        .initializer("ys", f32(ys))
        .initializer("yz", q_tensor({}, SINGA_ONNX_UINT8, {int(yz)}))
        .initializer("b", bias)
        .node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, "conv");
    add_ints(m.last(), "strides", c.strides);
    add_ints(m.last(), "pads", c.pads);
    add_ints(m.last(), "dilations", c.dilations);
    add_int(m.last(), "group", c.group);
    m.output("y", SINGA_ONNX_UINT8, {c.N, c.M, b.OH, b.OW});
    auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
    const std::vector<int64_t> acc = reference(c, b.x, b.xz, b.w, wz, b.OH, b.OW);
    const int64_t P = b.OH * b.OW;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      auto got = rep->run(std::vector<Tensor>{b.x});
      const Tensor& y = got[0].second;
      ASSERT_EQ(y.numel(), int64_t(acc.size()));
      int64_t wrong = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const int64_t mm = (i / P) % c.M;
        const double scale = double(xs) * double(ws.data<float>()[mm]) / double(ys);
        const double v = std::nearbyint(double(acc[size_t(i)] + bias.data<int32_t>()[mm]) * scale) + double(yz);
        const int64_t want = int64_t(std::min(255.0, std::max(0.0, v)));
        wrong += int64_t(y.data<uint8_t>()[i]) != want;
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

}  // namespace
