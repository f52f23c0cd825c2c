// The int8 fusions' shared pieces and the dynamic-quant fusions:
// - int8_lattice.hpp: float weights that are q * scale exactly (per output
//   channel, per column, per tensor, with zeros, an all-zero channel, odd
//   scales, asymmetric zero points) come back as integers that reproduce
//   every element bit for bit; plain float weights and NaNs are refused;
// - DynamicQuantizeLinear against the ONNX formula written here, bit for bit;
// - cpu.dynq_matmul / cpu.dynq_conv: quantize_dynamic's MatMulInteger and
//   ConvInteger tails fused into QDQMatMul / QdqConv give the unfused
//   model's bits (pass off by option) and match a reference computed here
//   from the quantized values.
#include "model_builder.hpp"

#include "../../plugins/common/int8_lattice.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::count_op;
using testing_util::f32_tensor;
using testing_util::q_at;
using testing_util::random_q;
namespace i8 = singa::int8;

namespace {

constexpr int32_t kU8 = SINGA_ONNX_UINT8, kS8 = SINGA_ONNX_INT8, kF32 = SINGA_ONNX_FLOAT;

// ------------------------------------------------------------ lattice

// Weights w = float(q) * scale[c] for random integers q in [lo, hi] (some
// forced to 0), laid out as `v`; returns w and fills q.
std::vector<float> lattice_weights(const i8::ChannelView& v, const std::vector<float>& scale, int lo, int hi,
                                   unsigned seed, std::vector<int32_t>& q) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi), zero(0, 9);
  std::vector<float> w(size_t(v.size()));
  q.assign(w.size(), 0);
  for (int64_t c = 0; c < v.channels; ++c)
    for (int64_t k = 0; k < v.count; ++k) {
      const int32_t r = zero(rng) == 0 ? 0 : u(rng);
      q[size_t(v.at(c, k))] = r;
      w[size_t(v.at(c, k))] = float(r) * scale[size_t(c)];
    }
  return w;
}

// Recovers w and checks that every element comes back exactly, both from
// the integers and from the s8 copy with its zero points.
void expect_exact(const std::vector<float>& w, const i8::ChannelView& v) {
  i8::ChannelInts got;
  ASSERT_TRUE(i8::lattice_from_float(w.data(), v, got));
  std::vector<int8_t> stored, zp;
  ASSERT_TRUE(i8::fit_s8(got, stored, zp));
  int64_t wrong = 0;
  for (int64_t c = 0; c < v.channels; ++c)
    for (int64_t k = 0; k < v.count; ++k) {
      const size_t i = size_t(v.at(c, k));
      const float s = got.scale[size_t(c)];
      wrong += float(got.q[i]) * s != w[i];
      wrong += float(int32_t(stored[i]) - int32_t(zp[size_t(c)])) * s != w[i];
    }
  EXPECT_EQ(wrong, 0);
}

TEST(Int8Lattice, PerOutputChannel) {
  const int64_t M = 24, K = 3 * 3 * 16;
  const i8::ChannelView v{M, K, K, 1};
  std::vector<float> scale(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) scale[size_t(m)] = 0.0031f * (1.f + 0.173f * float(m));
  std::vector<int32_t> q;
  expect_exact(lattice_weights(v, scale, -128, 127, 1, q), v);
}

TEST(Int8Lattice, PerColumnOfMatMulWeights) {
  const int64_t K = 67, N = 45;
  const i8::ChannelView v{N, K, 1, N};
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) scale[size_t(n)] = 0.02f / (1.f + 0.37f * float(n % 7));
  std::vector<int32_t> q;
  expect_exact(lattice_weights(v, scale, -127, 127, 2, q), v);
}

// One scale for the whole tensor; short columns hold few distinct values.
TEST(Int8Lattice, PerTensorShortColumns) {
  const int64_t K = 3, N = 200;
  const i8::ChannelView v{N, K, 1, N};
  std::vector<float> scale(static_cast<size_t>(N), 0.0123457f);
  std::vector<int32_t> q;
  expect_exact(lattice_weights(v, scale, -128, 127, 3, q), v);
}

