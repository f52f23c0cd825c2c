// The op matrix's layout, upsampling and float16-reduction paths (bench/ops)
// against scalar references written from the ONNX definitions, at 1 to 3
// threads: Expand and Tile (repeat_copy.hpp: fills, row copies, doubling
// copies, task splits), Transpose of 4- and 2-byte elements by 16 x 16 blocks
// (transpose_blocked.hpp) over every 4-D permutation and ragged edges,
// float16 comparisons through F16C (compare.cpp; NaN, signed zeros, infinities),
// ConvTranspose without overlapping windows (conv_transpose_direct.hpp:
// stride == kernel, gaps, pads, output_padding, groups, 1-D to 3-D), and a
// Cast to float16 read by one reduction (widen_float16.cpp's
// reduce_before_cast): bit-identical to the float16 kernels on the Cast's
// output, NaN and overflow to infinity included.
#include "model_builder.hpp"

#include <singa/kernel.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using singa::Shape;
using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::i64_tensor;
using testing_util::prepare_at;

class OpKernelsVec5 : public ::testing::Test {
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

std::vector<float> values(int64_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Runs the model at 1 to 3 threads; calls check(output, rep) for each.
template <class Check>
void run_threads(const ModelBuilder& m, const std::vector<Tensor>& inputs, Check&& check,
                 const std::map<std::string, std::string>& options = {}) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto rep = prepare_at(m, threads, options);
    auto out = rep->run(inputs);
    ASSERT_EQ(out.size(), 1u);
    check(out[0].second, *rep);
  }
}

// Row-major index -> source offset of a broadcast/tile read, for references.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    idx[k] = i % s[k];
    i /= s[k];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t o = 0;
  for (size_t k = 0; k < s.size(); ++k) o = o * s[k] + idx[k];
  return o;
}

// Element bytes of each dtype these tests move.
size_t elem_bytes(int32_t dtype) {
  switch (dtype) {
    case SINGA_ONNX_UINT8: return 1;
    case SINGA_ONNX_FLOAT16: return 2;
    case SINGA_ONNX_FLOAT:
    case SINGA_ONNX_INT32: return 4;
    default: return 8;  // INT64, DOUBLE
  }
}

// A tensor of distinct-ish bit patterns (valid values for every dtype used).
Tensor pattern(const Shape& s, int32_t dtype, unsigned seed) {
  Tensor t(s, dtype);
  const size_t es = elem_bytes(dtype);
  auto* p = static_cast<unsigned char*>(t.raw_data());
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < numel(s); ++i) {
    if (dtype == SINGA_ONNX_FLOAT) {
      const float v = float(rng() % 100000) / 7.f;
      std::memcpy(p + i * 4, &v, 4);
    } else if (dtype == SINGA_ONNX_DOUBLE) {
      const double v = double(rng() % 100000) / 7.0;
      std::memcpy(p + i * 8, &v, 8);
    } else if (dtype == SINGA_ONNX_FLOAT16) {
      const uint16_t v = uint16_t(rng() % 0x7000);  // finite halves
      std::memcpy(p + i * 2, &v, 2);
    } else {
      for (size_t b = 0; b < es; ++b) p[size_t(i) * es + b] = static_cast<unsigned char>(rng());
    }
  }
  return t;
}

uint16_t half_bits(float v) { return singa::sdk::half(v).bits; }
float half_value(uint16_t bits) {
  singa::sdk::half h;
  h.bits = bits;
  return float(h);
}

// ---- Expand and Tile ----

// y[idx] = x[idx mapped through `src_index`], byte-compared.
void expect_gather(const Tensor& y, const Shape& out_shape, const Tensor& x, int32_t dtype,
                   const std::function<int64_t(const std::vector<int64_t>&)>& src_index) {
  ASSERT_EQ(y.shape(), out_shape);
  ASSERT_EQ(y.dtype(), dtype);
  const size_t es = elem_bytes(dtype);
  const auto* yp = static_cast<const unsigned char*>(y.raw_data());
  const auto* xp = static_cast<const unsigned char*>(x.raw_data());
  for (int64_t i = 0; i < numel(out_shape); ++i) {
    const int64_t s = src_index(unravel(i, out_shape));
    ASSERT_EQ(std::memcmp(yp + size_t(i) * es, xp + size_t(s) * es, es), 0)
        << "at flat index " << i << " (source " << s << ")";
  }
}

