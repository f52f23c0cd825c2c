// The int8 products on AMX (plugins/ops_math/qmatmul_amx.cpp) and the
// epilogue they share with the VNNI kernel (qmatmul_vnni.cpp: zero points,
// scales, QuantizeLinear next to ties): QLinearMatMul, MatMulInteger and the
// fused QDQMatMul on shapes tall and deep enough for the AMX path (rows >= 32,
// K >= 256, N >= 128; K and N off the 4/16/64 grids, batch dims), compared
// bit for bit with the portable integer path (cpu.int8_matmul=0) and with the
// VNNI kernel (cpu.int8_amx=0), at 1 to 3 threads. Where the CPU has no AMX
// the same comparisons check the VNNI kernel alone.
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::f32_tensor;
using testing_util::q_at;
using testing_util::random_q;

namespace {

constexpr int32_t kU8 = SINGA_ONNX_UINT8, kS8 = SINGA_ONNX_INT8;

struct Case {
  const char* name;
  singa::Shape a;  // [..., M, K]
  int64_t N;
  int32_t at, bt;
  bool col_params;  // b_scale and b_zero_point per column
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"32x256 u8 x s8, N 128", {32, 256}, 128, kU8, kS8, false},
      {"33x300 s8 x s8 per column, N 200", {33, 300}, 200, kS8, kS8, true},
      {"batch 2x3x40x512 u8 x u8, N 136", {2, 3, 40, 512}, 136, kU8, kU8, false},
      {"128x1030 u8 x s8 per column, N 257", {128, 1030}, 257, kU8, kS8, true},
      {"1x97x768 s8 x u8, N 300", {1, 97, 768}, 300, kS8, kU8, true},
  };
  return all;
}

// Options: the defaults (AMX where the CPU has it), VNNI only, portable.
std::vector<singa::onnx::PrepareOptions> variants(int threads) {
  std::vector<singa::onnx::PrepareOptions> v(3);
  for (auto& o : v) o.threads = threads;
  v[1].options["cpu.int8_amx"] = "0";
  v[2].options["cpu.int8_matmul"] = "0";
  return v;
}

// Runs `model` under each variant and thread count; every result must equal
// the portable path's bytes.
void expect_same_bytes(const std::string& model, const std::vector<Tensor>& inputs) {
  for (int threads : {1, 2, 3}) {
    std::vector<Tensor> got;
    for (const auto& o : variants(threads)) got.push_back(singa::onnx::prepare_bytes(model, o)->run(inputs)[0].second);
    const Tensor& want = got.back();
    const size_t bytes = want.nbytes();
    for (size_t v = 0; v + 1 < got.size(); ++v) {
      ASSERT_EQ(got[v].shape(), want.shape());
      ASSERT_EQ(got[v].dtype(), want.dtype());
      int64_t first = -1;
      const auto* g = static_cast<const unsigned char*>(got[v].raw_data());
      const auto* w = static_cast<const unsigned char*>(want.raw_data());
      for (size_t i = 0; i < bytes && first < 0; ++i)
        if (g[i] != w[i]) first = int64_t(i);
      EXPECT_EQ(first, -1) << (v == 0 ? "default (AMX)" : "VNNI") << " differs from the portable path at byte "
                           << first << ", threads " << threads;
    }
  }
}

class QdqAmx : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

// MatMulInteger: the int32 sums with per-row and per-column zero points.
TEST_F(QdqAmx, MatMulIntegerSameOnEveryPath) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const int64_t M = c.a[c.a.size() - 2], K = c.a.back();
    ModelBuilder m;
    m.input("a", c.at, c.a).initializer("b", random_q({K, c.N}, c.bt, 3));
    m.initializer("az", random_q(c.col_params ? singa::Shape{M} : singa::Shape{}, c.at, 4, -40, 160));
    m.initializer("bz", random_q(c.col_params ? singa::Shape{c.N} : singa::Shape{}, c.bt, 5, -30, 150));
    singa::Shape ys = c.a;
    ys.back() = c.N;
    m.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"}).output("y", SINGA_ONNX_INT32, ys);
    expect_same_bytes(m.bytes(), {random_q(c.a, c.at, 6)});
  }
}

// The share of u8 outputs strictly inside (0, 255): a comparison of
// saturated outputs says little.
double unsaturated(const Tensor& y) {
  int64_t inside = 0;
  for (int64_t i = 0; i < y.numel(); ++i) inside += y.data<uint8_t>()[i] != 0 && y.data<uint8_t>()[i] != 255;
  return double(inside) / double(std::max<int64_t>(1, y.numel()));
}