// u8 weights minus a zero point far from 128: no value near 0 in a channel.
TEST(Int8Lattice, AsymmetricZeroPoint) {
  const int64_t M = 8, K = 50;
  const i8::ChannelView v{M, K, K, 1};
  std::vector<float> scale(static_cast<size_t>(M), 3.3e-5f);
  std::vector<int32_t> q;
  std::vector<float> w = lattice_weights(v, scale, 20 - 100, 255 - 100, 4, q);
  // No zeros at all in channel 0: its smallest magnitude is many steps.
  for (int64_t k = 0; k < K; ++k) w[size_t(k)] = float(60 + k * 3) * scale[0];
  expect_exact(w, v);
  i8::ChannelInts got;
  ASSERT_TRUE(i8::lattice_from_float(w.data(), v, got));
  std::vector<int8_t> stored, zp;
  ASSERT_TRUE(i8::fit_s8(got, stored, zp));
  EXPECT_TRUE(i8::any_zero_point(zp));
}

TEST(Int8Lattice, ZeroChannelAndOddScales) {
  const int64_t M = 6, K = 30;
  const i8::ChannelView v{M, K, K, 1};
  const std::vector<float> scale = {0.1f, 1.f / 3.f, 7.77e-3f, 1e-7f, 123.456f, 0.5f};
  std::vector<int32_t> q;
  std::vector<float> w = lattice_weights(v, scale, -90, 110, 5, q);
  for (int64_t k = 0; k < K; ++k) w[size_t(2 * K + k)] = 0.f;  // channel 2 all zeros
  expect_exact(w, v);
}

TEST(Int8Lattice, RefusesFloatWeights) {
  const int64_t M = 16, K = 27;
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.f, 0.05f);
  std::vector<float> w(size_t(M * K));
  for (float& x : w) x = nd(rng);
  i8::ChannelInts got;
  EXPECT_FALSE(i8::lattice_from_float(w.data(), {M, K, K, 1}, got));
  EXPECT_FALSE(i8::lattice_from_float(w.data(), {K, M, 1, K}, got));
  // A lattice channel spanning more than 256 steps does not fit s8.
  const std::vector<float> wide = {-200 * 0.01f, 0.01f, 100 * 0.01f};
  EXPECT_FALSE(i8::lattice_from_float(wide.data(), {1, 3, 3, 1}, got));
  // Not finite.
  std::vector<float> bad = {0.1f, NAN, 0.2f};
  EXPECT_FALSE(i8::lattice_from_float(bad.data(), {1, 3, 3, 1}, got));
}

// ------------------------------------------------------------ models

class Int8Fusions : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

Tensor normal_floats(const singa::Shape& shape, unsigned seed, float sd, float mean = 0.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(mean, sd);
  Tensor t(shape, kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
  return t;
}

// DynamicQuantizeLinear as ONNX defines it: the range of x and 0 onto [0, 255].
struct DynQ {
  std::vector<int32_t> q;
  float scale = 0.f;
  int32_t zp = 0;
};

DynQ dynamic_quantize(const Tensor& x) {
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) lo = std::min(lo, x.data<float>()[i]), hi = std::max(hi, x.data<float>()[i]);
  DynQ d;
  d.scale = (hi - lo) / 255.f;
  if (d.scale > 0.f) d.zp = int32_t(std::min(255.f, std::max(0.f, std::nearbyint(-lo / d.scale))));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = d.scale > 0.f ? std::nearbyint(x.data<float>()[i] / d.scale) + float(d.zp) : 0.f;
    d.q.push_back(int32_t(std::min(255.f, std::max(0.f, v))));
  }
  return d;
}

int64_t bits_differ(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel()) return -1;
  int64_t d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d += std::memcmp(&a.data<float>()[i], &b.data<float>()[i], 4) != 0;
  return d;
}

TEST_F(Int8Fusions, DynamicQuantizeLinearMatchesFormula) {
  for (int64_t n : {1, 17, 33, 1000, 100003}) {
    for (float mean : {0.f, 2.f, -3.f}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", mean " + std::to_string(mean));
      ModelBuilder m(13);
      m.input("x", kF32, {n}).node("DynamicQuantizeLinear", {"x"}, {"q", "s", "z"});
      m.output("q", kU8, {n}).output("s", kF32, {}).output("z", kU8, {});
      for (int o : {1, 2}) m.g->mutable_output(o)->mutable_type()->mutable_tensor_type()->mutable_shape();  // scalars
      auto rep = singa::onnx::prepare_bytes(m.bytes());
      const Tensor x = normal_floats({n}, unsigned(n), 1.5f, mean);
      const auto out = rep->run({x});
      const DynQ want = dynamic_quantize(x);
      EXPECT_EQ(out[1].second.data<float>()[0], want.scale);
      EXPECT_EQ(int32_t(out[2].second.data<uint8_t>()[0]), want.zp);
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += int32_t(out[0].second.data<uint8_t>()[i]) != want.q[size_t(i)];
      EXPECT_EQ(wrong, 0);
    }
  }
}

