// QDQ convolutions (plugins/ops_nn/passes/fuse_qdq_conv.cpp, the QdqConv
// kernel in quant_conv.cpp) and the vector QuantizeLinear/DequantizeLinear
// loops (qdq_convert.cpp).
//
// Convolutions: random QDQ models (x -> QuantizeLinear -> DequantizeLinear
// -> Conv <- DequantizeLinear(int8 W) [-> Relu] [-> QuantizeLinear]) run with
// the pass on and off (pass.cpu.qdq_conv=0, the float Conv on dequantized
// values). Float outputs are also checked against a double-precision
// reference computed here from the integers. The fused path is exact up to
// float rounding of x_scale * w_scale * acc; the float Conv rounds each of
// its sums (and Winograd transforms for 3x3), so the two differ by a few
// float ulps of the sum of |terms|. After a QuantizeLinear that difference
// can flip a value that lies within it of a rounding tie: at most one
// quantization step, on few elements.
//
// Quantize/Dequantize: against the ONNX formula written here as a scalar
// loop, on random data with exact ties, NaN, infinities and saturating
// values, per tensor and per axis, u8 and s8, at opsets 13 and 21, at sizes
// with vector tails and big enough to be split over threads.
#include "model_builder.hpp"
#include "run_threads.hpp"

#include <singa/onnx.hpp>
#include <singa/optimize.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

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

bool has_op(const std::vector<singa::onnx::NodeTiming>& prof, const std::string& op) {
  for (const auto& t : prof)
    if (t.op_type == op) return true;
  return false;
}

struct ConvCase {
  const char* name;
  int64_t N, C, H, W, M, KH, KW, group;
  std::vector<int64_t> strides, pads, dilations;
  int32_t xt;          // u8 or s8 activations
  bool per_channel;    // w scales per output channel
  bool bias, relu;
  int xz;              // activation zero point
  int wz;              // weight zero point (int8), nonzero: the int32 path
  bool quantize_out;   // a QuantizeLinear (u8) after the Conv [+ Relu]
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> all = {
      {"1x1 u8 per-tensor bias relu", 1, 64, 14, 14, 48, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, SINGA_ONNX_UINT8, false,
       true, true, 0, 0, false},
      {"3x3 pad 1 u8 zp per-channel", 1, 32, 17, 19, 40, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_UINT8, true,
       true, false, 131, 0, false},
      {"3x3 stride 2 uneven pads s8 relu", 2, 16, 15, 14, 32, 3, 3, 1, {2, 2}, {1, 0, 2, 1}, {1, 1}, SINGA_ONNX_INT8,
       true, true, true, -7, 0, false},
      {"7x7 stride 2", 1, 8, 30, 28, 16, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}, SINGA_ONNX_UINT8, false, true, true, 0,
       0, false},
      {"image stem (3 input channels)", 1, 3, 30, 28, 16, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}, SINGA_ONNX_UINT8, false,
       true, true, 0, 0, false},
      {"groups 4 dilation 2 no bias", 1, 32, 13, 13, 16, 3, 3, 4, {1, 1}, {2, 2, 2, 2}, {2, 2}, SINGA_ONNX_UINT8, true,
       false, false, 60, 0, false},
      {"depthwise 3x3 stride 2", 1, 24, 16, 16, 24, 3, 3, 24, {2, 2}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_UINT8, true,
       true, true, 3, 0, false},
      {"weight zero point (int32 path)", 1, 16, 9, 11, 24, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_UINT8,
       true, true, true, 100, 5, false},
      {"1x1 then QuantizeLinear", 1, 64, 14, 14, 48, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, SINGA_ONNX_UINT8, true,
       true, true, 0, 0, true},
      {"weight zero point then QuantizeLinear", 1, 16, 9, 11, 24, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1},
       SINGA_ONNX_UINT8, true, true, true, 100, -60, true},
      {"3x3 s8 relu then QuantizeLinear s8", 1, 32, 12, 12, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_INT8,
       false, true, true, -3, 0, true},
      {"3x3 s8 then QuantizeLinear", 1, 32, 12, 12, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, SINGA_ONNX_INT8, false,
       true, false, 0, 0, true},
  };
  return all;
}

