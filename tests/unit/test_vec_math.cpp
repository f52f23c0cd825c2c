// plugins/common/vec_math.hpp against libm over the range the recurrent
// cells feed it, edges and saturation included.
#include "../../plugins/common/vec_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

std::vector<float> sweep() {
  std::vector<float> v;
  for (float x = -100.f; x <= 100.f; x += 0.0137f) v.push_back(x);
  for (float x : {0.f, -0.f, 1e-8f, -1e-8f, 0.0624f, 0.0626f, -86.f, 88.7f, 89.f, -1000.f, 1000.f}) v.push_back(x);
  return v;
}

}  // namespace

TEST(VecMath, ExpIsWithinTwoUlpOfLibm) {
  std::vector<float> x;
  for (float v : sweep())
    if (v >= -86.f && v <= 88.f) x.push_back(v);
  std::vector<float> y = x;
  singa::vec::exp_inplace(y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    EXPECT_LE(std::fabs(y[i] - want), 2.5f * (std::nextafter(want, INFINITY) - want)) << "x = " << x[i];
  }
}

TEST(VecMath, SigmoidAndTanhMatchLibm) {
  const std::vector<float> x = sweep();
  std::vector<float> s = x, t = x;
  singa::vec::sigmoid_inplace(s.data(), int64_t(s.size()));
  singa::vec::tanh_inplace(t.data(), int64_t(t.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double sig = 1.0 / (1.0 + std::exp(-double(x[i])));
    EXPECT_NEAR(s[i], sig, 2e-7 + 2e-7 * sig) << "x = " << x[i];
    EXPECT_NEAR(t[i], std::tanh(double(x[i])), 2e-7 + 1e-6 * std::fabs(std::tanh(double(x[i])))) << "x = " << x[i];
    EXPECT_TRUE(std::isfinite(s[i]) && std::isfinite(t[i])) << "x = " << x[i];
  }
}

TEST(VecMath, ErfMatchesLibm) {
  const std::vector<float> x = sweep();
  std::vector<float> e = x;
  singa::vec::erf_inplace(e.data(), int64_t(e.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::erf(double(x[i]));
    EXPECT_NEAR(e[i], want, 2.5e-7 + 2e-7 * std::fabs(want)) << "x = " << x[i];
  }
}

// GELU's rational erf: absolute accuracy over the whole line (saturated past
// |x| = 4), relative accuracy near 0, NaN through; gelu() against the double
// formula, absolute error scaled by |x| / 2 as the erf error is.
TEST(VecMath, GeluMatchesTheErfFormula) {
  const std::vector<float> x = sweep();
  for (float v : x) {
    const double want = std::erf(double(v));
    EXPECT_NEAR(singa::vec::erf_rational(v), want, 4e-7) << "x = " << v;
  }
  for (float v : {1e-8f, -3e-5f, 0.01f})
    EXPECT_NEAR(singa::vec::erf_rational(v), std::erf(double(v)), 1e-6 * std::fabs(std::erf(double(v))));
  EXPECT_TRUE(std::isnan(singa::vec::erf_rational(NAN)));
  std::vector<float> y(x.size());
  singa::vec::gelu(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(y[i], want, 3e-7 * (1.0 + std::fabs(v))) << "x = " << v;
  }
}

// ---- unary_f32.hpp: every AVX-512 elementwise op against a double-precision
// reference, in ulp of the float result (a subnormal's ulp is 2^-149), over
// every binade from the least subnormal to FLT_MAX on both sides, a dense
// stretch around 0, +-0, +-inf and NaN, at lengths that leave masked tails.

#include "../../plugins/common/unary_f32.hpp"

#include <singa/kernel.hpp>

#include <cfloat>
#include <functional>
#include <limits>

namespace {

using singa::vec::UnaryKind;
using singa::vec::UnaryParams;
using singa::vec::UnaryType;

std::vector<float> full_sweep() {
  std::vector<float> v;
  for (int e = -149; e <= 127; ++e)
    for (float m : {1.f, 1.1f, 1.25f, 1.4142135f, 1.5f, 1.75f, 1.9999999f}) {
      const float a = std::ldexp(m, e);
      if (std::isfinite(a)) v.push_back(a), v.push_back(-a);
    }
  for (float x = -110.f; x <= 110.f; x += 0.00731f) v.push_back(x);
  for (float x = -1.f; x <= 1.f; x += 1.37e-4f) v.push_back(x);
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.f, -0.f, inf, -inf, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 0.625f, -0.625f, 0.69f, -0.69f, 20.f,
                  20.0001f, 88.72f, 88.73f, -87.33f, -103.97f, -104.f, -105.f, 1e-30f, -1e-30f})
    v.push_back(x);
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  return v;
}

// |got - want| in units of the last place of want rounded to float.
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  if (std::isnan(got)) return 1e30;
  const float w = float(want);  // inf where want overflows float
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : 1e30;
  double ulp = std::fabs(double(std::nextafter(std::fabs(w), INFINITY)) - std::fabs(double(w)));
  if (std::isinf(std::nextafter(std::fabs(w), INFINITY))) ulp = std::ldexp(1.0, 104);
  ulp = std::max(ulp, std::ldexp(1.0, -149));
  return std::fabs(double(got) - want) / ulp;
}

