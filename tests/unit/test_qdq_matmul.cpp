// The int8 matrix products (plugins/ops_math/qmatmul_vnni.cpp): MatMulInteger
// against a plain int64 loop written here and QLinearMatMul against the
// portable integer path (cpu.int8_matmul=0), bit for bit; and the
// cpu.qdq_matmul fusion (QDQMatMul) against the same model with the pass off
// and against a double-precision reference. Shapes are odd on purpose (K and
// N not multiples of 4, 16 or 64; M of 1, 7 and 128; batch dims), zero
// points nonzero, per tensor and per column, u8 and s8 on both sides, at 1 to
// 3 threads (each count splits the rows and panels differently).
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::count_op;
using testing_util::f32_tensor;
using testing_util::prepare_at;
using testing_util::q_at;
using testing_util::random_q;

namespace {

constexpr int32_t kU8 = SINGA_ONNX_UINT8, kS8 = SINGA_ONNX_INT8;

struct Case {
  const char* name;
  singa::Shape a;  // [..., M, K]
  int64_t N;
  int32_t at, bt;
  bool row_zp, col_zp;  // a_zero_point per row of A, b_zero_point per column
  bool b_const = true;  // B an initializer (packed at create) or an input
  int64_t b_batch = 0;  // B [b_batch, K, N] when > 0
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"1x5 u8 x s8", {1, 5}, 3, kU8, kS8, false, false},
      {"7x67 u8 x u8 per-column", {7, 67}, 77, kU8, kU8, false, true},
      {"128x300 s8 x s8", {128, 300}, 129, kS8, kS8, false, false},
      {"128x64 u8 x s8 per-row and per-column", {128, 64}, 17, kU8, kS8, true, true},
      {"batch 2x3, 7x33 s8 x u8", {2, 3, 7, 33}, 65, kS8, kU8, false, true},
      {"B an input, 7x130", {7, 130}, 66, kU8, kS8, false, false, false},
      {"batched B, 2x13x21", {2, 13, 21}, 19, kU8, kU8, true, false, false, 2},
      {"1x1024 wide", {1, 1024}, 200, kU8, kS8, false, true},
  };
  return all;
}

struct Data {
  Tensor a, b, az, bz;
  int64_t M, K, batch;
  singa::Shape y;
};

Data make_data(const Case& c, unsigned seed) {
  Data d;
  d.M = c.a[c.a.size() - 2], d.K = c.a.back();
  d.batch = 1;
  for (size_t i = 0; i + 2 < c.a.size(); ++i) d.batch *= c.a[i];
  d.a = random_q(c.a, c.at, seed);
  d.b = random_q(c.b_batch ? singa::Shape{c.b_batch, d.K, c.N} : singa::Shape{d.K, c.N}, c.bt, seed + 1);
  d.az = random_q(c.row_zp ? singa::Shape{d.M} : singa::Shape{}, c.at, seed + 2, -40, 160);
  d.bz = random_q(c.col_zp ? singa::Shape{c.N} : singa::Shape{}, c.bt, seed + 3, -30, 150);
  d.y = c.a;
  d.y.back() = c.N;
  return d;
}

// y[b, m, n] = sum_k (a - az[m]) (b - bz[n]) in int64, then as int32 (wrapping).
std::vector<int32_t> reference(const Case& c, const Data& d) {
  std::vector<int32_t> y(size_t(d.batch * d.M * c.N));
  for (int64_t p = 0; p < d.batch; ++p)
    for (int64_t m = 0; m < d.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        int64_t s = 0;
        const int64_t za = q_at(d.az, d.az.numel() == 1 ? 0 : m), zb = q_at(d.bz, d.bz.numel() == 1 ? 0 : n);
        const int64_t boff = c.b_batch ? p * d.K * c.N : 0;
        for (int64_t k = 0; k < d.K; ++k)
          s += (q_at(d.a, (p * d.M + m) * d.K + k) - za) * (q_at(d.b, boff + k * c.N + n) - zb);
        y[size_t((p * d.M + m) * c.N + n)] = int32_t(uint32_t(uint64_t(s)));
      }
  return y;
}

class QdqMatMul : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