struct ConvModel {
  std::string bytes;
  Tensor x;                       // float input (quantizes exactly onto the grid)
  std::vector<int> xq;            // its quantized values
  std::vector<int> wq;            // int8 weights
  std::vector<float> ws, b;       // weight scales, bias
  float xs = 0, ys = 0;
  int yz = 0;
  int64_t OH = 0, OW = 0;
};

ConvModel build(const ConvCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  ConvModel m;
  m.OH = (c.H + c.pads[0] + c.pads[2] - (c.KH - 1) * c.dilations[0] - 1) / c.strides[0] + 1;
  m.OW = (c.W + c.pads[1] + c.pads[3] - (c.KW - 1) * c.dilations[1] - 1) / c.strides[1] + 1;
  const int lo = c.xt == SINGA_ONNX_UINT8 ? 0 : -128, hi = c.xt == SINGA_ONNX_UINT8 ? 255 : 127;
  m.xs = 0.02f;
  // x on the quantization grid, so QuantizeLinear gives back exactly xq.
  std::uniform_int_distribution<int> ux(lo, hi);
  m.x = Tensor({c.N, c.C, c.H, c.W}, SINGA_ONNX_FLOAT);
  m.xq.resize(size_t(m.x.numel()));
  for (int64_t i = 0; i < m.x.numel(); ++i) {
    m.xq[size_t(i)] = ux(rng);
    m.x.data<float>()[i] = float(m.xq[size_t(i)] - c.xz) * m.xs;
  }
  const int64_t Cg = c.C / c.group, K = Cg * c.KH * c.KW;
  // With a weight zero point the full int8 range: q - wz then spans more
  // than int8 holds, so the pass must keep an offset (the int32 path).
  std::uniform_int_distribution<int> uw(c.wz ? -128 : -127, 127);
  m.wq.resize(size_t(c.M * K));
  for (auto& v : m.wq) v = uw(rng);
  std::uniform_real_distribution<float> us(0.002f, 0.01f), ub(-2.f, 2.f);
  m.ws.resize(c.per_channel ? size_t(c.M) : 1);
  for (auto& v : m.ws) v = us(rng);
  if (c.bias) {
    m.b.resize(size_t(c.M));
    for (auto& v : m.b) v = ub(rng);
  }
  m.ys = 0.05f, m.yz = c.xt == SINGA_ONNX_UINT8 ? 128 : -5;

  ModelBuilder mb;
  const std::string xtype = c.xt == SINGA_ONNX_UINT8 ? "u8" : "s8";
  mb.input("x", SINGA_ONNX_FLOAT, {c.N, c.C, c.H, c.W})
      .initializer("xs", f32_tensor({}, {m.xs}))
      .initializer("xz", q_tensor({}, c.xt, {c.xz}))
      .initializer("wq", q_tensor({c.M, Cg, c.KH, c.KW}, SINGA_ONNX_INT8, m.wq))
      .initializer("ws", f32_tensor(c.per_channel ? singa::Shape{c.M} : singa::Shape{}, m.ws))
      .initializer("wz", q_tensor(c.per_channel ? singa::Shape{c.M} : singa::Shape{}, SINGA_ONNX_INT8,
                                  std::vector<int>(m.ws.size(), c.wz)))
      .node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
      .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"})
      .node("DequantizeLinear", {"wq", "ws", "wz"}, {"wd"});
  add_int(mb.last(), "axis", 0);
  std::vector<std::string> conv_in{"xd", "wd"};
  if (c.bias) {
    mb.initializer("b", f32_tensor({c.M}, m.b));
    conv_in.push_back("b");
  }
  mb.node("Conv", conv_in, {"c"}, "conv");
  add_ints(mb.last(), "strides", c.strides);
  add_ints(mb.last(), "pads", c.pads);
  add_ints(mb.last(), "dilations", c.dilations);
  add_int(mb.last(), "group", c.group);
  std::string y = "c";
  if (c.relu) {
    mb.node("Relu", {"c"}, {"r"});
    y = "r";
  }
  if (c.quantize_out) {
    mb.initializer("ys", f32_tensor({}, {m.ys})).initializer("yz", q_tensor({}, c.xt, {m.yz}));
    mb.node("QuantizeLinear", {y, "ys", "yz"}, {"yq"});
    mb.output("yq", c.xt, {c.N, c.M, m.OH, m.OW});
  } else {
    mb.output(y, SINGA_ONNX_FLOAT, {c.N, c.M, m.OH, m.OW});
  }
  m.bytes = mb.bytes();
  return m;
}