// The median |sum_k (a - za)(b - zb[n])| over the first rows of A (up to
// 64) and every column: what y_scale is sized from.
double median_abs_sum(const Tensor& a, int za, const Tensor& b, const Tensor& bz, int64_t K, int64_t N) {
  std::vector<double> s;
  const int64_t rows = std::min<int64_t>(64, a.numel() / K);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t t = 0;
      const int zb = q_at(bz, bz.numel() == 1 ? 0 : n);
      for (int64_t k = 0; k < K; ++k) t += int64_t(q_at(a, m * K + k) - za) * (q_at(b, k * N + n) - zb);
      s.push_back(std::fabs(double(t)));
    }
  std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
  return s[s.size() / 2];
}

// QLinearMatMul: u8 output (the int32 sums from the kernels, requantized
// after). With `ties`, A stays within 3 of its zero point and y_scale is an
// even multiple of a_scale b_scale, so that some outputs land next to a
// half-integer before rounding.
TEST_F(QdqAmx, QLinearMatMulSameOnEveryPath) {
  for (bool ties : {false, true})
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + (ties ? ", ties" : ""));
      const int64_t K = c.a.back();
      const int za = c.at == kU8 ? 100 : -5;
      const Tensor a = ties ? random_q(c.a, c.at, 11, za - 3, za + 3) : random_q(c.a, c.at, 11, za - 60, za + 60);
      const Tensor b = random_q({K, c.N}, c.bt, 12);
      std::vector<float> sb(size_t(c.col_params ? c.N : 1));
      for (size_t i = 0; i < sb.size(); ++i) sb[i] = ties ? 0.01f : 0.002f + 0.0001f * float(i % 7);
      const float sa = 0.05f;
      const singa::Shape zs = c.col_params ? singa::Shape{c.N} : singa::Shape{};
      const Tensor bz = random_q(zs, c.bt, 14, -30, 150);
      // A typical sum 60 steps from the zero point; with ties, y_scale an
      // even multiple 2c of a_scale b_scale (one output in 2c near a tie).
      const double typical = median_abs_sum(a, za, b, bz, K, c.N);
      const float sy =
          ties ? float(2 * std::max(1, int(typical / 120))) * (sa * sb[0]) : float(sa * sb[0] * typical / 60);
      Tensor az({}, c.at), yz({}, kU8);
      if (c.at == kU8)
        az.data<uint8_t>()[0] = uint8_t(za);
      else
        az.data<int8_t>()[0] = int8_t(za);
      yz.data<uint8_t>()[0] = 120;
      ModelBuilder m;
      m.input("a", c.at, c.a).initializer("b", b);
      m.initializer("sa", f32_tensor({}, {sa})).initializer("az", az);
      m.initializer("sb", f32_tensor(zs, sb)).initializer("bz", random_q(zs, c.bt, 14, -30, 150));
      m.initializer("sy", f32_tensor({}, {sy})).initializer("yz", yz);
      singa::Shape ys = c.a;
      ys.back() = c.N;
      m.node("QLinearMatMul", {"a", "sa", "az", "b", "sb", "bz", "sy", "yz"}, {"y"}).output("y", kU8, ys);
      singa::onnx::PrepareOptions portable;
      portable.options["cpu.int8_matmul"] = "0";
      EXPECT_GT(unsaturated(singa::onnx::prepare_bytes(m.bytes(), portable)->run({a})[0].second), 0.5);
      expect_same_bytes(m.bytes(), {a});
    }
}

