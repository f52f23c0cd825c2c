// The op matrix's session-6 paths against references written from the ONNX
// definitions, at 1 to 3 threads: Cast(float32 -> float16) feeding a
// comparison (pass cpu.cast_half_compares, kernel CastHalfCompare: rounds in
// registers, so results must equal comparisons of the rounded halves, NaN,
// signed zeros, overflow to infinity and rounding ties included, over every
// comparison and broadcast form, with one, both or a shared Cast), bfloat16
// comparisons (8 lanes through a shift), Erf / Sin / Cos of float16 and
// bfloat16 (float blocks), and the bf16-fallback warning logged once per
// process although two packs ask for it.
#include "model_builder.hpp"

#include <singa/kernel.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

using singa::Shape;
using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::f32_tensor;

class OpKernelsVec6 : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major index <-> position, for broadcast references.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    idx[k] = i % s[k];
    i /= s[k];
  }
  return idx;
}

// The offset in `s` (right-aligned against `out`, dims of 1 repeating) of output index `idx`.
int64_t broadcast_offset(const std::vector<int64_t>& idx, const Shape& out, const Shape& s) {
  int64_t o = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t d = out.size() - s.size() + k;
    o = o * s[k] + (s[k] == 1 ? 0 : idx[d]);
  }
  return o;
}

Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t da = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    const int64_t db = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    out[k] = da == 1 ? db : da;
  }
  return out;
}

uint16_t half_bits(float v) { return singa::sdk::half(v).bits; }
float half_value(uint16_t bits) {
  singa::sdk::half h;
  h.bits = bits;
  return float(h);
}

// Runs the model at 1 to 3 threads; calls check(output, rep) for each.
template <class Check>
void run_threads(const ModelBuilder& m, const std::vector<Tensor>& inputs, Check&& check,
                 const std::map<std::string, std::string>& options = {}) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    singa::onnx::PrepareOptions o;
    o.threads = threads;
    o.options = options;
    auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
    auto out = rep->run(inputs);
    ASSERT_GE(out.size(), 1u);
    check(out[0].second, *rep);
  }
}

int count_op(const singa::onnx::Rep& rep, const std::string& op) {
  int n = 0;
  for (const auto& p : rep.placement()) n += p.op_type == op;
  return n;
}

bool compare(const std::string& op, float x, float y) {
  if (op == "Equal") return x == y;
  if (op == "Less") return x < y;
  if (op == "Greater") return x > y;
  if (op == "LessOrEqual") return x <= y;
  return x >= y;
}

// Float32 values whose half roundings tie, differ by one half ulp, overflow,
// go subnormal, plus NaN and signed zeros; `seed` varies the order.
std::vector<float> tricky_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  const float pool[] = {1.0f,    1.0001f, 1.0002f, 1.00049f, 1.00098f, -1.0f, 0.5f,   -0.5f,  2.0f,
                        65504.f, 65520.f, 70000.f, -70000.f, 1e-7f,    6e-8f, -1e-7f, 0.0f,   -0.0f,
                        3.14159f, 3.1416f, -2.5f,  std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity()};
  std::uniform_int_distribution<int> pick(0, int(sizeof(pool) / sizeof(pool[0])) - 1);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = (rng() % 3) ? pool[pick(rng)] : u(rng);
  return v;
}

// ---- Cast(float32 -> float16) feeding a comparison ----

struct CmpCase {
  Shape a, b;
  bool cast_a, cast_b;
  bool same_cast = false;   // both inputs read one Cast (b ignored)
  bool cast_output = false;  // the Cast of A is also a graph output: it must stay
};

TEST_F(OpKernelsVec6, CastThenCompareEqualsComparisonOfRoundedHalves) {
  const std::vector<CmpCase> cases = {
      {{3, 5, 203}, {3, 5, 203}, true, true},   // same shape, both cast (the f16c matrix row)
      {{3, 5, 203}, {5, 1}, true, false},       // per-channel half constant-like input
      {{3, 5, 203}, {1}, false, true},          // scalar, only B cast
      {{3, 5, 203}, {203}, true, true},         // a row
      {{3, 1, 37}, {5, 1}, true, true},         // both broadcast
      {{2, 7, 9}, {2, 7, 9}, true, false, true},  // Equal(x16, x16)
      {{4, 33}, {4, 33}, true, true, false, true},
      {{1}, {1}, true, true},
      {{0, 5}, {5}, true, true},  // empty
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const CmpCase& c = cases[ci];
    const Shape b_shape = c.same_cast ? c.a : c.b;
    const Shape out = broadcast(c.a, b_shape);
    const std::vector<float> av = tricky_values(numel(c.a), unsigned(10 + ci));
    const std::vector<float> bv = tricky_values(numel(b_shape), unsigned(50 + ci));
    // Each input: float32 values (rounded by a Cast in the model) or halves.
    auto input = [](const Shape& s, const std::vector<float>& v, bool cast) {
      if (cast) return f32_tensor(s, v);
      Tensor t(s, SINGA_ONNX_FLOAT16);
      auto* p = static_cast<uint16_t*>(t.raw_data());
      for (size_t i = 0; i < v.size(); ++i) p[i] = half_bits(v[i]);
      return t;
    };
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      SCOPED_TRACE("case " + std::to_string(ci) + " " + op);
      ModelBuilder m(16);
      m.input("A", c.cast_a ? SINGA_ONNX_FLOAT : SINGA_ONNX_FLOAT16, c.a);
      std::string ha = "A", hb = "B";
      if (c.cast_a) {
        m.node("Cast", {"A"}, {"HA"});
        add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
        ha = "HA";
      }
      if (c.same_cast) {
        hb = ha;
      } else {
        m.input("B", c.cast_b ? SINGA_ONNX_FLOAT : SINGA_ONNX_FLOAT16, c.b);
        if (c.cast_b) {
          m.node("Cast", {"B"}, {"HB"});
          add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
          hb = "HB";
        }
      }
      m.node(op, {ha, hb}, {"Y"});
      m.output("Y", SINGA_ONNX_BOOL, out);
      if (c.cast_output) m.output(ha, SINGA_ONNX_FLOAT16, c.a);
      std::vector<Tensor> ins = {input(c.a, av, c.cast_a)};
      if (!c.same_cast) ins.push_back(input(c.b, bv, c.cast_b));
      const int casts_left = c.cast_output ? 1 : 0;
      for (bool fused : {true, false}) {
        SCOPED_TRACE(fused ? "pass on" : "pass off");
        std::map<std::string, std::string> opt;
        if (!fused) opt["pass.cpu.cast_half_compares"] = "0";
        run_threads(
            m, ins,
            [&](const Tensor& y, const singa::onnx::Rep& rep) {
              if (fused) {
                EXPECT_EQ(count_op(rep, "Cast"), casts_left);
                EXPECT_EQ(count_op(rep, "CastHalfCompare"), 1);
              }
              ASSERT_EQ(y.shape(), out);
              const bool* yp = static_cast<const bool*>(y.raw_data());
              for (int64_t i = 0; i < numel(out); ++i) {
                const std::vector<int64_t> idx = unravel(i, out);
                const float x = half_value(half_bits(av[size_t(broadcast_offset(idx, out, c.a))]));
                const float v = half_value(half_bits(
                    (c.same_cast ? av : bv)[size_t(broadcast_offset(idx, out, b_shape))]));
                ASSERT_EQ(yp[i], compare(op, x, v)) << "at " << i << ": " << x << " vs " << v;
              }
            },
            opt);
      }
    }
  }
}