// Double reference from the integers, and the sum of |terms| per output
// (the scale of the float path's rounding).
void reference(const ConvCase& c, const ConvModel& m, std::vector<double>& y, std::vector<double>& mag) {
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  y.assign(size_t(c.N * c.M * m.OH * m.OW), 0.0);
  mag.assign(y.size(), 0.0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.M; ++o) {
      const int64_t g = o / Mg;
      const double s = double(m.xs) * double(m.ws[m.ws.size() == 1 ? 0 : size_t(o)]);
      for (int64_t oh = 0; oh < m.OH; ++oh)
        for (int64_t ow = 0; ow < m.OW; ++ow) {
          double acc = 0, abs_acc = 0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                const int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const double xv = m.xq[size_t(((n * c.C + g * Cg + ci) * c.H + ih) * c.W + iw)] - c.xz;
                const double wv = m.wq[size_t(((o * Cg + ci) * c.KH + kh) * c.KW + kw)] - c.wz;
                acc += xv * wv;
                abs_acc += std::abs(xv * wv);
              }
          double v = acc * s + (c.bias ? double(m.b[size_t(o)]) : 0.0);
          if (c.relu) v = std::max(v, 0.0);
          const size_t at = size_t(((n * c.M + o) * m.OH + oh) * m.OW + ow);
          y[at] = v;
          mag[at] = abs_acc * s + (c.bias ? std::abs(double(m.b[size_t(o)])) : 0.0);
        }
    }
}

class QdqConv : public testing_util::KeepsCpuThreads {};