// The QDQ form a quantizer writes, fused into QDQMatMul with the output
// QuantizeLinear/DequantizeLinear and the bias Add: the epilogue quantizes.
// With `ties`, x stays within 3 steps of its zero point and y_scale is an
// even multiple 2c of a_scale b_scale, so that some products land next to
// a half-integer before rounding (where an epilogue that multiplied by
// 1/y_scale instead of dividing would round some of them apart).
TEST_F(QdqAmx, QdqMatMulQuantizedOutputSameOnEveryPath) {
  for (bool ties : {false, true})
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + (ties ? ", ties" : ""));
      const int64_t K = c.a.back(), N = c.N;
      const singa::Shape zs = c.col_params ? singa::Shape{N} : singa::Shape{};
      std::vector<float> sb(size_t(c.col_params ? N : 1)), bias(static_cast<size_t>(N));
      for (size_t i = 0; i < sb.size(); ++i) sb[i] = ties ? 0.01f : 0.01f * (1.f + 0.37f * float(i % 5));
      for (int64_t n = 0; n < N; ++n) bias[size_t(n)] = 0.1f * float(n % 9) - 0.4f;
      const float sa = 0.04f;
      const Tensor x8 = ties ? random_q(c.a, kU8, 21, 125, 131) : random_q(c.a, kU8, 21, 68, 188);
      Tensor x(c.a, SINGA_ONNX_FLOAT);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(q_at(x8, i) - 128) * sa + 0.013f;
      const Tensor bq = random_q({K, N}, c.bt, 22), bz = random_q(zs, c.bt, 23, -20, 140);
      const double typical = median_abs_sum(x8, 128, bq, bz, K, N);
      const float sy =
          ties ? float(2 * std::max(1, int(typical / 120))) * (sa * sb[0]) : float(sa * sb[0] * typical / 60);
      Tensor az({}, kU8), yz({}, kU8);
      az.data<uint8_t>()[0] = 128;
      yz.data<uint8_t>()[0] = 131;
      ModelBuilder m(13);
      m.input("x", SINGA_ONNX_FLOAT, c.a).initializer("sa", f32_tensor({}, {sa})).initializer("az", az);
      m.node("QuantizeLinear", {"x", "sa", "az"}, {"x8"}).node("DequantizeLinear", {"x8", "sa", "az"}, {"xd"});
      m.initializer("bq", bq).initializer("sb", f32_tensor(zs, sb)).initializer("bz", bz);
      m.node("DequantizeLinear", {"bq", "sb", "bz"}, {"bd"});
      if (c.col_params) {
        auto* at = m.last()->add_attribute();
        at->set_name("axis");
        at->set_type(::onnx::AttributeProto::INT);
        at->set_i(1);
      }
      m.node("MatMul", {"xd", "bd"}, {"p"});
      m.initializer("sy", f32_tensor({}, {sy})).initializer("yz", yz);
      m.node("QuantizeLinear", {"p", "sy", "yz"}, {"pq"}).node("DequantizeLinear", {"pq", "sy", "yz"}, {"pd"});
      m.initializer("bias", f32_tensor({N}, bias)).node("Add", {"pd", "bias"}, {"y"});
      singa::Shape ys = c.a;
      ys.back() = N;
      m.output("y", SINGA_ONNX_FLOAT, ys);
      auto fused = singa::onnx::prepare_bytes(m.bytes());
      EXPECT_EQ(testing_util::count_op(*fused, "QDQMatMul"), 1);
      // Most outputs inside the u8 range: (y - bias) / sy + 131 in (0, 255).
      const Tensor y = fused->run({x})[0].second;
      int64_t inside = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double q = (double(y.data<float>()[i]) - bias[size_t(i % N)]) / sy + 131;
        inside += q > 0.5 && q < 254.5;
      }
      EXPECT_GT(inside, y.numel() / 2) << "the outputs saturate: the comparison says little";
      expect_same_bytes(m.bytes(), {x});
    }
}

// QuantizeLinear's vector loop (plugins/ops_nn/qdq_convert.cpp): values at, and one or two float steps
// either side of, (k + 0.5) * scale for every k in range, random values,
// NaN, infinities; against nearbyint(x / scale) computed here.
TEST_F(QdqAmx, QuantizeLinearRoundsAsTheDivision) {
  for (float scale : {0.001f, 0.1f, 0.0007f, 3.3f, 0.0123f, 1e-30f, 3e37f})
    for (int32_t dt : {kU8, kS8}) {
      SCOPED_TRACE("scale " + std::to_string(scale) + (dt == kU8 ? " u8" : " s8"));
      const int zp = dt == kU8 ? 117 : -9;
      std::vector<float> x;
      for (int k = -200; k <= 200; ++k) {
        const float mid = (float(k) + 0.5f) * scale;
        float lo = mid, hi = mid;
        x.push_back(mid);
        for (int step = 0; step < 2; ++step) {
          lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
          x.push_back(lo), x.push_back(hi);
        }
      }
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> u(-300.f, 300.f);
      for (int i = 0; i < 1000; ++i) x.push_back(u(rng) * scale);
      x.push_back(NAN), x.push_back(INFINITY), x.push_back(-INFINITY), x.push_back(0.f), x.push_back(-0.f);
      const int64_t n = int64_t(x.size());
      Tensor z({}, dt);
      if (dt == kU8)
        z.data<uint8_t>()[0] = uint8_t(zp);
      else
        z.data<int8_t>()[0] = int8_t(zp);
      ModelBuilder m(13);
      m.input("x", SINGA_ONNX_FLOAT, {n}).initializer("s", f32_tensor({}, {scale})).initializer("z", z);
      m.node("QuantizeLinear", {"x", "s", "z"}, {"y"}).output("y", dt, {n});
      const Tensor y = singa::onnx::prepare_bytes(m.bytes())->run({f32_tensor({n}, x)})[0].second;
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < n; ++i) {
        float want = std::nearbyint(x[size_t(i)] / scale) + float(zp);
        if (want != want) want = float(zp);
        want = std::min(std::max(want, dt == kU8 ? 0.f : -128.f), dt == kU8 ? 255.f : 127.f);
        if (float(q_at(y, i)) != want && wrong++ == 0) first = i;
      }
      EXPECT_EQ(wrong, 0) << "first at x = " << (first >= 0 ? x[size_t(first)] : 0.f);
    }
}