TEST_F(OpKernelsVec5, ExpandMatchesBroadcastReference) {
  struct Case {
    Shape in, target;
  };
  const std::vector<Case> cases = {
      {{1, 64, 1, 1}, {8, 64, 28, 28}},  // per-channel fill (the matrix row)
      {{1, 3, 1, 1}, {2, 3, 5, 7}},      // short fills, odd lengths
      {{7}, {3, 4, 5, 7}},               // one row repeated (doubling copies)
      {{1, 1, 33, 1}, {2, 3, 33, 19}},   // fill rows, repeated outer dims
      {{5, 1, 1}, {2, 5, 300, 300}},     // repeated blocks larger than the replicate limit
      {{2, 1, 6}, {2, 9, 6}},            // middle dim repeated
      {{3, 1}, {1, 3, 70001}},           // one long fill per row
      {{1}, {1000}},                     // scalar
      {{4, 5}, {4, 5}},                  // plain copy
      {{1, 2}, {3, 0, 2}},               // empty
  };
  for (int32_t dtype : {SINGA_ONNX_FLOAT, SINGA_ONNX_UINT8, SINGA_ONNX_FLOAT16, SINGA_ONNX_INT64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + " in rank " + std::to_string(c.in.size()) + " numel " +
                   std::to_string(numel(c.target)));
      ModelBuilder m(13);
      m.input("X", dtype, c.in);
      m.initializer("S", i64_tensor(c.target));
      m.node("Expand", {"X", "S"}, {"Y"});
      m.output("Y", dtype, c.target);
      const Tensor x = pattern(c.in, dtype, 5);
      const Shape in = c.in, out = c.target;
      run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
        expect_gather(y, out, x, dtype, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> s(in.size());
          for (size_t k = 0; k < in.size(); ++k) s[k] = in[k] == 1 ? 0 : idx[idx.size() - in.size() + k];
          return ravel(s, in);
        });
      });
    }
  }
}

TEST_F(OpKernelsVec5, TileMatchesRepeatReference) {
  struct Case {
    Shape in;
    std::vector<int64_t> reps;
  };
  const std::vector<Case> cases = {
      {{1, 64, 56, 56}, {1, 1, 2, 2}},  // the matrix row
      {{2, 3, 5, 7}, {3, 1, 1, 1}},     // outer repeats of whole blocks
      {{2, 3, 5, 7}, {1, 2, 3, 4}},     // every level
      {{3, 1000}, {1, 40}},             // long rows repeated
      {{1, 1}, {17, 33}},               // one element
      {{4, 130, 130}, {2, 1, 1}},       // blocks past the replicate limit
      {{2, 3}, {0, 2}},                 // empty
  };
  for (int32_t dtype : {SINGA_ONNX_FLOAT, SINGA_ONNX_UINT8, SINGA_ONNX_DOUBLE}) {
    for (const Case& c : cases) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + " numel " + std::to_string(numel(c.in)));
      ModelBuilder m(13);
      m.input("X", dtype, c.in);
      m.initializer("R", i64_tensor(c.reps));
      m.node("Tile", {"X", "R"}, {"Y"});
      Shape out(c.in.size());
      for (size_t k = 0; k < out.size(); ++k) out[k] = c.in[k] * c.reps[k];
      m.output("Y", dtype, out);
      const Tensor x = pattern(c.in, dtype, 6);
      const Shape in = c.in;
      run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
        expect_gather(y, out, x, dtype, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> s(in.size());
          for (size_t k = 0; k < in.size(); ++k) s[k] = idx[k] % in[k];
          return ravel(s, in);
        });
      });
    }
  }
}

// ---- Transpose ----