TEST_F(OpKernelsVec6, CastHalfCompareRejectsUnknownOp) {
  ModelBuilder m(13);
  m.model.add_opset_import()->set_domain("ai.singa");
  m.model.mutable_opset_import(1)->set_version(1);
  m.input("A", SINGA_ONNX_FLOAT, {4});
  m.input("B", SINGA_ONNX_FLOAT, {4});
  m.node("CastHalfCompare", {"A", "B"}, {"Y"});
  m.last()->set_domain("ai.singa");
  auto* a = m.last()->add_attribute();
  a->set_name("op");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s("NotEqual");
  m.output("Y", SINGA_ONNX_BOOL, {4});
  singa::onnx::PrepareOptions o;
  EXPECT_THROW(singa::onnx::prepare_bytes(m.bytes(), o), std::exception);
}

// ---- bfloat16 comparisons ----

uint16_t bf16_bits(float v) { return singa::sdk::bfloat16(v).bits; }
float bf16_value(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST_F(OpKernelsVec6, BFloat16ComparisonsMatchFloatComparisons) {
  const Shape a_shape = {3, 5, 37};  // rows of 37: 4 blocks of 8 and a tail of 5
  std::mt19937 rng(71);
  std::uniform_int_distribution<int> small(-4, 4);
  Tensor a(a_shape, SINGA_ONNX_BFLOAT16);
  auto* ap = static_cast<uint16_t*>(a.raw_data());
  for (int64_t i = 0; i < numel(a_shape); ++i) ap[i] = bf16_bits(float(small(rng)) * 0.25f);
  ap[3] = 0x7fc0;  // NaN
  ap[4] = 0x8000;  // -0
  ap[5] = 0x7f80;  // +inf
  ap[6] = 0xff80;  // -inf
  for (const Shape& bs : {a_shape, Shape{5, 1}, Shape{1}, Shape{37}}) {
    Tensor b(bs, SINGA_ONNX_BFLOAT16);
    auto* bp = static_cast<uint16_t*>(b.raw_data());
    for (int64_t i = 0; i < numel(bs); ++i) bp[i] = bf16_bits(float(small(rng)) * 0.25f);
    if (numel(bs) > 6) bp[3] = 0x7fc0, bp[4] = 0x0000;
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      SCOPED_TRACE(std::string(op) + " b of " + std::to_string(numel(bs)));
      ModelBuilder m(18);
      m.input("A", SINGA_ONNX_BFLOAT16, a_shape);
      m.input("B", SINGA_ONNX_BFLOAT16, bs);
      m.node(op, {"A", "B"}, {"Y"});
      m.output("Y", SINGA_ONNX_BOOL, a_shape);
      run_threads(m, {a, b}, [&](const Tensor& y, const singa::onnx::Rep&) {
        ASSERT_EQ(y.shape(), a_shape);
        const bool* yp = static_cast<const bool*>(y.raw_data());
        for (int64_t i = 0; i < numel(a_shape); ++i) {
          const float x = bf16_value(ap[i]), v = bf16_value(bp[broadcast_offset(unravel(i, a_shape), a_shape, bs)]);
          ASSERT_EQ(yp[i], compare(op, x, v)) << "at " << i << ": " << x << " vs " << v;
        }
      });
    }
  }
}

// ---- float16 / bfloat16 Add, Sub, Mul, Div ----

// Bits of `v` rounded to the 16-bit type, as the scalar kernels round.
uint16_t bits16(int32_t dtype, float v) { return dtype == SINGA_ONNX_FLOAT16 ? half_bits(v) : bf16_bits(v); }
float value16(int32_t dtype, uint16_t b) { return dtype == SINGA_ONNX_FLOAT16 ? half_value(b) : bf16_value(b); }