// The attention score step, QuantizeLinear(Softmax(DequantizeLinear(s) [Div|Mul c] [+ mask])),
// fused as QdqSoftmax (passes/fuse_qdq_softmax.cpp): the same 8-bit
// probabilities as the separate nodes (pass.cpu.qdq_softmax=0), byte for
// byte, over ranks 3 and 4, u8 and s8, masks of several broadcasts (either
// Add operand), rows off the 16-lane grid; and within 1 of an independent
// double-precision softmax.
struct SoftmaxCase {
  const char* name;
  singa::Shape x;
  int32_t xt, yt;
  const char* scale_op;   // "Div", "Mul" or ""
  singa::Shape mask;      // empty: no mask
  bool mask_first;        // Add(mask, scores)
};

TEST_F(QdqAmx, QdqSoftmaxSameAsSeparateNodes) {
  const std::vector<SoftmaxCase> cases = {
      {"BERT 1x4x128x128 u8 Div, mask 1x1x1x128", {1, 4, 128, 128}, kU8, kU8, "Div", {1, 1, 1, 128}, false},
      {"2x3x7x33 s8 Mul, mask 2x1x7x33 first, s8 out", {2, 3, 7, 33}, kS8, kS8, "Mul", {2, 1, 7, 33}, true},
      {"1x12x5x5 u8, no scale or mask", {1, 12, 5, 5}, kU8, kU8, "", {}, false},
      {"3x50x19 s8 Div, mask 19", {3, 50, 19}, kS8, kU8, "Div", {19}, false},
      {"1x2x17x200 u8 Mul, mask 1x2x17x1", {1, 2, 17, 200}, kU8, kU8, "Mul", {1, 2, 17, 1}, false},
  };
  for (const SoftmaxCase& c : cases) {
    SCOPED_TRACE(c.name);
    const float sx = 0.07f, sy = 1.f / 255.f, cst = std::string(c.scale_op) == "Mul" ? 0.1767767f : 5.656854f;
    const int xz = c.xt == kU8 ? 120 : -3, yz = c.yt == kU8 ? 0 : -128;
    Tensor xz_t({}, c.xt), yz_t({}, c.yt);
    if (c.xt == kU8) xz_t.data<uint8_t>()[0] = uint8_t(xz); else xz_t.data<int8_t>()[0] = int8_t(xz);
    if (c.yt == kU8) yz_t.data<uint8_t>()[0] = uint8_t(yz); else yz_t.data<int8_t>()[0] = int8_t(yz);
    ModelBuilder m(13);
    m.input("x", c.xt, c.x).initializer("sx", f32_tensor({}, {sx})).initializer("xz", xz_t);
    m.node("DequantizeLinear", {"x", "sx", "xz"}, {"xd"});
    std::string cur = "xd";
    if (*c.scale_op) {
      m.initializer("c", f32_tensor({}, {cst})).node(c.scale_op, {cur, "c"}, {"xs"});
      cur = "xs";
    }
    Tensor mask;
    if (!c.mask.empty()) {
      mask = Tensor(c.mask, SINGA_ONNX_FLOAT);
      std::mt19937 rng(5);
      for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = rng() % 4 == 0 ? -10000.f : float(rng() % 7) * 0.1f;
      m.input("mask", SINGA_ONNX_FLOAT, c.mask);
      m.node("Add", c.mask_first ? std::vector<std::string>{"mask", cur} : std::vector<std::string>{cur, "mask"}, {"xm"});
      cur = "xm";
    }
    m.node("Softmax", {cur}, {"p"});
    m.initializer("sy", f32_tensor({}, {sy})).initializer("yz", yz_t);
    m.node("QuantizeLinear", {"p", "sy", "yz"}, {"y"}).output("y", c.yt, c.x);
    const Tensor x = random_q(c.x, c.xt, 31);
    std::vector<Tensor> in{x};
    if (!c.mask.empty()) in.push_back(mask);
    for (int threads : {1, 2}) {
      auto fused = testing_util::prepare_at(m, threads);
      auto plain = testing_util::prepare_at(m, threads, {{"pass.cpu.qdq_softmax", "0"}});
      EXPECT_EQ(testing_util::count_op(*fused, "QdqSoftmax"), 1);
      EXPECT_EQ(testing_util::count_op(*plain, "QdqSoftmax"), 0);
      const Tensor yf = fused->run(in)[0].second, yp = plain->run(in)[0].second;
      ASSERT_EQ(yf.shape(), yp.shape());
      ASSERT_EQ(yf.nbytes(), yp.nbytes());
      EXPECT_EQ(std::memcmp(yf.raw_data(), yp.raw_data(), yf.nbytes()), 0) << "threads " << threads;
      // Independent reference: broadcast by hand, softmax in double.
      const int64_t n = c.x.back(), rows = x.numel() / n, rank = int64_t(c.x.size());
      int64_t off_by_more = 0, nonzero = 0;
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          double t = double(q_at(x, r * n + i) - xz) * sx;
          if (std::string(c.scale_op) == "Div") t /= cst;
          if (std::string(c.scale_op) == "Mul") t *= cst;
          if (!c.mask.empty()) {
            // The multi-index of element (r, i) in x, mapped into the mask.
            int64_t flat = r * n + i, mi = 0, mstride = 1;
            std::vector<int64_t> idx(static_cast<size_t>(rank));
            for (int64_t k = rank - 1; k >= 0; --k) idx[size_t(k)] = flat % c.x[size_t(k)], flat /= c.x[size_t(k)];
            for (int64_t k = 1; k <= int64_t(c.mask.size()); ++k) {
              const int64_t md = c.mask[c.mask.size() - size_t(k)];
              if (md != 1) mi += idx[size_t(rank - k)] * mstride;
              mstride *= md;
            }
            t += mask.data<float>()[mi];
          }
          v[size_t(i)] = t;
        }
        const double mx = *std::max_element(v.begin(), v.end());
        double sum = 0;
        for (double& t : v) sum += (t = std::exp(t - mx));
        for (int64_t i = 0; i < n; ++i) {
          const double want = std::min(std::max(std::nearbyint(v[size_t(i)] / sum / sy) + yz, c.yt == kU8 ? 0. : -128.),
                                       c.yt == kU8 ? 255. : 127.);
          const int got = q_at(yf, r * n + i);
          off_by_more += std::abs(got - want) > 1;
          nonzero += got != yz;
        }
      }
      EXPECT_EQ(off_by_more, 0);
      EXPECT_GT(nonzero, rows) << "the probabilities all quantize to zero: the comparison says little";
    }
  }
}