double softplus_ref(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double sigmoid_ref(double z) { return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z)); }

struct Case {
  const char* name;
  UnaryKind kind;
  UnaryParams p;
  std::function<double(float)> ref;  // takes the float input
  double max_ulp;
};

std::vector<Case> cases() {
  const float a = 0.7f;
  return {
      {"Relu", UnaryKind::kRelu, {}, [](float x) { return x < 0 ? 0.0 : double(x); }, 0},
      {"LeakyRelu", UnaryKind::kLeakyRelu, {0.01f}, [](float x) { return x < 0 ? double(0.01f * x) : double(x); }, 0},
      {"ThresholdedRelu", UnaryKind::kThresholdedRelu, {1.f},
       [](float x) { return x > 1.f ? double(x) : 0.0; }, 0},
      {"HardSigmoid", UnaryKind::kHardSigmoid, {0.2f, 0.5f},
       [](float x) { return std::isnan(x) ? double(x) : std::min(1.0, std::max(0.0, double(0.2f) * x + 0.5)); }, 1},
      {"HardSwish", UnaryKind::kHardSwish, {},
       [](float x) { return double(x) * (std::isnan(x) ? double(x) : std::min(1.0, std::max(0.0, x / 6.0 + 0.5))); },
       3},
      {"Softsign", UnaryKind::kSoftsign, {}, [](float x) { return x / (1.0 + std::fabs(double(x))); }, 2},
      {"Sigmoid", UnaryKind::kSigmoid, {}, [](float x) { return sigmoid_ref(x); }, 4},
      {"Swish", UnaryKind::kSwish, {a},
       // alpha x rounded as the kernel rounds it.
       [a](float x) { return double(x) * sigmoid_ref(double(a * x)); }, 4},
      {"Tanh", UnaryKind::kTanh, {}, [](float x) { return std::tanh(double(x)); }, 4},
      {"Exp", UnaryKind::kExp, {}, [](float x) { return std::exp(double(x)); }, 3},
      {"Log", UnaryKind::kLog, {}, [](float x) { return std::log(double(x)); }, 2},
      {"Softplus", UnaryKind::kSoftplus, {}, [](float x) { return softplus_ref(x); }, 4},
      {"Mish", UnaryKind::kMish, {},
       [](float x) { return std::isinf(x) && x < 0 ? NAN : x * std::tanh(softplus_ref(x)); }, 6},
      {"Elu", UnaryKind::kElu, {a}, [a](float x) { return x < 0 ? double(a) * std::expm1(double(x)) : double(x); },
       4},
      {"Selu", UnaryKind::kSelu, {1.6732632f, 0.f, 1.0507010f},
       [](float x) {
         return x > 0 ? double(1.0507010f) * x : double(1.6732632f * 1.0507010f) * std::expm1(double(x));
       },
       4},
      {"Celu", UnaryKind::kCelu, {a},
       [a](float x) { return x > 0 ? double(x) : double(a) * std::expm1(double(x / a)); }, 4},
      {"Gelu", UnaryKind::kGelu, {},
       [](float x) { return std::isinf(x) && x < 0 ? NAN : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 7},
      {"Neg", UnaryKind::kNeg, {}, [](float x) { return -double(x); }, 0},
      {"Abs", UnaryKind::kAbs, {}, [](float x) { return std::fabs(double(x)); }, 0},
      {"Sqrt", UnaryKind::kSqrt, {}, [](float x) { return std::sqrt(double(x)); }, 0.5},
      {"Reciprocal", UnaryKind::kReciprocal, {}, [](float x) { return 1.0 / double(x); }, 0.5},
  };
}

}  // namespace

TEST(UnaryF32, EveryOpWithinItsUlpBoundOfADoubleReference) {
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512";
  const std::vector<float> x = full_sweep();
  for (const Case& c : cases()) {
    std::vector<float> y(x.size(), 12345.f);
    ASSERT_TRUE(singa::vec::unary_run(c.kind, UnaryType::kFloat, c.p, x.data(), y.data(), int64_t(x.size())));
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = ulp_error(y[i], c.ref(x[i]));
      if (e > worst) worst = e, worst_x = x[i];
    }
    EXPECT_LE(worst, c.max_ulp) << c.name << ": worst at x = " << worst_x;
    std::printf("  %-16s max error %.3g ulp (at x = %g)\n", c.name, worst, double(worst_x));
  }
}