TEST_F(OpKernelsVec6, HalfAndBFloat16ArithmeticIsBitExact) {
  const Shape a_shape = {2, 6, 45};  // rows of 45: 5 blocks of 8 and a tail of 5
  for (int32_t dtype : {SINGA_ONNX_FLOAT16, SINGA_ONNX_BFLOAT16}) {
    std::mt19937 rng(dtype);
    std::uniform_real_distribution<float> u(-4.f, 4.f);
    Tensor a(a_shape, dtype);
    auto* ap = static_cast<uint16_t*>(a.raw_data());
    for (int64_t i = 0; i < numel(a_shape); ++i) ap[i] = bits16(dtype, u(rng));
    ap[1] = bits16(dtype, std::numeric_limits<float>::quiet_NaN());
    ap[2] = bits16(dtype, -0.f);
    ap[3] = bits16(dtype, std::numeric_limits<float>::infinity());
    ap[4] = bits16(dtype, 60000.f);  // overflows in half when doubled
    ap[5] = bits16(dtype, 1e-6f);    // subnormal products
    ap[6] = dtype == SINGA_ONNX_FLOAT16 ? 0x7d01 : 0x7f81;  // NaNs with a payload
    ap[7] = dtype == SINGA_ONNX_FLOAT16 ? 0xfe3f : 0xffc3;
    for (const Shape& bs : {a_shape, Shape{6, 1}, Shape{1}, Shape{45}, Shape{2, 1, 1}}) {
      Tensor b(bs, dtype);
      auto* bp = static_cast<uint16_t*>(b.raw_data());
      for (int64_t i = 0; i < numel(bs); ++i) bp[i] = bits16(dtype, u(rng));
      if (numel(bs) > 5) bp[2] = bits16(dtype, 0.f), bp[4] = bits16(dtype, 60000.f), bp[5] = bits16(dtype, 1e-6f);
      for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
        SCOPED_TRACE(std::string(op) + (dtype == SINGA_ONNX_FLOAT16 ? " f16" : " bf16") + " b of " +
                     std::to_string(numel(bs)));
        ModelBuilder m(14);
        m.input("A", dtype, a_shape);
        m.input("B", dtype, bs);
        m.node(op, {"A", "B"}, {"Y"});
        m.output("Y", dtype, a_shape);
        run_threads(m, {a, b}, [&](const Tensor& y, const singa::onnx::Rep&) {
          ASSERT_EQ(y.shape(), a_shape);
          const auto* yp = static_cast<const uint16_t*>(y.raw_data());
          const std::string o = op;
          for (int64_t i = 0; i < numel(a_shape); ++i) {
            const float x = value16(dtype, ap[i]);
            const float v = value16(dtype, bp[broadcast_offset(unravel(i, a_shape), a_shape, bs)]);
            const float r = o == "Add" ? x + v : o == "Sub" ? x - v : o == "Mul" ? x * v : x / v;
            ASSERT_EQ(yp[i], bits16(dtype, r)) << "at " << i << ": " << x << " " << o << " " << v;
          }
        });
      }
    }
  }
}

TEST_F(OpKernelsVec6, HalfAndBFloat16SumMeanFoldLikeTheScalarLoop) {
  const Shape out = {3, 4, 21};
  const std::vector<Shape> shapes = {out, Shape{4, 1}, Shape{21}};
  for (int32_t dtype : {SINGA_ONNX_FLOAT16, SINGA_ONNX_BFLOAT16}) {
    std::mt19937 rng(dtype + 3);
    std::uniform_real_distribution<float> u(-100.f, 100.f);
    std::vector<Tensor> ins;
    for (const Shape& sh : shapes) {
      Tensor t(sh, dtype);
      auto* p = static_cast<uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < numel(sh); ++i) p[i] = bits16(dtype, u(rng));
      ins.push_back(t);
    }
    static_cast<uint16_t*>(ins[0].raw_data())[5] = dtype == SINGA_ONNX_FLOAT16 ? 0x7d01 : 0x7f81;
    for (const char* op : {"Sum", "Mean"}) {
      for (size_t k : {size_t(2), size_t(3)}) {
        SCOPED_TRACE(std::string(op) + " of " + std::to_string(k) + (dtype == SINGA_ONNX_FLOAT16 ? " f16" : " bf16"));
        ModelBuilder m(13);
        std::vector<std::string> names;
        for (size_t i = 0; i < k; ++i) {
          names.push_back("X" + std::to_string(i));
          m.input(names.back(), dtype, shapes[i]);
        }
        m.node(op, names, {"Y"});
        m.output("Y", dtype, out);
        run_threads(m, std::vector<Tensor>(ins.begin(), ins.begin() + long(k)), [&](const Tensor& y, const singa::onnx::Rep&) {
          const auto* yp = static_cast<const uint16_t*>(y.raw_data());
          for (int64_t i = 0; i < numel(out); ++i) {
            const std::vector<int64_t> idx = unravel(i, out);
            auto in = [&](size_t j) {
              return value16(dtype, static_cast<const uint16_t*>(ins[j].raw_data())[broadcast_offset(idx, out, shapes[j])]);
            };
            uint16_t acc = bits16(dtype, in(0) + in(1));  // each fold rounds to the 16-bit type
            for (size_t j = 2; j < k; ++j) acc = bits16(dtype, value16(dtype, acc) + in(j));
            if (std::string(op) == "Mean") acc = bits16(dtype, value16(dtype, acc) / float(k));
            ASSERT_EQ(yp[i], acc) << "at " << i;
          }
        });
      }
    }
  }
}

TEST_F(OpKernelsVec6, HalfAndBFloat16SignIsBitExact) {
  for (int32_t dtype : {SINGA_ONNX_FLOAT16, SINGA_ONNX_BFLOAT16}) {
    for (int64_t n : {1, 16, 37, 70000}) {
      SCOPED_TRACE(std::to_string(n) + (dtype == SINGA_ONNX_FLOAT16 ? " f16" : " bf16"));
      Tensor x({n}, dtype);
      auto* xp = static_cast<uint16_t*>(x.raw_data());
      for (int64_t i = 0; i < n; ++i) xp[i] = uint16_t(i * 40503u);  // every class of bit pattern
      ModelBuilder m(13);
      m.input("X", dtype, {n});
      m.node("Sign", {"X"}, {"Y"});
      m.output("Y", dtype, {n});
      run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
        const auto* yp = static_cast<const uint16_t*>(y.raw_data());
        for (int64_t i = 0; i < n; ++i) {
          const float v = value16(dtype, xp[i]);
          ASSERT_EQ(yp[i], bits16(dtype, v > 0 ? 1.f : v < 0 ? -1.f : v)) << "at " << i << " bits " << xp[i];
        }
      });
    }
  }
}