TEST_F(QdqMatMul, MatMulIntegerMatchesReference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Data d = make_data(c, 5);
    ModelBuilder m;
    m.input("a", c.at, c.a);
    std::vector<Tensor> inputs{d.a};
    if (c.b_const) {
      m.initializer("b", d.b);
    } else {
      m.input("b", c.bt, d.b.shape());
      inputs.push_back(d.b);
    }
    m.initializer("az", d.az).initializer("bz", d.bz).node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"});
    m.output("y", SINGA_ONNX_INT32, d.y);
    const std::vector<int32_t> want = reference(c, d);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      auto got = prepare_at(m, threads)->run(inputs);
      const Tensor& y = got[0].second;
      ASSERT_EQ(y.shape(), d.y);
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < y.numel(); ++i)
        if (y.data<int32_t>()[i] != want[size_t(i)] && wrong++ == 0) first = i;
      EXPECT_EQ(wrong, 0) << "first at " << first << ": got " << (first >= 0 ? y.data<int32_t>()[first] : 0)
                          << " want " << (first >= 0 ? want[size_t(first)] : 0);
    }
  }
}

// Sums past 2^24 (where a float accumulator would round) and past 2^31
// (where int32 wraps, as the reference does).
TEST_F(QdqMatMul, MatMulIntegerLargeSumsExact) {
  const Case c{"large", {3, 40000}, 5, kU8, kS8, false, false};
  Data d = make_data(c, 9);
  for (int64_t i = 0; i < d.a.numel(); ++i) d.a.data<uint8_t>()[i] = 255;
  for (int64_t i = 0; i < d.b.numel(); ++i) d.b.data<int8_t>()[i] = -128;
  d.az.data<uint8_t>()[0] = 0;
  d.bz.data<int8_t>()[0] = 127;  // (255)(-255) * 40000 = -2.6e9: wraps
  ModelBuilder m;
  m.input("a", c.at, c.a).initializer("b", d.b).initializer("az", d.az).initializer("bz", d.bz);
  m.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"}).output("y", SINGA_ONNX_INT32, d.y);
  const std::vector<int32_t> want = reference(c, d);
  auto got = singa::onnx::prepare_bytes(m.bytes())->run(std::vector<Tensor>{d.a});
  for (int64_t i = 0; i < got[0].second.numel(); ++i) ASSERT_EQ(got[0].second.data<int32_t>()[i], want[size_t(i)]);
}

TEST_F(QdqMatMul, QLinearMatMulMatchesPortablePath) {
  for (size_t k : {0u, 1u, 2u, 4u, 5u}) {
    const Case& c = cases()[k];
    if (c.row_zp) continue;
    SCOPED_TRACE(c.name);
    const Data d = make_data(c, 17);
    std::vector<float> sb(size_t(c.col_zp ? c.N : 1));
    for (size_t i = 0; i < sb.size(); ++i) sb[i] = 0.002f + 0.0001f * float(i % 7);
    ModelBuilder m;
    m.input("a", c.at, c.a);
    std::vector<Tensor> inputs{d.a};
    if (c.b_const) {
      m.initializer("b", d.b);
    } else {
      m.input("b", c.bt, d.b.shape());
      inputs.push_back(d.b);
    }
    Tensor yz({}, kU8);
    yz.data<uint8_t>()[0] = 120;
    // y_scale such that the largest sum lands about 100 steps from the zero point.
    int64_t top = 1;
    for (int32_t v : reference(c, d)) top = std::max<int64_t>(top, std::abs(int64_t(v)));
    const float sy = 0.05f * sb[0] * float(top) / 100.f;
    m.initializer("sa", f32_tensor({}, {0.05f})).initializer("az", d.az).initializer("sb", f32_tensor(d.bz.shape(), sb));
    m.initializer("bz", d.bz).initializer("sy", f32_tensor({}, {sy})).initializer("yz", yz);
    m.node("QLinearMatMul", {"a", "sa", "az", "b", "sb", "bz", "sy", "yz"}, {"y"}).output("y", kU8, d.y);
    singa::onnx::PrepareOptions slow;
    slow.options["cpu.int8_matmul"] = "0";
    const Tensor want = singa::onnx::prepare_bytes(m.bytes(), slow)->run(inputs)[0].second;
    int64_t spread = 0;
    for (int64_t i = 0; i < want.numel(); ++i) spread += want.data<uint8_t>()[i] != 0 && want.data<uint8_t>()[i] != 255;
    EXPECT_GT(spread, want.numel() / 4) << "the outputs saturate: the comparison says little";
    for (int threads : {1, 2, 3}) {
      const Tensor got = prepare_at(m, threads)->run(inputs)[0].second;
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_EQ(got.data<uint8_t>()[i], want.data<uint8_t>()[i]) << "at " << i << ", threads " << threads;
    }
  }
}