// Lengths that are not multiples of 16 (the masked tail) and in place: each
// element as when it sits in a full vector.
TEST(UnaryF32, TailsAndInPlaceMatchTheFullVectorPath) {
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512";
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.f + 0.0241f * float(i);
  for (const Case& c : cases()) {
    std::vector<float> full(x.size());
    singa::vec::unary_run(c.kind, UnaryType::kFloat, c.p, x.data(), full.data(), int64_t(x.size()));
    for (int64_t n : {1, 7, 15, 16, 17, 31, 33, 997}) {
      std::vector<float> y(x.begin() + 3, x.begin() + 3 + n);
      singa::vec::unary_run(c.kind, UnaryType::kFloat, c.p, y.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(std::memcmp(&y[i], &full[3 + i], 4), 0) << c.name << " n = " << n;
    }
  }
}

// float16 and bfloat16: the float result rounded once to the 16-bit type
// (sdk::half / sdk::bfloat16 round to nearest even too), tails included.
TEST(UnaryF32, HalfAndBFloat16RoundTheFloatResult) {
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512";
  std::vector<float> xf;
  for (float v = -30.f; v <= 30.f; v += 0.0173f) xf.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.f, -0.f}) xf.push_back(v);
  const int64_t n = int64_t(xf.size());
  for (const Case& c : cases()) {
    std::vector<float> yf(xf.size());
    // Inputs exactly representable in both 16-bit types: rounded through bfloat16 first.
    std::vector<uint16_t> xb(xf.size()), yb(xf.size()), xh(xf.size()), yh(xf.size());
    std::vector<float> xr(xf.size());
    for (size_t i = 0; i < xf.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &xf[i], 4);
      xb[i] = uint16_t(bits >> 16);
      const uint32_t back = uint32_t(xb[i]) << 16;
      std::memcpy(&xr[i], &back, 4);
    }
    singa::vec::unary_run(c.kind, UnaryType::kFloat, c.p, xr.data(), yf.data(), n);
    ASSERT_TRUE(singa::vec::unary_run(c.kind, UnaryType::kBFloat16, c.p, xb.data(), yb.data(), n));
    for (size_t i = 0; i < xf.size(); ++i) {
      uint32_t fb;
      std::memcpy(&fb, &yf[i], 4);
      const uint16_t want = singa::sdk::bfloat16(yf[i]).bits;
      (void)fb;
      ASSERT_EQ(yb[i], want) << c.name << " bfloat16 x = " << xr[i];
    }
    // float16: inputs that are halves (|x| <= 30 and 7 mantissa bits are).
    for (size_t i = 0; i < xf.size(); ++i) {
      xh[i] = singa::sdk::half(xr[i]).bits;
    }
    ASSERT_TRUE(singa::vec::unary_run(c.kind, UnaryType::kHalf, c.p, xh.data(), yh.data(), n));
    for (size_t i = 0; i < xf.size(); ++i) {
      const uint16_t want = singa::sdk::half(yf[i]).bits;
      if (std::isnan(yf[i]))
        ASSERT_TRUE((yh[i] & 0x7c00u) == 0x7c00u && (yh[i] & 0x3ffu)) << c.name << " float16 x = " << xr[i];
      else
        ASSERT_EQ(yh[i], want) << c.name << " float16 x = " << xr[i];
    }
  }
}

// ---- The kernels (ops_nn's activations, ops_math's unary ops) through the
// runtime, at 2 threads, on a tensor whose length is a multiple neither of 16
// nor of the kernels' 16384-element parallel chunks: every element within the
// bound above of the double reference, the node's attributes applied.

#include "model_builder.hpp"
#include "test_util.hpp"

#include <singa/runtime.hpp>

namespace {

struct NodeCase {
  const char* op;
  int opset;
  std::vector<std::pair<std::string, float>> attrs;
  const char* string_attr;  // Gelu's approximate, or null
  std::function<double(float)> ref;
  double max_ulp;
};

}  // namespace