// A lone elementwise chain after a Cast to float16 stays in half (no Cast
// pair around each op) and gives the bits of the half kernels run node by node.
TEST_F(OpKernelsVec6, ElementwiseAfterCastToHalfStaysInHalf) {
  const Shape s = {3, 17, 29};
  const std::vector<float> x = tricky_values(numel(s), 91);
  std::vector<float> cv(29);
  for (size_t i = 0; i < cv.size(); ++i) cv[i] = 0.25f * float(i) - 3.f;
  Tensor c({29}, SINGA_ONNX_FLOAT16);
  for (size_t i = 0; i < cv.size(); ++i) static_cast<uint16_t*>(c.raw_data())[i] = half_bits(cv[i]);
  for (const char* act : {"Sigmoid", "Tanh", "Exp", "Abs", "Erf", "Sqrt"}) {
    SCOPED_TRACE(act);
    ModelBuilder m(14);
    m.input("X", SINGA_ONNX_FLOAT, s);
    m.initializer("C", c);
    m.node("Cast", {"X"}, {"H"});
    add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
    m.node("Mul", {"H", "C"}, {"M"});
    m.node(act, {"M"}, {"Y"});
    m.output("Y", SINGA_ONNX_FLOAT16, s);
    const Tensor xt = f32_tensor(s, x);
    const std::string a = act;
    run_threads(m, {xt}, [&](const Tensor& y, const singa::onnx::Rep& rep) {
      EXPECT_EQ(count_op(rep, "Cast"), 1) << "only the model's own Cast";
      const auto* yp = static_cast<const uint16_t*>(y.raw_data());
      for (int64_t i = 0; i < numel(s); ++i) {
        // ONNX's node-by-node half semantics: the product is rounded to half before the activation.
        const double p = half_value(half_bits(half_value(half_bits(x[size_t(i)])) * cv[size_t(i % 29)]));
        const double want = a == "Sigmoid" ? 1.0 / (1.0 + std::exp(-p)) : a == "Tanh" ? std::tanh(p)
                            : a == "Exp" ? std::exp(p) : a == "Abs" ? std::fabs(p) : a == "Erf" ? std::erf(p)
                            : std::sqrt(p);
        const float got = half_value(yp[i]);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << "at " << i;
        } else if (std::isinf(want) || std::fabs(want) > 65504.0) {
          ASSERT_TRUE(std::isinf(got) || std::fabs(got) >= 65504.f) << "at " << i;
        } else {
          ASSERT_NEAR(got, want, std::ldexp(std::max(std::fabs(want), 6e-5), -10)) << "at " << i << " p " << p;
        }
      }
    });
  }
}

// ---- Erf / Sin / Cos of float16 and bfloat16 ----

TEST_F(OpKernelsVec6, HalfAndBFloat16ErfSinCosMatchDoubleReference) {
  for (int32_t dtype : {SINGA_ONNX_FLOAT16, SINGA_ONNX_BFLOAT16}) {
    for (const char* op : {"Erf", "Sin", "Cos"}) {
      for (int64_t n : {1, 15, 256, 257, 1000, 40000}) {
        SCOPED_TRACE(std::string(op) + (dtype == SINGA_ONNX_FLOAT16 ? " f16 " : " bf16 ") + std::to_string(n));
        std::mt19937 rng(static_cast<unsigned>(n));
        std::uniform_real_distribution<float> u(-8.f, 8.f);
        Tensor x({n}, dtype);
        auto* xp = static_cast<uint16_t*>(x.raw_data());
        const bool f16 = dtype == SINGA_ONNX_FLOAT16;
        for (int64_t i = 0; i < n; ++i) xp[i] = f16 ? half_bits(u(rng)) : bf16_bits(u(rng));
        if (n > 4) xp[1] = f16 ? 0x7e00 : 0x7fc0, xp[2] = f16 ? 0x8000 : 0x8000, xp[3] = f16 ? 0x7c00 : 0x7f80;
        ModelBuilder m(22);
        m.input("X", dtype, {n});
        m.node(op, {"X"}, {"Y"});
        m.output("Y", dtype, {n});
        run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
          const auto* yp = static_cast<const uint16_t*>(y.raw_data());
          for (int64_t i = 0; i < n; ++i) {
            const double v = f16 ? half_value(xp[i]) : bf16_value(xp[i]);
            const std::string o = op;
            const double want = o == "Erf" ? std::erf(v) : o == "Sin" ? std::sin(v) : std::cos(v);
            const float got = f16 ? half_value(yp[i]) : bf16_value(yp[i]);
            if (std::isnan(want) || std::isinf(v)) {
              ASSERT_TRUE(std::isnan(got) || (o == "Erf" && got == float(want))) << "at " << i << " x " << v;
              continue;
            }
            // One unit in the last place of the 16-bit type (10 or 7 mantissa bits), near zero absolute.
            const double ulp = std::ldexp(std::max(std::fabs(want), 6e-5), f16 ? -10 : -7);
            ASSERT_NEAR(got, want, ulp) << "at " << i << " x " << v;
            if (v == 0.0 && o != "Cos") {
              ASSERT_EQ(std::signbit(got), std::signbit(v)) << "signed zero at " << i;
            }
          }
        });
      }
    }
  }
}

// ---- double Sqrt / Reciprocal; float16 Resize through float rows ----

TEST_F(OpKernelsVec6, DoubleSqrtAndReciprocalAreCorrectlyRounded) {
  for (int64_t n : {1, 7, 8, 9, 100, 20001}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<double> u(-2.0, 1e6);
    std::vector<double> x(static_cast<size_t>(n));
    for (double& v : x) v = u(rng);
    if (n > 5) x[0] = -0.0, x[1] = 0.0, x[2] = std::numeric_limits<double>::infinity(), x[3] = -1.0, x[4] = 4.9e-324;
    for (const char* op : {"Sqrt", "Reciprocal"}) {
      SCOPED_TRACE(std::string(op) + " n " + std::to_string(n));
      ModelBuilder m(14);
      m.input("X", SINGA_ONNX_DOUBLE, {n});
      m.node(op, {"X"}, {"Y"});
      m.output("Y", SINGA_ONNX_DOUBLE, {n});
      run_threads(m, {Tensor::from_vector({n}, SINGA_ONNX_DOUBLE, x)}, [&](const Tensor& y, const singa::onnx::Rep&) {
        const double* yp = static_cast<const double*>(y.raw_data());
        for (int64_t i = 0; i < n; ++i) {
          const double want = std::string(op) == "Sqrt" ? std::sqrt(x[size_t(i)]) : 1.0 / x[size_t(i)];
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(yp[i])) << "at " << i;
          } else {
            ASSERT_EQ(std::memcmp(&yp[i], &want, 8), 0) << "at " << i << ": " << yp[i] << " vs " << want;
          }
        }
      });
    }
  }
}