TEST_F(OpKernelsVec5, TransposeEveryFourDPermutation) {
  const Shape in = {3, 19, 33, 17};  // no dim a multiple of 16: ragged blocks everywhere
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    for (int32_t dtype : {SINGA_ONNX_FLOAT, SINGA_ONNX_INT32, SINGA_ONNX_FLOAT16}) {
      SCOPED_TRACE("perm " + std::to_string(perm[0]) + std::to_string(perm[1]) + std::to_string(perm[2]) +
                   std::to_string(perm[3]) + " dtype " + std::to_string(dtype));
      ModelBuilder m(13);
      m.input("X", dtype, in);
      m.node("Transpose", {"X"}, {"Y"});
      add_ints(m.last(), "perm", perm);
      Shape out(4);
      for (size_t k = 0; k < 4; ++k) out[k] = in[size_t(perm[k])];
      m.output("Y", dtype, out);
      const Tensor x = pattern(in, dtype, 7);
      run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
        expect_gather(y, out, x, dtype, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> s(4);
          for (size_t k = 0; k < 4; ++k) s[size_t(perm[k])] = idx[k];
          return ravel(s, in);
        });
      });
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_F(OpKernelsVec5, TransposeLargeAndTwoDimensional) {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{2, 64, 28, 28}, {0, 2, 3, 1}},  // NCHW -> NHWC (the matrix row)
      {{2, 28, 28, 64}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{17, 1000}, {1, 0}},
      {{16, 16}, {1, 0}},
      {{15, 40}, {1, 0}},  // one side below a block: the element-wise path
      {{5, 4, 3, 2, 40}, {4, 1, 0, 3, 2}},
  };
  for (int32_t dtype : {SINGA_ONNX_FLOAT, SINGA_ONNX_FLOAT16})
    for (const Case& c : cases) {
      SCOPED_TRACE("numel " + std::to_string(numel(c.in)) + " rank " + std::to_string(c.in.size()) + " dtype " +
                   std::to_string(dtype));
      ModelBuilder m(13);
      m.input("X", dtype, c.in);
      m.node("Transpose", {"X"}, {"Y"});
      add_ints(m.last(), "perm", c.perm);
      Shape out(c.in.size());
      for (size_t k = 0; k < out.size(); ++k) out[k] = c.in[size_t(c.perm[k])];
      m.output("Y", dtype, out);
      const Tensor x = pattern(c.in, dtype, 8);
      run_threads(m, {x}, [&](const Tensor& y, const singa::onnx::Rep&) {
        expect_gather(y, out, x, dtype, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> s(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) s[size_t(c.perm[k])] = idx[k];
          return ravel(s, c.in);
        });
      });
    }
}

// A data-movement op on a float16 value that is not already widened stays in
// half: widening it alone would put a Cast of the whole tensor on each side.
TEST_F(OpKernelsVec5, LoneHalfTransposeIsNotWidened) {
  const Shape in = {2, 32, 20, 18};
  const std::vector<float> x = values(numel(in), 9);
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, in);
  m.node("Cast", {"X"}, {"H"});
  add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
  m.node("Transpose", {"H"}, {"Y"});
  add_ints(m.last(), "perm", {0, 2, 3, 1});
  const Shape out = {2, 20, 18, 32};
  m.output("Y", SINGA_ONNX_FLOAT16, out);
  run_threads(m, {f32_tensor(in, x)}, [&](const Tensor& y, const singa::onnx::Rep& rep) {
    int casts = 0;
    for (const auto& p : rep.placement()) casts += p.op_type == "Cast" ? 1 : 0;
    EXPECT_EQ(casts, 1) << "only the model's own Cast";
    ASSERT_EQ(y.shape(), out);
    const uint16_t* yp = static_cast<const uint16_t*>(y.raw_data());
    for (int64_t i = 0; i < numel(out); ++i) {
      const std::vector<int64_t> o = unravel(i, out);
      const int64_t src = ravel({o[0], o[3], o[1], o[2]}, in);
      ASSERT_EQ(yp[i], half_bits(x[size_t(src)])) << "at " << i;
    }
  });
}

// ---- ConvTranspose without overlapping windows ----

struct ConvTCase {
  int64_t N = 1, C = 4, M = 6, group = 1;
  std::vector<int64_t> in{5, 6}, k{2, 2}, s{2, 2}, pb{0, 0}, pe{0, 0}, op{0, 0};
  bool bias = true;
  std::vector<int64_t> out() const {
    std::vector<int64_t> o;
    for (size_t i = 0; i < in.size(); ++i) o.push_back(s[i] * (in[i] - 1) + op[i] + k[i] - pb[i] - pe[i]);
    return o;
  }
};