// QDQ MatMul: float x -> QuantizeLinear -> DequantizeLinear -> MatMul with
// DequantizeLinear(8-bit weights) [-> Add bias], or a Gemm.
struct QdqCase {
  const char* name;
  singa::Shape x;  // [..., M, K]
  int64_t N;
  int32_t at, bt;
  bool per_column, bias, gemm = false, trans_b = false;
};

// Runs the QDQ model with the pass on and off and against double math on
// the quantized values; returns the fused model's QDQMatMul count. With
// `quantize_out` the product goes through QuantizeLinear to u8 (then the
// results may differ by one step where the float sums fall near a tie).
int check_qdq(const QdqCase& c, int threads, bool x_is_quantized = false, bool quantize_out = false) {
  const int64_t K = c.x.back(), N = c.N;
  singa::Shape ys = c.x;
  ys.back() = N;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < c.x.size(); ++i) rows *= c.x[i];
  const Tensor bq = random_q(c.trans_b ? singa::Shape{N, K} : singa::Shape{K, N}, c.bt, 31);
  std::vector<float> sb(size_t(c.per_column ? N : 1)), bias(static_cast<size_t>(N));
  for (size_t i = 0; i < sb.size(); ++i) sb[i] = 0.01f * (1.f + 0.37f * float(i % 5));
  for (int64_t n = 0; n < N; ++n) bias[size_t(n)] = 0.1f * float(n % 9) - 0.4f;
  const Tensor bz = random_q(c.per_column ? singa::Shape{N} : singa::Shape{}, c.bt, 33, -20, 140);
  Tensor az({}, c.at), x8 = random_q(c.x, c.at, 37);
  const int64_t za = c.at == kU8 ? 131 : -7;
  if (c.at == kU8)
    az.data<uint8_t>()[0] = uint8_t(za);
  else
    az.data<int8_t>()[0] = int8_t(za);
  const float sa = 0.04f;
  // The float input whose quantization is x8 exactly (mid-step values).
  Tensor x(c.x, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(q_at(x8, i) - za) * sa;

  // The reference in double, and the tolerance of each element.
  std::vector<double> want(size_t(rows * N)), tol(size_t(rows * N));
  double top = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t bi = c.trans_b ? n * K + k : k * N + n;
        const double t = double(q_at(x8, r * K + k) - za) * double(q_at(bq, bi) - q_at(bz, c.per_column ? n : 0));
        s += t;
        mag += std::fabs(t);
      }
      const double scale = double(sa) * double(sb[c.per_column ? size_t(n) : 0]);
      want[size_t(r * N + n)] = s * scale + (c.bias ? bias[size_t(n)] : 0.0);
      tol[size_t(r * N + n)] = 1e-6 * std::sqrt(double(K)) * mag * scale + 1e-6;
      top = std::max(top, std::fabs(want[size_t(r * N + n)]));
    }
  const float sy = float(top / 100.0);  // the outputs spread over about +-100 steps
  const int yz = 128;

  ModelBuilder m(13);
  if (x_is_quantized) {
    m.input("x8", c.at, c.x);
  } else {
    m.input("x", SINGA_ONNX_FLOAT, c.x).node("QuantizeLinear", {"x", "sa", "az"}, {"x8"});
  }
  m.initializer("sa", f32_tensor({}, {sa})).initializer("az", az);
  m.node("DequantizeLinear", {"x8", "sa", "az"}, {"xd"});
  m.initializer("bq", bq).initializer("sb", f32_tensor(bz.shape(), sb)).initializer("bz", bz);
  m.node("DequantizeLinear", {"bq", "sb", "bz"}, {"bd"});
  if (c.per_column) {
    auto* a = m.last()->add_attribute();
    a->set_name("axis");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(c.trans_b ? 0 : 1);
  }
  m.initializer("bias", f32_tensor({N}, bias));
  if (c.gemm) {
    m.node("Gemm", c.bias ? std::vector<std::string>{"xd", "bd", "bias"} : std::vector<std::string>{"xd", "bd"}, {"y"});
    auto* a = m.last()->add_attribute();
    a->set_name("transB");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(c.trans_b ? 1 : 0);
  } else if (c.bias) {
    m.node("MatMul", {"xd", "bd"}, {"p"}).node("Add", {"p", "bias"}, {"y"});
  } else {
    m.node("MatMul", {"xd", "bd"}, {"y"});
  }
  if (quantize_out) {
    Tensor z({}, kU8);
    z.data<uint8_t>()[0] = uint8_t(yz);
    m.initializer("sy", f32_tensor({}, {sy})).initializer("yz", z).node("QuantizeLinear", {"y", "sy", "yz"}, {"yq"});
    m.output("yq", kU8, ys);
  } else {
    m.output("y", SINGA_ONNX_FLOAT, ys);
  }

  singa::onnx::PrepareOptions on, off;
  on.threads = off.threads = threads;
  off.options["pass.cpu.qdq_matmul"] = "0";
  auto fused = singa::onnx::prepare_bytes(m.bytes(), on), plain = singa::onnx::prepare_bytes(m.bytes(), off);
  EXPECT_EQ(count_op(*plain, "QDQMatMul"), 0);
  const std::vector<Tensor> in{x_is_quantized ? x8 : x};
  const Tensor got = fused->run(in)[0].second, base = plain->run(in)[0].second;
  EXPECT_EQ(got.shape(), ys);
  EXPECT_EQ(base.shape(), ys);
  if (got.shape() != ys || base.shape() != ys) return -1;
  if (quantize_out) {
    int64_t off_by_one = 0, worse = 0;
    for (int64_t i = 0; i < rows * N; ++i) {
      const double q = std::min(255.0, std::max(0.0, std::nearbyint(want[size_t(i)] / sy) + yz));
      const int d = std::abs(int(got.data<uint8_t>()[i]) - int(base.data<uint8_t>()[i]));
      off_by_one += d == 1;
      worse += d > 1 || std::fabs(got.data<uint8_t>()[i] - q) > 1;
    }
    EXPECT_EQ(worse, 0);
    EXPECT_LE(off_by_one, std::max<int64_t>(2, rows * N / 100)) << "of " << rows * N;
    return count_op(*fused, "QDQMatMul");
  }
  double worst_fused = 0, worst_plain = 0;
  for (int64_t i = 0; i < rows * N; ++i) {
    worst_fused = std::max(worst_fused, std::fabs(got.data<float>()[i] - want[size_t(i)]) / tol[size_t(i)]);
    worst_plain = std::max(worst_plain, std::fabs(base.data<float>()[i] - want[size_t(i)]) / tol[size_t(i)]);
  }
  EXPECT_LE(worst_fused, 1.0) << "fused vs double reference, in units of the tolerance";
  EXPECT_LE(worst_plain, 1.0) << "unfused vs double reference, in units of the tolerance";
  return count_op(*fused, "QDQMatMul");
}