TEST_F(OpKernelsVec6, HalfResizeMatchesFloatResizeRounded) {
  struct Case {
    Shape in, out;
    const char* mode;
    const char* coord;
  };
  const std::vector<Case> cases = {{{1, 3, 7, 9}, {1, 3, 14, 18}, "linear", "half_pixel"},
                                   {{2, 2, 5, 6}, {2, 2, 3, 13}, "linear", "align_corners"},
                                   {{1, 2, 6, 6}, {1, 2, 11, 9}, "cubic", "pytorch_half_pixel"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + c.coord);
    const std::vector<float> x = [&] {
      std::vector<float> v(static_cast<size_t>(numel(c.in)));
      std::mt19937 rng(5);
      std::uniform_real_distribution<float> u(-3.f, 3.f);
      for (float& e : v) e = half_value(half_bits(u(rng)));  // exact halves
      return v;
    }();
    auto model = [&](int32_t dtype) {
      ModelBuilder m(19);
      m.input("X", dtype, c.in);
      m.initializer("roi", f32_tensor({0}, {}));
      m.initializer("scales", f32_tensor({0}, {}));
      m.initializer("sizes", Tensor::from_vector({4}, SINGA_ONNX_INT64, std::vector<int64_t>(c.out.begin(), c.out.end())));
      m.node("Resize", {"X", "roi", "scales", "sizes"}, {"Y"});
      auto* a = m.last()->add_attribute();
      a->set_name("mode"), a->set_type(::onnx::AttributeProto::STRING), a->set_s(c.mode);
      a = m.last()->add_attribute();
      a->set_name("coordinate_transformation_mode"), a->set_type(::onnx::AttributeProto::STRING), a->set_s(c.coord);
      m.output("Y", dtype, c.out);
      return m;
    };
    singa::onnx::PrepareOptions o;
    const Tensor ref = singa::onnx::prepare_bytes(model(SINGA_ONNX_FLOAT).bytes(), o)->run({f32_tensor(c.in, x)}).at(0).second;
    Tensor xh(c.in, SINGA_ONNX_FLOAT16);
    for (size_t i = 0; i < x.size(); ++i) static_cast<uint16_t*>(xh.raw_data())[i] = half_bits(x[i]);
    // Widened to float32 by the pass, and in half (the pass off).
    for (const char* widen : {"1", "0"}) {
      SCOPED_TRACE(std::string("pass.cpu.float16_as_float32=") + widen);
      run_threads(
          model(SINGA_ONNX_FLOAT16), {xh},
          [&](const Tensor& y, const singa::onnx::Rep&) {
            ASSERT_EQ(y.shape(), c.out);
            const auto* yp = static_cast<const uint16_t*>(y.raw_data());
            const float* rp = static_cast<const float*>(ref.raw_data());
            for (int64_t i = 0; i < numel(c.out); ++i) ASSERT_EQ(yp[i], half_bits(rp[i])) << "at " << i;
          },
          {{"pass.cpu.float16_as_float32", widen}});
    }
  }
}

TEST_F(OpKernelsVec6, HalfRmsNormalizationMatchesDoubleReference) {
  for (const Shape& xs : {Shape{2, 5, 768}, Shape{3, 37}, Shape{4, 3, 7}}) {
    const int64_t D = xs.back(), rows = numel(xs) / D;
    std::mt19937 rng(static_cast<unsigned>(D));
    std::uniform_real_distribution<float> u(-3.f, 3.f);
    Tensor x(xs, SINGA_ONNX_FLOAT16), sc({D}, SINGA_ONNX_FLOAT16);
    auto* xp = static_cast<uint16_t*>(x.raw_data());
    auto* sp = static_cast<uint16_t*>(sc.raw_data());
    for (int64_t i = 0; i < numel(xs); ++i) xp[i] = half_bits(u(rng));
    for (int64_t i = 0; i < D; ++i) sp[i] = half_bits(u(rng));
    SCOPED_TRACE("D " + std::to_string(D));
    ModelBuilder m(23);
    m.input("X", SINGA_ONNX_FLOAT16, xs);
    m.initializer("S", sc);
    m.node("RMSNormalization", {"X", "S"}, {"Y"});
    m.output("Y", SINGA_ONNX_FLOAT16, xs);
    run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
      const auto* yp = static_cast<const uint16_t*>(y.raw_data());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < D; ++i) ss += double(half_value(xp[r * D + i])) * half_value(xp[r * D + i]);
        const double inv = 1.0 / std::sqrt(ss / double(D) + 1e-5);
        for (int64_t i = 0; i < D; ++i) {
          const double want = half_value(xp[r * D + i]) * inv * half_value(sp[i]);
          ASSERT_NEAR(half_value(yp[r * D + i]), want, std::ldexp(std::max(std::fabs(want), 6e-5), -10))
              << "row " << r << " at " << i;
        }
      }
    });
  }
}

// GroupNormalization (opsets 18 and 21), InstanceNormalization and
// LayerNormalization of float16 (normalise_runs' float rows), in half (the
// widening pass off) and widened, against a double evaluation.
TEST_F(OpKernelsVec6, HalfGroupInstanceLayerNormMatchDoubleReference) {
  const Shape xs = {2, 6, 5, 7};
  const int64_t N = 2, C = 6, S = 35;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Tensor x(xs, SINGA_ONNX_FLOAT16);
  auto* xp = static_cast<uint16_t*>(x.raw_data());
  for (int64_t i = 0; i < numel(xs); ++i) xp[i] = half_bits(u(rng) + (i % 3));
  auto halves = [&](int64_t n) {
    Tensor t({n}, SINGA_ONNX_FLOAT16);
    for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(t.raw_data())[i] = half_bits(u(rng));
    return t;
  };
  auto hv = [](const Tensor& t, int64_t i) { return double(half_value(static_cast<const uint16_t*>(t.raw_data())[i])); };
  struct Case {
    const char* op;
    int opset;
    int64_t groups;  // run = `groups` of the channels; 0: LayerNorm over the last axis
    int64_t params;
  };
  for (const Case& c : {Case{"GroupNormalization", 18, 3, 3}, Case{"GroupNormalization", 21, 2, 6},
                        Case{"InstanceNormalization", 6, 6, 6}, Case{"LayerNormalization", 17, 0, 7}}) {
    SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset));
    const Tensor sc = halves(c.params), bi = halves(c.params);
    ModelBuilder m(c.opset);
    m.input("X", SINGA_ONNX_FLOAT16, xs);
    m.initializer("S", sc);
    m.initializer("B", bi);
    m.node(c.op, {"X", "S", "B"}, {"Y"});
    if (std::string(c.op) == "GroupNormalization") add_int(m.last(), "num_groups", c.groups);
    m.output("Y", SINGA_ONNX_FLOAT16, xs);
    // Runs of the statistic and the parameter index of element i.
    const int64_t run = c.groups ? (C / c.groups) * S : 7;
    auto param = [&](int64_t i) -> int64_t {
      if (!c.groups) return i % 7;
      const int64_t ch = (i / S) % C;
      return c.params == C ? ch : ch / (C / c.groups);
    };
    for (const char* widen : {"0", "1"}) {
      SCOPED_TRACE(std::string("widen ") + widen);
      run_threads(
          m, {x},
          [&](const Tensor& y, const singa::onnx::Rep&) {
            const auto* yp = static_cast<const uint16_t*>(y.raw_data());
            for (int64_t r0 = 0; r0 < numel(xs); r0 += run) {
              double mean = 0, var = 0;
              for (int64_t i = r0; i < r0 + run; ++i) mean += half_value(xp[i]);
              mean /= double(run);
              for (int64_t i = r0; i < r0 + run; ++i) var += (half_value(xp[i]) - mean) * (half_value(xp[i]) - mean);
              var /= double(run);
              for (int64_t i = r0; i < r0 + run; ++i) {
                const double want = (half_value(xp[i]) - mean) / std::sqrt(var + 1e-5) * hv(sc, param(i)) + hv(bi, param(i));
                ASSERT_NEAR(half_value(yp[i]), want, std::ldexp(std::max(std::fabs(want), 6e-5), -9)) << "at " << i;
              }
            }
          },
          {{"pass.cpu.float16_as_float32", widen}});
    }
  }
  (void)N;
}