// ConvTranspose by its definition, in double: every input pixel adds its
// weighted kernel window into the output (full-size, then cropped by pads).
std::vector<double> conv_transpose_ref(const ConvTCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& b) {
  const size_t r = c.in.size();
  const std::vector<int64_t> out = c.out();
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  int64_t pin = 1, pout = 1, ks = 1;
  for (size_t i = 0; i < r; ++i) pin *= c.in[i], pout *= out[i], ks *= c.k[i];
  std::vector<double> y(size_t(c.N * c.M * pout), 0.0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m) {
      double* yp = &y[size_t((n * c.M + m) * pout)];
      for (int64_t p = 0; p < pout; ++p) yp[p] = c.bias ? b[size_t(m)] : 0.0;
      const int64_t g = m / Mg, mg = m % Mg;
      for (int64_t cg = 0; cg < Cg; ++cg) {
        const int64_t ch = g * Cg + cg;
        for (int64_t ip = 0; ip < pin; ++ip) {
          const std::vector<int64_t> ii = unravel(ip, c.in);
          for (int64_t kp = 0; kp < ks; ++kp) {
            const std::vector<int64_t> kk = unravel(kp, c.k);
            std::vector<int64_t> o(r);
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              o[d] = ii[d] * c.s[d] + kk[d] - c.pb[d];
              inside = inside && o[d] >= 0 && o[d] < out[d];
            }
            if (!inside) continue;
            yp[ravel(o, out)] += double(x[size_t((n * c.C + ch) * pin + ip)]) * w[size_t((ch * Mg + mg) * ks + kp)];
          }
        }
      }
    }
  return y;
}