TEST_F(QdqConv, FusedMatchesUnfusedAndReference) {
  auto& rt = singa::Runtime::instance();
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const ConvModel m = build(c, 17);
    singa::onnx::PrepareOptions off;
    off.options["pass.cpu.qdq_conv"] = "0";
    auto fused = singa::onnx::prepare_bytes(m.bytes, {});
    auto plain = singa::onnx::prepare_bytes(m.bytes, off);
    std::vector<double> want, mag;
    reference(c, m, want, mag);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      std::vector<singa::onnx::NodeTiming> pf, pp;
      singa::onnx::RunOptions ro_f, ro_p;
      ro_f.profile = &pf, ro_p.profile = &pp;
      const Tensor yf = fused->run({m.x}, ro_f)[0].second;
      const Tensor yp = plain->run({m.x}, ro_p)[0].second;
      // Without VNNI/AMX the pass leaves the float Conv (the int8 code would not be exact).
      if (threads == 1 && !has_op(pf, "QdqConv")) std::cout << "note: " << c.name << " ran unfused\n";
      EXPECT_FALSE(has_op(pp, "QdqConv"));
      ASSERT_EQ(yf.numel(), int64_t(want.size()));
      ASSERT_EQ(yp.numel(), int64_t(want.size()));
      if (c.quantize_out) {
        // At most one step apart; a flip needs a value within float noise of a tie.
        int64_t off_by_one = 0, worse = 0;
        for (int64_t i = 0; i < yf.numel(); ++i) {
          const int d = std::abs(q_at(yf, i) - q_at(yp, i));
          off_by_one += d == 1;
          worse += d > 1;
        }
        EXPECT_EQ(worse, 0);
        EXPECT_LE(off_by_one, yf.numel() / 100);
        // And the fused values are the reference's, quantized (up to the same ties).
        int64_t far = 0;
        const double lo = c.xt == SINGA_ONNX_UINT8 ? 0 : -128, hi = c.xt == SINGA_ONNX_UINT8 ? 255 : 127;
        for (int64_t i = 0; i < yf.numel(); ++i) {
          const double q = std::min(hi, std::max(lo, std::nearbyint(want[size_t(i)] / m.ys) + m.yz));
          far += std::abs(q - q_at(yf, i)) > 1.0;
        }
        EXPECT_EQ(far, 0);
        continue;
      }
      int64_t bad_ref = 0, bad_plain = 0, first = -1;
      for (int64_t i = 0; i < yf.numel(); ++i) {
        const double f = yf.data<float>()[i], p = yp.data<float>()[i], r = want[size_t(i)];
        const double tol = 4e-6 * mag[size_t(i)] + 1e-6;
        if (std::abs(f - r) > tol && bad_ref++ == 0) first = i;
        if (std::abs(f - p) > 10 * tol) ++bad_plain;
      }
      EXPECT_EQ(bad_ref, 0) << "first at " << first << ": got " << (first >= 0 ? yf.data<float>()[first] : 0)
                            << " want " << (first >= 0 ? want[size_t(first)] : 0);
      EXPECT_EQ(bad_plain, 0);
    }
  }
}

// A float W that is not integer multiples of one scale per channel stays a float Conv.
TEST_F(QdqConv, FloatWeightsOffTheGridStayFloat) {
  ModelBuilder mb;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 0.1f);
  std::vector<float> w(size_t(8 * 4 * 3 * 3));
  for (auto& v : w) v = nd(rng);
  mb.input("x", SINGA_ONNX_FLOAT, {1, 4, 8, 8})
      .initializer("xs", f32_tensor({}, {0.1f}))
      .initializer("xz", q_tensor({}, SINGA_ONNX_UINT8, {128}))
      .initializer("w", f32_tensor({8, 4, 3, 3}, w))
      .node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"})
      .node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"})
      .node("Conv", {"xd", "w"}, {"y"}, "conv")
      .output("y", SINGA_ONNX_FLOAT, {1, 8, 6, 6});
  auto rep = singa::onnx::prepare_bytes(mb.bytes(), {});
  Tensor x({1, 4, 8, 8}, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(rng);
  std::vector<singa::onnx::NodeTiming> prof;
  singa::onnx::RunOptions ro;
  ro.profile = &prof;
  rep->run({x}, ro);
  EXPECT_FALSE(has_op(prof, "QdqConv"));
  EXPECT_TRUE(has_op(prof, "Conv") || has_op(prof, "FusedConv"));
}

// ---------------------------------------------------------------- Q / DQ

// ONNX's QuantizeLinear: float division, round half to even, saturate; NaN
// to the zero point (as the scalar kernels have always done).
int quantize_ref(float x, float scale, int zp, int lo, int hi) {
  const float v = std::nearbyint(x / scale) + float(zp);
  if (std::isnan(v)) return zp;
  return int(std::min(std::max(v, float(lo)), float(hi)));
}

// Data with exact ties (k + 0.5 steps), NaN, infinities and values far past the range.
std::vector<float> tricky_data(int64_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> kind(0, 9), steps(-300, 300);
  std::uniform_real_distribution<float> u(-200.f, 200.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    switch (kind(rng)) {
      case 0: x = (float(steps(rng)) + 0.5f) * scale; break;  // a tie (scale a power of two: exact)
      case 1: x = std::numeric_limits<float>::quiet_NaN(); break;
      case 2: x = (steps(rng) % 2 ? 1.f : -1.f) * std::numeric_limits<float>::infinity(); break;
      case 3: x = float(steps(rng)) * 1e6f; break;
      default: x = u(rng) * scale; break;
    }
  }
  return v;
}

