// The CPU pack's cpu.float16_as_float32 pass (plugins/ops_math/passes/
// widen_float16.cpp): a float16 graph runs as one float32 region between two
// Casts, its weights widened at prepare, and its result stays within half
// precision's rounding of the float32 model's, as the half kernels' does.
#include "half_tensor.hpp"
#include "model_builder.hpp"

#include <singa/kernel.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::float_tensor;
using testing_util::float_values;

std::vector<float> random(size_t n, uint32_t seed, float scale) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = float(singa::sdk::half(d(g)));  // exactly representable in half
  return v;
}

// X -> Conv(3x3, pads 1) -> Relu -> MaxPool(2x2) -> Add(c) -> Resize(x2, scales float32) -> Y, all in `dtype`.
std::string model(int32_t dtype) {
  ModelBuilder m(13);
  m.input("X", dtype, {1, 8, 16, 16});
  m.initializer("W", float_tensor({16, 8, 3, 3}, dtype, random(16 * 8 * 9, 1, 0.2f)));
  m.initializer("B", float_tensor({16}, dtype, random(16, 2, 0.1f)));
  m.initializer("C", float_tensor({16, 1, 1}, dtype, random(16, 3, 0.5f)));
  m.initializer("S", float_tensor({4}, SINGA_ONNX_FLOAT, {1, 1, 2, 2}));
  m.node("Conv", {"X", "W", "B"}, {"c"});
  auto* pads = m.last()->add_attribute();
  pads->set_name("pads");
  pads->set_type(::onnx::AttributeProto::INTS);
  for (int k = 0; k < 4; ++k) pads->add_ints(1);
  m.node("Relu", {"c"}, {"r"});
  m.node("MaxPool", {"r"}, {"p"});
  auto* ks = m.last()->add_attribute();
  ks->set_name("kernel_shape");
  ks->set_type(::onnx::AttributeProto::INTS);
  ks->add_ints(2);
  ks->add_ints(2);
  auto* st = m.last()->add_attribute();
  st->set_name("strides");
  st->set_type(::onnx::AttributeProto::INTS);
  st->add_ints(2);
  st->add_ints(2);
  m.node("Add", {"p", "C"}, {"a"});
  m.node("Resize", {"a", "", "S"}, {"Y"});
  m.output("Y", dtype, {1, 16, 16, 16});
  return m.bytes();
}

struct Ran {
  std::vector<float> y;
  int casts = 0;
  std::string y_dtype_ok;
};

Ran run(int32_t dtype, bool widen) {
  singa::onnx::PrepareOptions o;
  if (!widen) o.options["pass.cpu.float16_as_float32"] = "0";
  auto rep = singa::onnx::prepare_bytes(model(dtype), o);
  Ran r;
  for (const auto& p : rep->placement()) r.casts += p.op_type == "Cast" ? 1 : 0;
  auto out = rep->run({float_tensor({1, 8, 16, 16}, dtype, random(8 * 16 * 16, 4, 1.0f))});
  const Tensor& y = out.at(0).second;
  EXPECT_EQ(y.dtype(), dtype);
  r.y = float_values(y);
  return r;
}

class Float16Widen : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

TEST_F(Float16Widen, HalfGraphRunsAsOneFloatRegionAndMatchesFloat32) {
  const Ran ref = run(SINGA_ONNX_FLOAT, true);
  const Ran wide = run(SINGA_ONNX_FLOAT16, true);
  const Ran half = run(SINGA_ONNX_FLOAT16, false);
  EXPECT_EQ(ref.casts, 0);
  EXPECT_EQ(wide.casts, 2) << "one Cast into the float32 region, one out of it";
  EXPECT_EQ(half.casts, 0);
  ASSERT_EQ(wide.y.size(), ref.y.size());
  ASSERT_EQ(half.y.size(), ref.y.size());
  double worst_wide = 0, worst_half = 0;
  for (size_t i = 0; i < ref.y.size(); ++i) {
    const double tol = 1e-3 + std::ldexp(std::fabs(ref.y[i]), -10);  // one half ulp and a little
    worst_wide = std::max(worst_wide, std::fabs(wide.y[i] - ref.y[i]) / tol);
    worst_half = std::max(worst_half, std::fabs(half.y[i] - ref.y[i]) / tol);
  }
  // The widened graph rounds once, at the end: within a half ulp of float32's result.
  EXPECT_LE(worst_wide, 1.0);
  // The node-by-node half kernels round at every node; both are close to float32.
  EXPECT_LE(worst_half, 16.0);
}

}  // namespace