// ---- the bf16 fallback warning, once per process ----

// Prepares a Conv (ops_nn's pass) then MatMul (ops_math's pass) model twice
// under cpu.precision=bf16 with oneDNN capped below AVX512-BF16: each pack
// would log its own warning without a process-wide mark.
TEST_F(OpKernelsVec6, Bf16FallbackWarningLoggedOncePerProcess) {
  if (std::getenv("SINGA_VEC6_BF16_CHILD")) {
    ModelBuilder m(13);
    m.input("X", SINGA_ONNX_FLOAT, {1, 4, 3, 3});
    m.initializer("W", f32_tensor({4, 4, 1, 1}, std::vector<float>(16, 0.5f)));
    m.initializer("M", f32_tensor({3, 3}, std::vector<float>(9, 0.25f)));
    m.node("Conv", {"X", "W"}, {"C"});
    m.node("MatMul", {"C", "M"}, {"Y"});
    m.output("Y", SINGA_ONNX_FLOAT, {1, 4, 3, 3});
    for (int k = 0; k < 2; ++k) {
      singa::onnx::PrepareOptions o;
      o.options["cpu.precision"] = "bf16";
      auto rep = singa::onnx::prepare_bytes(m.bytes(), o);
      rep->run({f32_tensor({1, 4, 3, 3}, std::vector<float>(36, 1.f))});
    }
    return;
  }
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 to cap oneDNN's ISA at";
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(len, 0);
  exe[len] = '\0';
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ONEDNN_MAX_CPU_ISA=", 19) != 0 && std::strncmp(*e, "SINGA_LOGGED_", 13) != 0) env.push_back(*e);
  env.push_back("ONEDNN_MAX_CPU_ISA=AVX512_CORE");
  env.push_back("SINGA_VEC6_BF16_CHILD=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string log = "/tmp/singa_vec6_bf16_" + std::to_string(getpid()) + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string filter = "--gtest_filter=OpKernelsVec6.Bf16FallbackWarningLoggedOncePerProcess";
  char* argv[] = {exe, filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe, &fa, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(log.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ss.str();
  const std::string text = ss.str(), needle = "option cpu.precision=bf16: this CPU";
  int count = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++count;
  EXPECT_EQ(count, 1) << text;
}

// float16 MaxPool (with Indices) and AveragePool run on the float kernels in
// groups of planes: against a window-by-window double evaluation of the ONNX
// definitions over kernel sizes, strides, pads, ceil_mode and
// count_include_pad, on tensors large enough to take several groups. Max is
// exact (ties keep the first tap in row-major order); an average is within
// one half rounding of the exact mean.
TEST_F(OpKernelsVec6, HalfPoolsMatchWindowReference) {
  struct Case {
    Shape in;
    int64_t kh, kw, sh, sw, pt, pl, pb, pr;
    int ceil;
    int include_pad;
  };
  const std::vector<Case> cases = {{{2, 40, 40, 50}, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},
                                   {{1, 3, 7, 9}, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0},
                                   {{2, 70, 28, 28}, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1},
                                   {{1, 5, 11, 13}, 3, 3, 2, 2, 0, 0, 0, 0, 1, 0},
                                   {{1, 17, 12, 10}, 5, 3, 2, 1, 2, 1, 1, 0, 0, 1},
                                   {{3, 33, 6, 5}, 1, 4, 1, 3, 0, 2, 0, 2, 1, 0}};
  for (const Case& c : cases) {
    const int64_t N = c.in[0], C = c.in[1], H = c.in[2], W = c.in[3];
    auto out_dim = [&](int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe) {
      const int64_t span = in + pb + pe - k;
      int64_t o = (c.ceil ? (span + s - 1) / s : span / s) + 1;
      if (c.ceil && (o - 1) * s >= in + pb) --o;  // the last window would start in the end padding
      return o;
    };
    const int64_t OH = out_dim(H, c.kh, c.sh, c.pt, c.pb), OW = out_dim(W, c.kw, c.sw, c.pl, c.pr);
    const Shape ys{N, C, OH, OW};
    SCOPED_TRACE("case " + std::to_string(&c - cases.data()));
    std::mt19937 rng(static_cast<unsigned>(H * 31 + W));
    std::uniform_int_distribution<int> level(-24, 24);  // coarse levels: many ties
    Tensor x(c.in, SINGA_ONNX_FLOAT16);
    auto* xp = static_cast<uint16_t*>(x.raw_data());
    for (int64_t i = 0; i < numel(c.in); ++i) xp[i] = half_bits(float(level(rng)) * 0.375f + 0.001f * float(i % 7));
    for (const char* op : {"MaxPool", "AveragePool"}) {
      SCOPED_TRACE(op);
      const bool is_max = std::string(op) == "MaxPool";
      ModelBuilder m(19);
      m.input("X", SINGA_ONNX_FLOAT16, c.in);
      m.node(op, {"X"}, is_max ? std::vector<std::string>{"Y", "I"} : std::vector<std::string>{"Y"});
      testing_util::add_ints(m.last(), "kernel_shape", {c.kh, c.kw});
      testing_util::add_ints(m.last(), "strides", {c.sh, c.sw});
      testing_util::add_ints(m.last(), "pads", {c.pt, c.pl, c.pb, c.pr});
      add_int(m.last(), "ceil_mode", c.ceil);
      if (!is_max) add_int(m.last(), "count_include_pad", c.include_pad);
      m.output("Y", SINGA_ONNX_FLOAT16, ys);
      if (is_max) m.output("I", SINGA_ONNX_INT64, ys);
      for (const char* widen : {"1", "0"})
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(std::string("widen ") + widen + " threads " + std::to_string(threads));
          singa::onnx::PrepareOptions o;
          o.threads = threads;
          o.options = {{"pass.cpu.float16_as_float32", widen}};
          auto out = singa::onnx::prepare_bytes(m.bytes(), o)->run({x});
          ASSERT_EQ(out.size(), is_max ? 2u : 1u);
          ASSERT_EQ(out[0].second.shape(), ys);
          const auto* yp = static_cast<const uint16_t*>(out[0].second.raw_data());
          const int64_t* ip = is_max ? static_cast<const int64_t*>(out[1].second.raw_data()) : nullptr;
          for (int64_t p = 0; p < N * C; ++p)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                double best = 0, sum = 0;
                int64_t at = -1, taps = 0, padded = 0;
                for (int64_t i = 0; i < c.kh; ++i)
                  for (int64_t j = 0; j < c.kw; ++j) {
                    const int64_t h = oh * c.sh - c.pt + i, w = ow * c.sw - c.pl + j;
                    padded += h < H + c.pb && w < W + c.pr;
                    if (h < 0 || h >= H || w < 0 || w >= W) continue;
                    const double v = half_value(xp[p * H * W + h * W + w]);
                    if (at < 0 || v > best) best = v, at = p * H * W + h * W + w;
                    sum += v, ++taps;
                  }
                const int64_t o = p * OH * OW + oh * OW + ow;
                if (is_max) {
                  ASSERT_EQ(yp[o], half_bits(float(best))) << "at " << o;
                  ASSERT_EQ(ip[o], at) << "at " << o;
                } else {
                  const double want = sum / double(c.include_pad ? padded : taps);
                  ASSERT_NEAR(half_value(yp[o]), want, std::ldexp(std::max(std::fabs(want), 6e-5), -11)) << "at " << o;
                }
              }
        }
    }
  }
}

// float16 inference BatchNormalization (blocks widened into the float
// kernel), in half and widened, over channel counts and plane sizes that
// are not block multiples, against a double evaluation of
// (x - mean) / sqrt(var + eps) * scale + B: within one half rounding.
TEST_F(OpKernelsVec6, HalfBatchNormalizationMatchesDoubleReference) {
  for (const Shape& xs : {Shape{1, 64, 56, 56}, Shape{2, 3, 7, 5}, Shape{3, 17, 45}, Shape{2, 5}}) {
    const int64_t C = xs[1], S = numel(xs) / (xs[0] * C);
    SCOPED_TRACE(std::to_string(C) + " channels, " + std::to_string(S) + " per plane");
    std::mt19937 rng(static_cast<unsigned>(C * 7 + S));
    std::uniform_real_distribution<float> u(-3.f, 3.f), pos(0.2f, 2.f);
    Tensor x(xs, SINGA_ONNX_FLOAT16);
    auto* xp = static_cast<uint16_t*>(x.raw_data());
    for (int64_t i = 0; i < numel(xs); ++i) xp[i] = half_bits(u(rng));
    std::vector<Tensor> params;
    for (int k = 0; k < 4; ++k) {
      Tensor t({C}, SINGA_ONNX_FLOAT16);
      for (int64_t i = 0; i < C; ++i) static_cast<uint16_t*>(t.raw_data())[i] = half_bits(k == 3 ? pos(rng) : u(rng));
      params.push_back(t);
    }
    const char* names[4] = {"scale", "B", "mean", "var"};
    ModelBuilder m(15);
    m.input("X", SINGA_ONNX_FLOAT16, xs);
    for (int k = 0; k < 4; ++k) m.initializer(names[k], params[size_t(k)]);
    m.node("BatchNormalization", {"X", "scale", "B", "mean", "var"}, {"Y"});
    testing_util::add_float(m.last(), "epsilon", 1e-3f);
    m.output("Y", SINGA_ONNX_FLOAT16, xs);
    auto param = [&](int k, int64_t ch) { return double(half_value(static_cast<const uint16_t*>(params[size_t(k)].raw_data())[ch])); };
    for (const char* widen : {"1", "0"}) {
      SCOPED_TRACE(std::string("pass.cpu.float16_as_float32=") + widen);
      run_threads(
          m, {x},
          [&](const Tensor& y, const singa::onnx::Rep&) {
            ASSERT_EQ(y.shape(), xs);
            const auto* yp = static_cast<const uint16_t*>(y.raw_data());
            for (int64_t i = 0; i < numel(xs); ++i) {
              const int64_t ch = (i / S) % C;
              const double scaled = (half_value(xp[i]) - param(2, ch)) / std::sqrt(param(3, ch) + double(1e-3f)) * param(0, ch);
              const double want = scaled + param(1, ch);
              // Half a half ulp of the result, plus float rounding of the terms it is summed from.
              const double tol = std::ldexp(std::max(std::fabs(want), 6e-5), -11) +
                                 std::ldexp(std::fabs(scaled) + std::fabs(param(1, ch)) + std::fabs(half_value(xp[i])), -20);
              ASSERT_NEAR(half_value(yp[i]), want, tol) << "at " << i;
            }
          },
          {{"pass.cpu.float16_as_float32", widen}});
    }
  }
}

}  // namespace