struct QCase {
  int64_t opset;
  int32_t qt;
  bool per_axis;
  singa::Shape shape;
};

TEST_F(QdqConv, QuantizeDequantizeMatchScalarFormula) {
  auto& rt = singa::Runtime::instance();
  const std::vector<QCase> cases = {
      {13, SINGA_ONNX_UINT8, false, {2, 3, 67, 131}}, {13, SINGA_ONNX_INT8, false, {1, 5, 7, 3}},
      {13, SINGA_ONNX_UINT8, true, {2, 3, 67, 131}},  {13, SINGA_ONNX_INT8, true, {3, 17, 5, 5}},
      {21, SINGA_ONNX_UINT8, false, {2, 3, 67, 131}}, {21, SINGA_ONNX_INT8, true, {2, 19, 33, 17}},
      {10, SINGA_ONNX_UINT8, false, {37}},
  };
  for (const QCase& c : cases) {
    SCOPED_TRACE("opset " + std::to_string(c.opset) + (c.qt == SINGA_ONNX_UINT8 ? " u8" : " s8") +
                 (c.per_axis ? " per axis" : " per tensor"));
    const int64_t C = c.shape.size() > 1 ? c.shape[1] : 1;
    const int64_t nsc = c.per_axis ? C : 1;
    std::vector<float> scales(static_cast<size_t>(nsc));
    std::vector<int> zps(static_cast<size_t>(nsc));
    for (int64_t i = 0; i < nsc; ++i) {
      scales[size_t(i)] = std::ldexp(1.f, int(i % 5) - 3);  // powers of two: ties stay exact
      zps[size_t(i)] = c.qt == SINGA_ONNX_UINT8 ? int(17 * i + 100) % 256 : int(13 * i) % 40 - 20;
    }
    const singa::Shape ss = c.per_axis ? singa::Shape{nsc} : singa::Shape{};
    ModelBuilder mb(c.opset);
    mb.input("x", SINGA_ONNX_FLOAT, c.shape)
        .initializer("s", f32_tensor(ss, scales))
        .initializer("z", q_tensor(ss, c.qt, zps))
        .node("QuantizeLinear", {"x", "s", "z"}, {"q"})
        .node("DequantizeLinear", {"q", "s", "z"}, {"d"})
        .output("q", c.qt, c.shape)
        .output("d", SINGA_ONNX_FLOAT, c.shape);
    Tensor x(c.shape, SINGA_ONNX_FLOAT);
    const std::vector<float> data = tricky_data(x.numel(), 0.25f, 99);
    int64_t inner = 1;
    for (size_t d = 2; d < c.shape.size(); ++d) inner *= c.shape[d];
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t ch = c.per_axis ? (i / inner) % C : 0;
      // Ties relative to each channel's own scale.
      x.data<float>()[i] = data[size_t(i)] / 0.25f * scales[size_t(ch)];
    }
    auto rep = singa::onnx::prepare_bytes(mb.bytes(), {});
    const int lo = c.qt == SINGA_ONNX_UINT8 ? 0 : -128, hi = c.qt == SINGA_ONNX_UINT8 ? 255 : 127;
    for (int threads : {1, 2}) {
      rt.cpu()->set_num_threads(threads);
      auto out = rep->run({x});
      const Tensor& q = out[0].second;
      const Tensor& d = out[1].second;
      int64_t bad_q = 0, bad_d = 0, first = -1;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t ch = c.per_axis ? (i / inner) % C : 0;
        const float s = scales[size_t(ch)];
        const int z = zps[size_t(ch)];
        const int want = quantize_ref(x.data<float>()[i], s, z, lo, hi);
        if (q_at(q, i) != want && bad_q++ == 0) first = i;
        const float dw = (float(q_at(q, i)) - float(z)) * s;
        bad_d += d.data<float>()[i] != dw;
      }
      EXPECT_EQ(bad_q, 0) << "first at " << first << ": x " << (first >= 0 ? x.data<float>()[first] : 0.f);
      EXPECT_EQ(bad_d, 0);
    }
  }
}