struct MatMulCase {
  const char* name;
  singa::Shape x;  // [..., K]
  int64_t N;
  int32_t wt;
  bool per_column_zp, bias, w_zero_point = true;
};

// quantize_dynamic's MatMul, fused and not; returns the fused QDQMatMul count.
int check_dynq_matmul(const MatMulCase& c, int threads) {
  const int64_t K = c.x.back(), N = c.N;
  const Tensor w = random_q({K, N}, c.wt, 11);
  const Tensor wz = random_q(c.per_column_zp ? singa::Shape{N} : singa::Shape{}, c.wt, 12);
  const float ws = 0.0071f;
  const Tensor bias = normal_floats({N}, 13, 0.3f), x = normal_floats(c.x, 14, 1.f, 0.2f);
  ModelBuilder m(13);
  m.input("x", kF32, c.x).initializer("w", w).initializer("wz", wz).initializer("ws", f32_tensor({}, {ws}));
  m.initializer("b", bias);
  m.node("DynamicQuantizeLinear", {"x"}, {"q", "qs", "qz"});
  if (c.w_zero_point)
    m.node("MatMulInteger", {"q", "w", "qz", "wz"}, {"acc"});
  else
    m.node("MatMulInteger", {"q", "w", "qz"}, {"acc"});
  m.node("Cast", {"acc"}, {"f"});
  add_int(m.last(), "to", kF32);
  m.node("Mul", {"qs", "ws"}, {"s"}).node("Mul", {"f", "s"}, {c.bias ? "m" : "y"});
  if (c.bias) m.node("Add", {"m", "b"}, {"y"});
  singa::Shape ys = c.x;
  ys.back() = N;
  m.output("y", kF32, ys);

  singa::onnx::PrepareOptions on, off;
  on.threads = off.threads = threads;
  off.options["pass.cpu.dynq_matmul"] = "0";
  auto fused = singa::onnx::prepare_bytes(m.bytes(), on), plain = singa::onnx::prepare_bytes(m.bytes(), off);
  EXPECT_EQ(count_op(*plain, "QDQMatMul"), 0);
  EXPECT_EQ(count_op(*fused, "MatMulInteger"), 0);
  const Tensor got = fused->run({x})[0].second, base = plain->run({x})[0].second;
  EXPECT_EQ(got.shape(), ys);
  EXPECT_EQ(bits_differ(got, base), 0) << "fused vs unfused";
  // The reference from the quantized values, in the unfused order.
  const DynQ d = dynamic_quantize(x);
  const float s = d.scale * ws;
  const int64_t rows = x.numel() / K;
  int64_t off_ref = 0;
  for (int64_t r = 0; r < rows && got.numel() == rows * N; ++r)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      const int32_t z = c.w_zero_point ? q_at(wz, c.per_column_zp ? n : 0) : 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(d.q[size_t(r * K + k)] - d.zp) * (q_at(w, k * N + n) - z);
      float want = float(acc) * s;
      if (c.bias) want += bias.data<float>()[n];
      off_ref += got.data<float>()[r * N + n] != want;
    }
  EXPECT_EQ(off_ref, 0) << "fused vs the reference";
  return count_op(*fused, "QDQMatMul");
}

TEST_F(Int8Fusions, DynamicQuantMatMulFusedExactly) {
  const std::vector<MatMulCase> all = {
      {"1x37 x u8 45, zero point per tensor", {1, 37}, 45, kU8, false, false},
      {"7x67 x s8 77 per column + bias", {7, 67}, 77, kS8, true, true},
      {"1x33x130 x u8 129 + bias", {1, 33, 130}, 129, kU8, false, true},
      {"2x3x5x20 x u8 19 per column", {2, 3, 5, 20}, 19, kU8, true, false},
      {"5x64 x s8 70 without a weight zero point + bias", {5, 64}, 70, kS8, false, true, false},
  };
  for (const MatMulCase& c : all)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + ", threads " + std::to_string(threads));
      EXPECT_EQ(check_dynq_matmul(c, threads), 1);
    }
}

struct ConvCase {
  const char* name;
  singa::Shape x;  // NCHW
  int64_t M, kernel, stride, pad, group;
  int32_t wt;
  bool per_channel_zp, bias, relu;
};