TEST_F(QdqMatMul, FusedMatchesUnfusedAndReference) {
  const std::vector<QdqCase> all = {
      {"1x37 u8 x s8 per tensor", {1, 37}, 45, kU8, kS8, false, false},
      {"7x67 u8 x s8 per column + bias", {7, 67}, 77, kU8, kS8, true, true},
      {"128x130 s8 x u8 per tensor + bias", {128, 130}, 129, kS8, kU8, false, true},
      {"batch 2x3x7x33 u8 x u8 per column", {2, 3, 7, 33}, 19, kU8, kU8, true, false},
      {"1x128x96 s8 x s8 per column + bias", {1, 128, 96}, 70, kS8, kS8, true, true},
      {"Gemm 7x50 + bias", {7, 50}, 33, kU8, kS8, false, true, true},
      {"Gemm transB 9x40 per column + bias", {9, 40}, 21, kU8, kS8, true, true, true, true},
  };
  for (const QdqCase& c : all)
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(c.name) + ", threads " + std::to_string(threads));
      EXPECT_EQ(check_qdq(c, threads), 1);
    }
  SCOPED_TRACE("an 8-bit graph input");
  EXPECT_EQ(check_qdq(all[1], 2, true), 1);
}

// The QuantizeLinear after the product moves into the node (u8 output).
TEST_F(QdqMatMul, OutputQuantizeLinearFused) {
  const std::vector<QdqCase> all = {
      {"7x67 u8 x s8 per column + bias", {7, 67}, 77, kU8, kS8, true, true},
      {"1x128x96 s8 x u8 per tensor", {1, 128, 96}, 70, kS8, kU8, false, false},
      {"Gemm 9x40 + bias", {9, 40}, 21, kU8, kS8, false, true, true},
  };
  for (const QdqCase& c : all)
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string(c.name) + ", threads " + std::to_string(threads));
      EXPECT_EQ(check_qdq(c, threads, false, true), 1);
    }
}