// Not fused: a Softmax over another axis, and scores the graph reads elsewhere too.
TEST_F(QdqAmx, QdqSoftmaxLeavesOtherGraphs) {
  for (int variant : {0, 1}) {
    Tensor xz({}, kU8), yz({}, kU8);
    ModelBuilder m(13);
    m.input("x", kU8, {2, 3, 8}).initializer("sx", f32_tensor({}, {0.05f})).initializer("xz", xz);
    m.node("DequantizeLinear", {"x", "sx", "xz"}, {"xd"}).node("Softmax", {"xd"}, {"p"});
    if (variant == 0) testing_util::add_int(m.last(), "axis", 1);
    m.initializer("sy", f32_tensor({}, {1.f / 255.f})).initializer("yz", yz);
    m.node("QuantizeLinear", {"p", "sy", "yz"}, {"y"}).output("y", kU8, {2, 3, 8});
    if (variant == 1) m.output("xd", SINGA_ONNX_FLOAT, {2, 3, 8});
    auto rep = testing_util::prepare_at(m, 1);
    EXPECT_EQ(testing_util::count_op(*rep, "QdqSoftmax"), 0) << "variant " << variant;
    EXPECT_EQ(testing_util::count_op(*rep, "Softmax"), 1) << "variant " << variant;
  }
}

}  // namespace