// Round half to even, written out.
TEST_F(QdqConv, QuantizeTiesToEven) {
  ModelBuilder mb;
  const std::vector<float> xs = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 300.f, -300.f, 3.49f,
                                 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 300.f};
  const std::vector<int> want_s8 = {0, 2, 2, 0, -2, -2, 127, 127, -128, 3, 0, 2, 2, 0, -2, -2, 127, 127};
  mb.input("x", SINGA_ONNX_FLOAT, {int64_t(xs.size())})
      .initializer("s", f32_tensor({}, {1.f}))
      .initializer("z", q_tensor({}, SINGA_ONNX_INT8, {0}))
      .node("QuantizeLinear", {"x", "s", "z"}, {"q"})
      .output("q", SINGA_ONNX_INT8, {int64_t(xs.size())});
  auto rep = singa::onnx::prepare_bytes(mb.bytes(), {});
  const Tensor q = rep->run({f32_tensor({int64_t(xs.size())}, xs)})[0].second;
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(int(q.data<int8_t>()[i]), want_s8[i]) << "x = " << xs[i];
}

}  // namespace

namespace {

// QuantizeLinear(Relu?(DequantizeLinear(x))), QuantizeLinear(Relu?(DequantizeLinear(a) +
// DequantizeLinear(b))) and Relu?(DequantizeLinear(a) + f) with f float become
// QdqRequantize, QdqAdd and DqAdd, which must give the unfused nodes' values
// exactly (they run the same float steps).
TEST_F(QdqConv, ElementwiseStepsMatchUnfusedExactly) {
  auto& rt = singa::Runtime::instance();
  for (bool relu : {false, true})
    for (int32_t yt : {SINGA_ONNX_UINT8, SINGA_ONNX_INT8}) {
      SCOPED_TRACE(std::string(relu ? "relu " : "") + (yt == SINGA_ONNX_UINT8 ? "u8 out" : "s8 out"));
      const singa::Shape shape{2, 7, 33, 35};  // 16170 elements: vector tails, more than one task
      ModelBuilder mb;
      mb.input("a", SINGA_ONNX_UINT8, shape)
          .input("b", SINGA_ONNX_INT8, shape)
          .input("f", SINGA_ONNX_FLOAT, shape)
          .initializer("sa", f32_tensor({}, {0.037f}))
          .initializer("za", q_tensor({}, SINGA_ONNX_UINT8, {131}))
          .initializer("sb", f32_tensor({}, {0.011f}))
          .initializer("zb", q_tensor({}, SINGA_ONNX_INT8, {-9}))
          .initializer("sy", f32_tensor({}, {0.023f}))
          .initializer("zy", q_tensor({}, yt, {yt == SINGA_ONNX_UINT8 ? 17 : 3}))
          .node("DequantizeLinear", {"a", "sa", "za"}, {"da"})
          .node("DequantizeLinear", {"b", "sb", "zb"}, {"db"})
          .node("DequantizeLinear", {"a", "sa", "za"}, {"da2"})
          .node("DequantizeLinear", {"b", "sb", "zb"}, {"db3"})
          .node("Add", {"f", "db3"}, {"sf"})
          .node("Add", {"da", "db"}, {"s"});
      std::string sum = "s", one = "da2", mixed = "sf";
      if (relu) {
        mb.node("Relu", {"s"}, {"rs"}).node("Relu", {"da2"}, {"r1"}).node("Relu", {"sf"}, {"rf"});
        sum = "rs", one = "r1", mixed = "rf";
      }
      mb.node("QuantizeLinear", {sum, "sy", "zy"}, {"y_add"})
          .node("QuantizeLinear", {one, "sy", "zy"}, {"y_one"})
          .output("y_add", yt, shape)
          .output("y_one", yt, shape)
          .output(mixed, SINGA_ONNX_FLOAT, shape);
      std::mt19937 rng(3);
      std::uniform_int_distribution<int> u(0, 255);
      Tensor a(shape, SINGA_ONNX_UINT8), b(shape, SINGA_ONNX_INT8), f(shape, SINGA_ONNX_FLOAT);
      for (int64_t i = 0; i < a.numel(); ++i) {
        a.data<uint8_t>()[i] = uint8_t(u(rng));
        b.data<int8_t>()[i] = int8_t(u(rng) - 128);
        f.data<float>()[i] = float(u(rng) - 128) * 0.013f;
      }
      singa::onnx::PrepareOptions off;
      off.options["pass.cpu.qdq_elementwise"] = "0";
      auto fused = singa::onnx::prepare_bytes(mb.bytes(), {});
      auto plain = singa::onnx::prepare_bytes(mb.bytes(), off);
      for (int threads : {1, 2}) {
        rt.cpu()->set_num_threads(threads);
        std::vector<singa::onnx::NodeTiming> prof;
        singa::onnx::RunOptions ro;
        ro.profile = &prof;
        auto yf = fused->run(std::vector<Tensor>{a, b, f}, ro);
        auto yp = plain->run(std::vector<Tensor>{a, b, f});
        if (!has_op(prof, "QdqAdd")) std::cout << "note: the elementwise pass did not run\n";
        EXPECT_EQ(has_op(prof, "QdqAdd"), has_op(prof, "QdqRequantize"));
        EXPECT_EQ(has_op(prof, "QdqAdd"), has_op(prof, "DqAdd"));
        int64_t fdiff = 0;
        for (int64_t i = 0; i < yf[2].second.numel(); ++i)
          fdiff += yf[2].second.data<float>()[i] != yp[2].second.data<float>()[i];
        EXPECT_EQ(fdiff, 0);
        for (size_t k = 0; k < 2; ++k) {
          int64_t diff = 0;
          for (int64_t i = 0; i < yf[k].second.numel(); ++i) diff += q_at(yf[k].second, i) != q_at(yp[k].second, i);
          EXPECT_EQ(diff, 0) << yf[k].first;
        }
      }
    }
}

}  // namespace