// Weights too large for the core to fold (their float copy past 64 MiB)
// reach the pass as DequantizeLinear of the 8-bit constant.
TEST_F(QdqMatMul, UnfoldedWeights) {
  EXPECT_EQ(check_qdq({"2x4100 x 4097", {2, 4100}, 4097, kU8, kS8, true, true}, 2), 1);
}

// A float MatMul whose weights are not on an int8 lattice stays float.
TEST_F(QdqMatMul, FloatWeightsStayFloat) {
  ModelBuilder m(13);
  Tensor az({}, kU8);
  az.data<uint8_t>()[0] = 128;
  std::vector<float> w(12 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * std::sin(float(i) + 0.5f);
  m.input("x8", kU8, {3, 12}).initializer("sa", f32_tensor({}, {0.1f})).initializer("az", az);
  m.initializer("w", f32_tensor({12, 5}, w));
  m.node("DequantizeLinear", {"x8", "sa", "az"}, {"xd"}).node("MatMul", {"xd", "w"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {3, 5});
  EXPECT_EQ(count_op(*singa::onnx::prepare_bytes(m.bytes()), "QDQMatMul"), 0);
}

// A QDQ transformer's attention scores, DequantizeLinear -> Div -> Add(mask)
// -> Softmax -> QuantizeLinear, with scales spreading each row's exps over
// 110 units of the exponent and rows whose sum reaches ~64: many
// probabilities lie near and below FLT_MIN, where the Softmax kernel masks
// lanes off before its multiply. Probabilities are checked against a double
// reference (never subnormal) and the 8-bit output against the reference
// quantized.
TEST_F(QdqMatMul, AttentionScoresSoftmax) {
  for (int64_t n : {37, 128}) {
    SCOPED_TRACE("row " + std::to_string(n));
    const int64_t rows = 2 * 3 * 5;
    Tensor s = random_q({2, 3, 5, n}, kU8, unsigned(n));
    for (int64_t r = 0; r < rows; r += 2)  // every other row: half its scores at the maximum
      for (int64_t i = 0; i < n; i += 2) s.data<uint8_t>()[r * n + i] = 255;
    std::vector<float> mask(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) mask[size_t(i)] = i % 11 == 5 ? -10000.f : 0.f;
    const float scale = 3.5f;
    Tensor zero({}, kU8);
    zero.data<uint8_t>()[0] = 0;
    ModelBuilder m(13);
    m.input("s", kU8, {2, 3, 5, n}).initializer("ss", f32_tensor({}, {scale})).initializer("sz", zero);
    m.initializer("d", f32_tensor({}, {8.f})).initializer("mask", f32_tensor({1, 1, 1, n}, mask));
    m.initializer("ps", f32_tensor({}, {1.f / 255.f})).initializer("pz", zero);
    m.node("DequantizeLinear", {"s", "ss", "sz"}, {"sd"}).node("Div", {"sd", "d"}, {"x"});
    m.node("Add", {"x", "mask"}, {"xm"}).node("Softmax", {"xm"}, {"p"});  // opset 13: the last axis
    m.node("QuantizeLinear", {"p", "ps", "pz"}, {"pq"});
    m.output("p", SINGA_ONNX_FLOAT, {2, 3, 5, n}).output("pq", kU8, {2, 3, 5, n});
    const auto got = singa::onnx::prepare_bytes(m.bytes())->run(std::vector<Tensor>{s});
    ASSERT_EQ(got.size(), 2u);
    const Tensor& p = got[0].second;
    const Tensor& pq = got[1].second;
    int band = 0;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> x(static_cast<size_t>(n));
      double mx = -1e300, sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        // The float steps the graph takes, then the rest in double.
        x[size_t(i)] = double(float(float(s.data<uint8_t>()[r * n + i]) * scale) / 8.f + mask[size_t(i)]);
        mx = std::max(mx, x[size_t(i)]);
      }
      for (int64_t i = 0; i < n; ++i) sum += std::exp(x[size_t(i)] - mx);
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(x[size_t(i)] - mx) / sum;
        const float v = p.data<float>()[r * n + i];
        const double fmin = double(std::numeric_limits<float>::min());
        EXPECT_TRUE(v == 0.f || v >= std::numeric_limits<float>::min()) << r << "," << i << ": " << v;
        // exp16 clamps its argument at -87, hence the absolute e^-87.
        EXPECT_NEAR(double(v), want, want * 2e-6 + 1.7e-38) << r << "," << i;
        if (want > fmin && want < fmin * 64) ++band;
        const double q = std::min(255.0, std::nearbyint(want * 255.0));
        EXPECT_LE(std::abs(double(pq.data<uint8_t>()[r * n + i]) - q), 1.0) << r << "," << i;
      }
    }
    EXPECT_GT(band, 0) << "no probability fell between FLT_MIN and 64 FLT_MIN: the case tests nothing";
  }
}