TEST_F(OpKernelsVec5, ConvTransposeWithoutOverlapMatchesDefinition) {
  std::vector<ConvTCase> cases;
  cases.push_back({});                                                      // 2x2 stride 2
  { ConvTCase c; c.C = 64; c.M = 32; c.in = {28, 28}; cases.push_back(c); }  // the matrix row's shape
  { ConvTCase c; c.k = {2, 3}; c.s = {3, 3}; c.bias = false; cases.push_back(c); }  // gaps between windows
  { ConvTCase c; c.k = {3, 3}; c.s = {3, 3}; c.pb = {1, 2}; c.pe = {2, 0}; cases.push_back(c); }  // pads crop
  { ConvTCase c; c.op = {1, 1}; cases.push_back(c); }                      // output_padding: bias-only edge
  { ConvTCase c; c.group = 2; c.N = 3; cases.push_back(c); }                // groups, batch
  { ConvTCase c; c.in = {9}; c.k = {4}; c.s = {4}; c.pb = {0}; c.pe = {0}; c.op = {2}; cases.push_back(c); }  // 1-D
  { ConvTCase c; c.in = {3, 4, 5}; c.k = {2, 2, 2}; c.s = {2, 2, 2}; c.pb = {0, 0, 0}; c.pe = {0, 0, 0};
    c.op = {0, 0, 0}; cases.push_back(c); }                                  // 3-D
  { ConvTCase c; c.k = {1, 1}; c.s = {1, 1}; cases.push_back(c); }          // 1x1: a plain product
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const ConvTCase& c = cases[ci];
    SCOPED_TRACE("case " + std::to_string(ci));
    const size_t r = c.in.size();
    Shape xs = {c.N, c.C}, ws = {c.C, c.M / c.group};
    for (size_t i = 0; i < r; ++i) xs.push_back(c.in[i]), ws.push_back(c.k[i]);
    const std::vector<float> x = values(numel(xs), 30 + unsigned(ci));
    const std::vector<float> w = values(numel(ws), 40 + unsigned(ci));
    const std::vector<float> b = values(c.M, 50 + unsigned(ci));
    ModelBuilder m(11);
    m.input("X", SINGA_ONNX_FLOAT, xs);
    m.initializer("W", f32_tensor(ws, w));
    if (c.bias) m.initializer("B", f32_tensor({c.M}, b));
    m.node("ConvTranspose", c.bias ? std::vector<std::string>{"X", "W", "B"} : std::vector<std::string>{"X", "W"},
           {"Y"});
    add_ints(m.last(), "kernel_shape", c.k);
    add_ints(m.last(), "strides", c.s);
    std::vector<int64_t> pads = c.pb;
    pads.insert(pads.end(), c.pe.begin(), c.pe.end());
    add_ints(m.last(), "pads", pads);
    add_ints(m.last(), "output_padding", c.op);
    add_int(m.last(), "group", c.group);
    Shape ys = {c.N, c.M};
    for (int64_t d : c.out()) ys.push_back(d);
    m.output("Y", SINGA_ONNX_FLOAT, ys);
    const std::vector<double> ref = conv_transpose_ref(c, x, w, b);
    run_threads(m, {f32_tensor(xs, x)}, [&](const Tensor& y, const singa::onnx::Rep&) {
      ASSERT_EQ(y.shape(), ys);
      const float* yp = static_cast<const float*>(y.raw_data());
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(yp[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << "at " << i;
    });
  }
}

// ---- Comparisons of float16 ----

TEST_F(OpKernelsVec5, HalfComparisonsMatchFloatComparisonsOfTheHalves) {
  const Shape a_shape = {3, 5, 203};  // rows of 203: 25 blocks of 8 and a tail of 3
  const int64_t n = numel(a_shape);
  std::mt19937 rng(70);
  std::uniform_int_distribution<int> small(-4, 4);
  Tensor a(a_shape, SINGA_ONNX_FLOAT16);
  auto* ap = static_cast<uint16_t*>(a.raw_data());
  for (int64_t i = 0; i < n; ++i) ap[i] = half_bits(float(small(rng)) * 0.5f);  // many ties
  ap[7] = 0x7e00;                    // NaN
  ap[8] = 0x8000;                    // -0
  ap[9] = 0x7c00;                    // +inf
  ap[10] = 0xfc00;                   // -inf
  ap[11] = 0x7d01;                   // a signalling-NaN pattern
  struct B {
    Shape shape;
    const char* name;
  };
  for (const B& bc : {B{a_shape, "same"}, B{{5, 1}, "chan"}, B{{1}, "scalar"}, B{{203}, "row"}}) {
    Tensor b(bc.shape, SINGA_ONNX_FLOAT16);
    auto* bp = static_cast<uint16_t*>(b.raw_data());
    for (int64_t i = 0; i < numel(bc.shape); ++i) bp[i] = half_bits(float(small(rng)) * 0.5f);
    if (numel(bc.shape) > 12) bp[8] = 0x0000, bp[7] = 0x7e00, bp[12] = 0x7c00;  // +0 vs -0, NaN vs NaN, inf
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      SCOPED_TRACE(std::string(op) + " " + bc.name);
      ModelBuilder m(16);
      m.input("A", SINGA_ONNX_FLOAT16, a_shape);
      m.input("B", SINGA_ONNX_FLOAT16, bc.shape);
      m.node(op, {"A", "B"}, {"Y"});
      m.output("Y", SINGA_ONNX_BOOL, a_shape);
      run_threads(m, {a, b}, [&](const Tensor& y, const singa::onnx::Rep&) {
        ASSERT_EQ(y.shape(), a_shape);
        const bool* yp = static_cast<const bool*>(y.raw_data());
        for (int64_t i = 0; i < n; ++i) {
          const std::vector<int64_t> idx = unravel(i, a_shape);
          std::vector<int64_t> bi(bc.shape.size());
          for (size_t k = 0; k < bc.shape.size(); ++k) {
            const size_t d = a_shape.size() - bc.shape.size() + k;
            bi[k] = bc.shape[k] == 1 ? 0 : idx[d];
          }
          const float x = half_value(ap[i]), v = half_value(bp[ravel(bi, bc.shape)]);
          const std::string o = op;
          const bool want = o == "Equal" ? x == v : o == "Less" ? x < v : o == "Greater" ? x > v
                            : o == "LessOrEqual" ? x <= v : x >= v;
          ASSERT_EQ(yp[i], want) << "at " << i << ": " << x << " vs " << v;
        }
      });
    }
  }
}

// ---- Cast to float16, then one reduction ----