// float64 Tanh and Mish (8 AVX-512 lanes, tanh_f64_avx512.hpp) against long
// double references over a dense sweep: tiny and subnormal inputs, the switch
// at |x| = 0.625, the saturation past 19, +-0, +-inf, NaN; the error in units
// of the double's last place must stay within a few ulp (libm's own is printed).
double ulp_error(double y, long double ref) {
  const double r = static_cast<double>(ref);
  if (r == 0) return y == 0 ? 0 : std::numeric_limits<double>::infinity();
  const double step = std::nextafter(std::fabs(r), std::numeric_limits<double>::infinity()) - std::fabs(r);
  return static_cast<double>(std::fabs(static_cast<long double>(y) - ref) / step);
}

long double mish_ref(long double x) { return x * std::tanh(std::log1p(std::exp(x))); }

TEST_F(OpKernelsVec6, DoubleTanhAndMishWithinFewUlpOfLongDouble) {
  std::vector<double> x;
  for (double m = 1e-310; m < 1e3; m *= 1.0007) x.push_back(m), x.push_back(-m);
  for (double v = -25; v <= 25; v += 1.0 / 1024) x.push_back(v);
  for (double v = 0.62; v <= 0.63; v += 1e-6) x.push_back(v), x.push_back(-v);
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 4.9e-324, -4.9e-324, 19.06, 22.0,
                   40.0, 1e300, -1e300, -708.0, -745.0})
    x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  for (const char* op : {"Tanh", "Mish"}) {
    SCOPED_TRACE(op);
    const bool tanh = std::string(op) == "Tanh";
    ModelBuilder m(18);
    m.input("X", SINGA_ONNX_DOUBLE, {n});
    m.node(op, {"X"}, {"Y"});
    m.output("Y", SINGA_ONNX_DOUBLE, {n});
    run_threads(m, {Tensor::from_vector({n}, SINGA_ONNX_DOUBLE, x)}, [&](const Tensor& y, const singa::onnx::Rep&) {
      const double* yp = static_cast<const double*>(y.raw_data());
      double worst = 0, worst_libm = 0, at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double xi = x[size_t(i)];
        const double libm = tanh ? std::tanh(xi) : xi * std::tanh(std::log1p(std::exp(xi)));
        if (std::isnan(libm)) {
          ASSERT_TRUE(std::isnan(yp[i])) << "at x = " << xi;
          continue;
        }
        if (std::isinf(libm) || xi == 0) {  // +-inf, and +-0 with its sign
          ASSERT_EQ(std::memcmp(&yp[i], &libm, 8), 0) << "at x = " << xi << ": " << yp[i] << " vs " << libm;
          continue;
        }
        const long double ref = tanh ? std::tanh(static_cast<long double>(xi)) : mish_ref(xi);
        if (std::fabs(static_cast<double>(ref)) < std::numeric_limits<double>::min()) {
          // Subnormal results (Mish below x = -708, where libm's exp already
          // flushes to 0 past -745): an absolute bound.
          ASSERT_LE(std::fabs(static_cast<long double>(yp[i]) - ref), 1e3 * 4.9e-324) << "at x = " << xi;
          continue;
        }
        ASSERT_EQ(std::signbit(yp[i]), std::signbit(libm)) << "at x = " << xi;
        const double e = ulp_error(yp[i], ref);
        if (e > worst) worst = e, at = xi;
        worst_libm = std::max(worst_libm, ulp_error(libm, ref));
      }
      std::printf("%s float64: max %.2f ulp at x = %.17g (libm %.2f ulp) over %lld values\n", op, worst, at,
                  worst_libm, static_cast<long long>(n));
      EXPECT_LE(worst, tanh ? 2.5 : 4.0);
    });
  }
}