// quantize_dynamic's Conv, fused and not; returns the fused QdqConv count.
int check_dynq_conv(const ConvCase& c, int threads) {
  const int64_t C = c.x[1], Cg = C / c.group;
  const Tensor w = random_q({c.M, Cg, c.kernel, c.kernel}, c.wt, 21);
  const Tensor wz = random_q(c.per_channel_zp ? singa::Shape{c.M} : singa::Shape{}, c.wt, 22);
  const Tensor bias = normal_floats({1, c.M, 1, 1}, 23, 0.3f), x = normal_floats(c.x, 24, 1.f, 0.1f);
  ModelBuilder m(13);
  m.input("x", kF32, c.x).initializer("w", w).initializer("wz", wz).initializer("ws", f32_tensor({}, {0.013f}));
  m.initializer("b", bias);
  m.node("DynamicQuantizeLinear", {"x"}, {"q", "qs", "qz"}).node("ConvInteger", {"q", "w", "qz", "wz"}, {"acc"});
  add_ints(m.last(), "pads", {c.pad, c.pad, c.pad, c.pad});
  add_ints(m.last(), "strides", {c.stride, c.stride});
  add_int(m.last(), "group", c.group);
  m.node("Cast", {"acc"}, {"f"});
  add_int(m.last(), "to", kF32);
  m.node("Mul", {"qs", "ws"}, {"s"}).node("Mul", {"f", "s"}, {"m"});
  std::string y = "m";
  if (c.bias) m.node("Add", {y, "b"}, {"a"}), y = "a";
  if (c.relu) m.node("Relu", {y}, {"r"}), y = "r";
  const int64_t OH = (c.x[2] + 2 * c.pad - c.kernel) / c.stride + 1, OW = (c.x[3] + 2 * c.pad - c.kernel) / c.stride + 1;
  m.output(y, kF32, {c.x[0], c.M, OH, OW});

  singa::onnx::PrepareOptions on, off;
  on.threads = off.threads = threads;
  off.options["pass.cpu.dynq_conv"] = "0";
  auto fused = singa::onnx::prepare_bytes(m.bytes(), on), plain = singa::onnx::prepare_bytes(m.bytes(), off);
  EXPECT_EQ(count_op(*plain, "QdqConv"), 0);
  EXPECT_EQ(count_op(*fused, "ConvInteger"), 0);
  const Tensor got = fused->run({x})[0].second, base = plain->run({x})[0].second;
  EXPECT_EQ(got.shape(), (singa::Shape{c.x[0], c.M, OH, OW}));
  EXPECT_EQ(bits_differ(got, base), 0) << "fused vs unfused";
  // The reference from the quantized values, in the unfused order.
  const DynQ d = dynamic_quantize(x);
  const float s = d.scale * 0.013f;
  const int64_t N = c.x[0], H = c.x[2], W = c.x[3], K = c.kernel, Mg = c.M / c.group;
  int64_t off_ref = 0;
  for (int64_t n = 0; n < N && got.numel() == N * c.M * OH * OW; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          const int32_t z = q_at(wz, c.per_channel_zp ? m : 0);
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                const int64_t ih = oh * c.stride - c.pad + kh, iw = ow * c.stride - c.pad + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t cin = (m / Mg) * Cg + ci;
                acc += int64_t(d.q[size_t(((n * C + cin) * H + ih) * W + iw)] - d.zp) *
                       (q_at(w, ((m * Cg + ci) * K + kh) * K + kw) - z);
              }
          float want = float(acc) * s;
          if (c.bias) want += bias.data<float>()[m];
          if (c.relu) want = std::max(want, 0.f);
          off_ref += got.data<float>()[((n * c.M + m) * OH + oh) * OW + ow] != want;
        }
  EXPECT_EQ(off_ref, 0) << "fused vs the reference";
  return count_op(*fused, "QdqConv");
}

TEST_F(Int8Fusions, DynamicQuantConvFusedExactly) {
  const std::vector<ConvCase> all = {
      {"3->5 3x3 pad 1, u8, bias, Relu", {1, 3, 9, 11}, 5, 3, 1, 1, 1, kU8, false, true, true},
      {"16->24 3x3 stride 2, u8 per channel, bias", {2, 16, 8, 8}, 24, 3, 2, 1, 1, kU8, true, true, false},
      {"32->32 1x1, s8, no bias, Relu", {1, 32, 7, 5}, 32, 1, 1, 0, 1, kS8, false, false, true},
      {"depthwise 16 3x3, u8 per channel, bias, Relu", {1, 16, 10, 10}, 16, 3, 1, 1, 16, kU8, true, true, true},
      {"group 2 8->12 5x5, s8 per channel", {1, 8, 12, 12}, 12, 5, 1, 2, 2, kS8, true, false, false},
  };
  for (const ConvCase& c : all)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + ", threads " + std::to_string(threads));
      EXPECT_EQ(check_dynq_conv(c, threads), 1);
    }
}

}  // namespace