TEST_F(OpKernelsVec5, CastToHalfThenReduceIsBitIdenticalToHalfKernels) {
  const Shape in = {3, 37, 130};
  std::vector<float> x = values(numel(in), 60, 40.f);
  // Values that round differently in half than in float, overflow to +-inf,
  // a NaN, and signed zeros.
  for (size_t i = 0; i < x.size(); i += 7) x[i] = 1.0f + float(i % 5) * 1e-4f;
  x[100] = 70000.f;           // +inf in half: its row sums to inf
  x[200] = 70000.f;           // with -inf in the same column: NaN
  x[200 + 130] = -70000.f;
  x[777] = std::numeric_limits<float>::quiet_NaN();
  x[1000] = -0.f;
  struct Case {
    std::string op;
    int opset;
    std::vector<int64_t> axes;  // empty: all
    int keepdims;
  };
  std::vector<Case> cases;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMin"})
    for (int opset : {13, 18})
      for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{2}, {1}, {0, 2}, {}})
        cases.push_back({op, opset, axes, axes.size() == 2 ? 0 : 1});
  for (const Case& c : cases) {
    std::string axes_str;
    for (int64_t a : c.axes) axes_str += std::to_string(a) + " ";
    SCOPED_TRACE(c.op + " opset " + std::to_string(c.opset) + " axes " + axes_str);
    const bool axes_input = c.opset >= (c.op == "ReduceSum" ? 13 : 18);
    ModelBuilder m(c.opset);
    m.input("X", SINGA_ONNX_FLOAT, in);
    m.node("Cast", {"X"}, {"H"});
    add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
    if (axes_input && !c.axes.empty()) {
      m.initializer("A", i64_tensor(c.axes));
      m.node(c.op, {"H", "A"}, {"Y"});
    } else {
      m.node(c.op, {"H"}, {"Y"});
      if (!c.axes.empty()) add_ints(m.last(), "axes", c.axes);
    }
    add_int(m.last(), "keepdims", c.keepdims);
    Shape ys;
    for (size_t d = 0; d < in.size(); ++d) {
      const bool reduced = c.axes.empty() || std::count(c.axes.begin(), c.axes.end(), int64_t(d)) != 0;
      if (!reduced)
        ys.push_back(in[d]);
      else if (c.keepdims)
        ys.push_back(1);
    }
    m.output("Y", SINGA_ONNX_FLOAT16, ys);
    const Tensor xt = f32_tensor(in, x);
    // The half kernels on the Cast's output (the pass off) are the reference.
    singa::onnx::PrepareOptions off;
    off.threads = 1;
    off.options["pass.cpu.float16_as_float32"] = "0";
    const Tensor ref = singa::onnx::prepare_bytes(m.bytes(), off)->run({xt}).at(0).second;
    const uint16_t* rp = static_cast<const uint16_t*>(ref.raw_data());
    run_threads(m, {xt}, [&](const Tensor& y, const singa::onnx::Rep& rep) {
      bool cast_in = false;
      for (const auto& p : rep.placement()) cast_in |= p.op_type == "Cast" && p.node.find("__reduced_to_f16") == std::string::npos;
      EXPECT_FALSE(cast_in) << "the float32 -> float16 Cast of the whole input is still there";
      ASSERT_EQ(y.shape(), ref.shape());
      ASSERT_EQ(y.dtype(), SINGA_ONNX_FLOAT16);
      const uint16_t* yp = static_cast<const uint16_t*>(y.raw_data());
      for (int64_t i = 0; i < y.numel(); ++i) {
        const float a = half_value(yp[i]), e = half_value(rp[i]);
        if (std::isnan(e)) {
          ASSERT_TRUE(std::isnan(a)) << "at " << i;
        } else if (e == 0.f && (c.op == "ReduceMax" || c.op == "ReduceMin")) {
          ASSERT_EQ(a, 0.f) << "at " << i;  // the sign of a zero max/min is not fixed
        } else {
          ASSERT_EQ(yp[i], rp[i]) << "at " << i << ": got " << a << ", half kernels " << e;
        }
      }
    });
  }
  // The reference itself against a double computation of one case: the sum
  // of the rounded values along the last axis, rounded once.
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, in);
  m.node("Cast", {"X"}, {"H"});
  add_int(m.last(), "to", SINGA_ONNX_FLOAT16);
  m.initializer("A", i64_tensor({2}));
  m.node("ReduceSum", {"H", "A"}, {"Y"});
  m.output("Y", SINGA_ONNX_FLOAT16, {in[0], in[1], 1});
  run_threads(m, {f32_tensor(in, x)}, [&](const Tensor& y, const singa::onnx::Rep&) {
    const uint16_t* yp = static_cast<const uint16_t*>(y.raw_data());
    for (int64_t r = 0; r < in[0] * in[1]; ++r) {
      double s = 0;
      for (int64_t k = 0; k < in[2]; ++k) s += double(half_value(half_bits(x[size_t(r * in[2] + k)])));
      const uint16_t want = half_bits(float(s));
      if (std::isnan(s))
        ASSERT_TRUE(std::isnan(half_value(yp[r]))) << "row " << r;
      else
        ASSERT_EQ(yp[r], want) << "row " << r << ": got " << half_value(yp[r]) << ", want " << float(s);
    }
  });
}

}  // namespace