// Equal-shape float16 / bfloat16 Sum and Mean fold all inputs per cached
// piece (variadic.cpp): bit-exact with the node-by-node rounded fold over
// sizes around the piece length, 2 to 5 inputs, one of rank 2.
TEST_F(OpKernelsVec6, HalfSumMeanOfEqualShapesFoldsPerPiece) {
  for (int32_t dtype : {SINGA_ONNX_FLOAT16, SINGA_ONNX_BFLOAT16}) {
    for (int64_t len : {int64_t(1), int64_t(9), int64_t(4095), int64_t(4097), int64_t(3 * 4096 + 5)}) {
      std::mt19937 rng(static_cast<unsigned>(len + dtype));
      std::uniform_real_distribution<float> u(-300.f, 300.f);
      std::vector<Tensor> ins;
      for (int j = 0; j < 5; ++j) {
        Tensor t(j == 1 ? Shape{1, len} : Shape{len}, dtype);
        auto* p = static_cast<uint16_t*>(t.raw_data());
        for (int64_t i = 0; i < len; ++i) p[i] = bits16(dtype, u(rng));
        ins.push_back(t);
      }
      // A payload NaN and an overflow to infinity in the fold.
      if (len > 8) {
        static_cast<uint16_t*>(ins[2].raw_data())[len - 1] = dtype == SINGA_ONNX_FLOAT16 ? 0x7d01 : 0x7f81;
        static_cast<uint16_t*>(ins[0].raw_data())[3] = bits16(dtype, dtype == SINGA_ONNX_FLOAT16 ? 60000.f : 3e38f);
        static_cast<uint16_t*>(ins[1].raw_data())[3] = bits16(dtype, dtype == SINGA_ONNX_FLOAT16 ? 60000.f : 3e38f);
      }
      for (const char* op : {"Sum", "Mean"}) {
        for (size_t k : {size_t(2), size_t(3), size_t(5)}) {
          SCOPED_TRACE(std::string(op) + " of " + std::to_string(k) + " len " + std::to_string(len) +
                       (dtype == SINGA_ONNX_FLOAT16 ? " f16" : " bf16"));
          ModelBuilder m(13);
          std::vector<std::string> names;
          for (size_t i = 0; i < k; ++i) {
            names.push_back("X" + std::to_string(i));
            m.input(names.back(), dtype, ins[i].shape());
          }
          m.node(op, names, {"Y"});
          const Shape out = k > 1 ? Shape{1, len} : Shape{len};
          m.output("Y", dtype, out);
          run_threads(m, std::vector<Tensor>(ins.begin(), ins.begin() + long(k)), [&](const Tensor& y, const singa::onnx::Rep&) {
            ASSERT_EQ(y.shape(), out);
            const auto* yp = static_cast<const uint16_t*>(y.raw_data());
            for (int64_t i = 0; i < len; ++i) {
              auto in = [&](size_t j) { return value16(dtype, static_cast<const uint16_t*>(ins[j].raw_data())[i]); };
              uint16_t acc = bits16(dtype, in(0) + in(1));
              for (size_t j = 2; j < k; ++j) acc = bits16(dtype, value16(dtype, acc) + in(j));
              if (std::string(op) == "Mean") acc = bits16(dtype, value16(dtype, acc) / float(k));
              ASSERT_EQ(yp[i], acc) << "at " << i;
            }
          });
        }
      }
    }
  }
}