// MatMul -> QuantizeLinear -> DequantizeLinear -> Add(bias), as a QDQ
// transformer's projections are exported, becomes one QDQMatMul writing the
// dequantized float plus the bias. The 8-bit value is checked exactly
// against float(exact sum) * (a_scale * b_scale[n]) quantized as
// QuantizeLinear does, the float against (q - zero) * scale + bias, at 1 and
// 3 threads and on the portable path (cpu.int8_matmul=0).
TEST_F(QdqMatMul, FakeQuantizedOutputWithBias) {
  const int64_t M = 37, K = 70, N = 83;
  const Tensor x = random_q({M, K}, kU8, 21), w = random_q({K, N}, kS8, 22);
  Tensor az({}, kU8), qz({}, kU8), wz({N}, kS8);
  az.data<uint8_t>()[0] = 121, qz.data<uint8_t>()[0] = 113;
  std::vector<float> sw(static_cast<size_t>(N)), bias(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    wz.data<int8_t>()[n] = 0;
    sw[size_t(n)] = 0.002f + 0.0001f * float(n % 13);
    bias[size_t(n)] = 0.25f * std::sin(float(n));
  }
  const float sa = 0.031f, qs = 0.047f;
  ModelBuilder m(13);
  m.input("x8", kU8, {M, K}).initializer("sa", f32_tensor({}, {sa})).initializer("az", az);
  m.initializer("w", w).initializer("sw", f32_tensor({N}, sw)).initializer("wz", wz);
  m.initializer("qs", f32_tensor({}, {qs})).initializer("qz", qz).initializer("bias", f32_tensor({N}, bias));
  m.node("DequantizeLinear", {"x8", "sa", "az"}, {"xd"}).node("DequantizeLinear", {"w", "sw", "wz"}, {"wd"});
  m.node("MatMul", {"xd", "wd"}, {"p"}).node("QuantizeLinear", {"p", "qs", "qz"}, {"pq"});
  m.node("DequantizeLinear", {"pq", "qs", "qz"}, {"pd"}).node("Add", {"bias", "pd"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {M, N});
  std::vector<float> want(size_t(M * N));
  std::vector<int> want_q(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (q_at(x, i * K + k) - 121) * q_at(w, k * N + n);
      const float y = float(acc) * (sa * sw[size_t(n)]);
      const float q = std::min(std::max(std::nearbyint(y / qs) + 113.f, 0.f), 255.f);
      want_q[size_t(i * N + n)] = int(q);
      want[size_t(i * N + n)] = (q - 113.f) * qs + bias[size_t(n)];
    }
  for (int variant = 0; variant < 3; ++variant) {
    singa::onnx::PrepareOptions o;
    o.threads = variant == 1 ? 3 : 1;
    if (variant == 2) o.options["cpu.int8_matmul"] = "0";
    SCOPED_TRACE("variant " + std::to_string(variant));
    auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
    EXPECT_EQ(count_op(*rep, "QDQMatMul"), 1);
    EXPECT_EQ(count_op(*rep, "DequantizeLinear") + count_op(*rep, "QuantizeLinear") + count_op(*rep, "Add"), 0);
    const Tensor y = rep->run(std::vector<Tensor>{x})[0].second;
    ASSERT_EQ(y.shape(), (singa::Shape{M, N}));
    int64_t bad = 0;
    for (int64_t i = 0; i < M * N; ++i) {
      const float v = y.data<float>()[i];
      // The quantized integer behind v, exactly; v itself to an ulp or two
      // (the multiply and the bias add may be one fused multiply-add).
      const int q = int(std::lround((v - bias[size_t(i % N)]) / qs)) + 113;
      if (q != want_q[size_t(i)] || std::abs(v - want[size_t(i)]) > 1e-6f * (1.f + std::abs(want[size_t(i)]))) ++bad;
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