TEST(UnaryF32, KernelsThroughTheRuntimeMatchTheReference) {
  // Without AVX-512 the kernels run their scalar libm loops, which the
  // conformance suites check (their subnormal tails and GELU's negative tail
  // are not within these bounds).
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512";
  testing_util::ensure_loaded();
  const int64_t n = 3 * 16384 + 16 * 37 + 5;
  std::vector<float> xs = full_sweep();
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = xs[size_t(i * 7919) % xs.size()];
  const float a = 0.7f;
  const auto gelu_tanh_ref = [](float v) {
    const double u = 0.7978845608028654 * (double(v) + 0.044715 * double(v) * v * v);
    return std::isinf(v) && v < 0 ? NAN : double(v) * sigmoid_ref(2 * u);
  };
  const std::vector<NodeCase> nodes = {
      {"Sigmoid", 13, {}, nullptr, [](float v) { return sigmoid_ref(v); }, 4},
      {"Tanh", 13, {}, nullptr, [](float v) { return std::tanh(double(v)); }, 4},
      {"Exp", 13, {}, nullptr, [](float v) { return std::exp(double(v)); }, 3},
      {"Log", 13, {}, nullptr, [](float v) { return std::log(double(v)); }, 2},
      {"Softplus", 22, {}, nullptr, [](float v) { return softplus_ref(v); }, 4},
      {"Mish", 22, {}, nullptr,
       [](float v) { return std::isinf(v) && v < 0 ? NAN : v * std::tanh(softplus_ref(v)); }, 6},
      {"Elu", 22, {{"alpha", a}}, nullptr,
       [a](float v) { return v < 0 ? double(a) * std::expm1(double(v)) : double(v); }, 4},
      {"Celu", 22, {{"alpha", a}}, nullptr,
       [a](float v) { return v > 0 ? double(v) : double(a) * std::expm1(double(v / a)); }, 4},
      {"LeakyRelu", 16, {{"alpha", 0.1f}}, nullptr, [](float v) { return v < 0 ? double(0.1f * v) : double(v); }, 0},
      {"HardSigmoid", 22, {{"alpha", 0.3f}, {"beta", 0.4f}}, nullptr,
       [](float v) { return std::isnan(v) ? double(v) : std::min(1.0, std::max(0.0, double(0.3f) * v + double(0.4f))); },
       1},
      {"HardSwish", 22, {}, nullptr,
       [](float v) { return std::isnan(v) ? double(v) : v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5)); }, 3},
      {"Swish", 24, {{"alpha", 1.f}}, nullptr, [](float v) { return double(v) * sigmoid_ref(v); }, 4},
      {"ThresholdedRelu", 22, {{"alpha", 2.f}}, nullptr, [](float v) { return v > 2.f ? double(v) : 0.0; }, 0},
      {"Relu", 14, {}, nullptr, [](float v) { return v < 0 ? 0.0 : double(v); }, 0},
      {"Sqrt", 13, {}, nullptr, [](float v) { return std::sqrt(double(v)); }, 0.5},
      {"Reciprocal", 13, {}, nullptr, [](float v) { return 1.0 / double(v); }, 0.5},
      // x sigmoid(2u) with u rounded in float: the error grows with |u| in
      // the negative tail (see below); 0 here stands for "within that bound".
      {"Gelu", 20, {}, "tanh", gelu_tanh_ref, 0},
      {"Gelu", 20, {}, nullptr,
       [](float v) { return std::isinf(v) && v < 0 ? NAN : 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }, 7},
  };
  for (const NodeCase& c : nodes) {
    testing_util::ModelBuilder m(c.opset);
    m.model.set_ir_version(10);
    m.input("x", SINGA_ONNX_FLOAT, {n}).output("y", SINGA_ONNX_FLOAT, {n}).node(c.op, {"x"}, {"y"});
    for (const auto& [name, v] : c.attrs) {
      auto* at = m.last()->add_attribute();
      at->set_name(name);
      at->set_type(::onnx::AttributeProto::FLOAT);
      at->set_f(v);
    }
    if (c.string_attr) {
      auto* at = m.last()->add_attribute();
      at->set_name("approximate");
      at->set_type(::onnx::AttributeProto::STRING);
      at->set_s(c.string_attr);
    }
    singa::onnx::PrepareOptions o;
    o.threads = 2;
    o.optimize = false;
    auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
    auto out = rep->run({singa::Tensor::from_vector({n}, SINGA_ONNX_FLOAT, x)});
    ASSERT_EQ(out.size(), 1u);
    const float* y = out[0].second.data<float>();
    double worst = 0;
    float worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[size_t(i)];
      double e = ulp_error(y[i], c.ref(v));
      if (std::string(c.op) == "Gelu" && c.string_attr) {
        // sigmoid(2u) with 2u rounded in float: 4 ulp plus 3 per unit of |2u|.
        const double u2 = std::fabs(2 * 0.7978845608028654 * (double(v) + 0.044715 * double(v) * v * v));
        if (std::isfinite(v)) e = e <= 4 + 3 * u2 ? 0 : e;
      }
      if (e > worst) worst = e, worst_x = v;
    }
    EXPECT_LE(worst, c.max_ulp) << c.op << ": worst at x = " << worst_x;
    std::printf("  %-16s through the runtime: max error %.3g ulp\n", c.string_attr ? "Gelu(tanh)" : c.op, worst);
  }
}