namespace {

// Two QDQ convolutions with a requantizing Relu between them: the values
// between the 8-bit nodes go channels-last (pass cpu.qdq_layout), which must
// not change a byte; against the float path, rounding flips only.
TEST_F(QdqConv, ChannelsLastChainMatches) {
  auto& rt = singa::Runtime::instance();
  for (int64_t N : {1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(N));
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> uw(-127, 127);
    std::uniform_real_distribution<float> ub(-1.f, 1.f), ux(0.f, 3.f);
    std::vector<int> w1(32 * 16 * 9), w2(24 * 32);
    for (auto& v : w1) v = uw(rng);
    for (auto& v : w2) v = uw(rng);
    std::vector<float> b1(32), b2(24);
    for (auto& v : b1) v = ub(rng);
    for (auto& v : b2) v = ub(rng);
    ModelBuilder mb;
    mb.input("x", SINGA_ONNX_FLOAT, {N, 16, 19, 17})
        .initializer("s0", f32_tensor({}, {0.012f}))
        .initializer("z0", q_tensor({}, SINGA_ONNX_UINT8, {0}))
        .initializer("s1", f32_tensor({}, {0.09f}))
        .initializer("z1", q_tensor({}, SINGA_ONNX_UINT8, {120}))
        .initializer("s2", f32_tensor({}, {0.05f}))
        .initializer("z2", q_tensor({}, SINGA_ONNX_UINT8, {0}))
        .initializer("s3", f32_tensor({}, {0.2f}))
        .initializer("z3", q_tensor({}, SINGA_ONNX_UINT8, {128}))
        .initializer("w1", q_tensor({32, 16, 3, 3}, SINGA_ONNX_INT8, w1))
        .initializer("w2", q_tensor({24, 32, 1, 1}, SINGA_ONNX_INT8, w2))
        .initializer("ws1", f32_tensor({}, {0.004f}))
        .initializer("ws2", f32_tensor({}, {0.003f}))
        .initializer("b1", f32_tensor({32}, b1))
        .initializer("b2", f32_tensor({24}, b2))
        .node("QuantizeLinear", {"x", "s0", "z0"}, {"xq"})
        .node("DequantizeLinear", {"xq", "s0", "z0"}, {"xd"})
        .node("DequantizeLinear", {"w1", "ws1"}, {"w1d"})
        .node("DequantizeLinear", {"w2", "ws2"}, {"w2d"})
        .node("Conv", {"xd", "w1d", "b1"}, {"c1"}, "conv1");
    add_ints(mb.last(), "pads", {1, 1, 1, 1});
    mb.node("QuantizeLinear", {"c1", "s1", "z1"}, {"c1q"})
        .node("DequantizeLinear", {"c1q", "s1", "z1"}, {"c1d"})
        .node("Relu", {"c1d"}, {"r1"})
        .node("QuantizeLinear", {"r1", "s2", "z2"}, {"r1q"})
        .node("DequantizeLinear", {"r1q", "s2", "z2"}, {"r1d"})
        .node("Conv", {"r1d", "w2d", "b2"}, {"c2"}, "conv2")
        .node("QuantizeLinear", {"c2", "s3", "z3"}, {"c2q"})
        .node("DequantizeLinear", {"c2q", "s3", "z3"}, {"y"})
        .output("y", SINGA_ONNX_FLOAT, {N, 24, 19, 17});
    Tensor x({N, 16, 19, 17}, SINGA_ONNX_FLOAT);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = ux(rng);

    singa::onnx::PrepareOptions plain_layout, unfused;
    plain_layout.options["pass.cpu.qdq_layout"] = "0";
    unfused.options["pass.cpu.qdq_conv"] = "0";
    unfused.options["pass.cpu.qdq_elementwise"] = "0";
    ::onnx::ModelProto proto;
    ASSERT_TRUE(proto.ParseFromString(mb.bytes()));
    int channels_last = 0;
    const ::onnx::ModelProto optimized = singa::onnx::optimized_model(proto, {});
    for (const auto& kv : optimized.metadata_props())
      channels_last += kv.key().rfind("singa.layout:", 0) == 0 && kv.value() == "ai.singa.cpu.nhwc";
    auto fused = singa::onnx::prepare_bytes(mb.bytes(), {});
    auto nchw = singa::onnx::prepare_bytes(mb.bytes(), plain_layout);
    auto ref = singa::onnx::prepare_bytes(mb.bytes(), unfused);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      std::vector<singa::onnx::NodeTiming> prof;
      singa::onnx::RunOptions ro;
      ro.profile = &prof;
      const Tensor yf = fused->run({x}, ro)[0].second;
      const Tensor yn = nchw->run({x})[0].second;
      const Tensor yr = ref->run({x})[0].second;
      if (has_op(prof, "QdqConv")) {
        EXPECT_TRUE(has_op(prof, "QdqRequantize"));
        EXPECT_EQ(channels_last, 2);  // conv1's output and the requantized one
      }
      int64_t differ = 0, far = 0;
      double sum = 0;
      for (int64_t i = 0; i < yf.numel(); ++i) {
        differ += yf.data<float>()[i] != yn.data<float>()[i];
        const double d = std::abs(double(yf.data<float>()[i]) - yr.data<float>()[i]) / 0.2;  // in steps of s3
        far += d > 3.5;
        sum += d;
      }
      EXPECT_EQ(differ, 0);
      EXPECT_EQ(far, 0);
      EXPECT_LT(sum / double(yf.numel()), 0.1);
    }
  }
}

}  // namespace
