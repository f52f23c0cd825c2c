// The AVX-512 kernels behind the op matrix's reduction, index and Cast rows
// (bench/ops) against scalar references written from the ONNX definitions:
// float32 sums (ReduceSum/Mean/SumSquare/L1/L2) against double sums, float64
// max/min, float16 reductions, ArgMax/ArgMin and Hardmax's argmax (ties,
// select_last_index, NaN placement), CumSum rows, TopK's k-entry selection (ties, NaN, largest/smallest) and
// float -> int casts (saturation, NaN). The header functions are tested at
// every tail length; one-node models then run each op through the runtime on
// strided axes and lengths past the kernels' block sizes.
#include "../../plugins/ops_reduce/argext_f32.hpp"
#include "../../plugins/ops_reduce/cumsum_f32.hpp"
#include "../../plugins/ops_reduce/minmax_f64.hpp"
#include "../../plugins/ops_reduce/sum_f32.hpp"
#include "../../plugins/ops_reduce/topk_select.hpp"
#include "../../plugins/ops_tensor/cast_int_avx512.hpp"
#include "model_builder.hpp"

#include <singa/kernel.hpp>
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace {

namespace r = singa::ops::reduce;
using testing_util::random_values;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Small integers, so that ties are common.
std::vector<float> ties(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-3, 3);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = float(u(rng));
  return v;
}

#define SKIP_WITHOUT_AVX512() \
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or cpu.avx512=0)"

// The sequential "replace when better" walk of ONNX's ArgMax/ArgMin, with
// numpy's NaN rule (a NaN is the extreme; the first one, or the last with select_last_index).
int64_t arg_ref(const float* x, int64_t n, int64_t stride, bool is_max, bool last) {
  int64_t arg = 0;
  float best = x[0];
  for (int64_t j = 1; j < n; ++j) {
    const float v = x[j * stride];
    bool take;
    if (best != best)
      take = last && v != v;
    else if (v != v)
      take = true;
    else
      take = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
    if (take) best = v, arg = j;
  }
  return arg;
}

#ifdef SINGA_AVX512_BEGIN
TEST(OpKernelsVec4, SumFoldMatchesDoubleAtEveryTail) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 0; n <= 140; ++n) {
    const std::vector<float> x = random_values(n, unsigned(n), 10.f);
    double s = 0, sq = 0, ab = 0;
    for (float v : x) s += v, sq += double(v) * v, ab += std::fabs(v);
    // float32 lanes over at most 64 adds each: well within 1e-5 of the scale.
    EXPECT_NEAR(r::sum_fold_f32<r::SumTerm::kPlain>(x.data(), n), s, 1e-5 * (ab + 1)) << "n = " << n;
    EXPECT_NEAR(r::sum_fold_f32<r::SumTerm::kSquare>(x.data(), n), sq, 1e-6 * (sq + 1)) << "n = " << n;
    EXPECT_NEAR(r::sum_fold_f32<r::SumTerm::kAbs>(x.data(), n), ab, 1e-6 * (ab + 1)) << "n = " << n;
  }
}

TEST(OpKernelsVec4, SumFoldLongRunKeepsDoubleAccuracy) {
  SKIP_WITHOUT_AVX512();
  // 1e6 values near 1: a plain float32 running sum drifts by ~1e-3 relative;
  // blocks flushed to double stay within a few float ulps.
  std::vector<float> x(1000003);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.9f, 1.1f);
  for (float& v : x) v = u(rng);
  double ref = 0;
  for (float v : x) ref += v;
  const double got = r::sum_fold_f32<r::SumTerm::kPlain>(x.data(), int64_t(x.size()));
  EXPECT_NEAR(got, ref, ref * 1e-6);
  EXPECT_TRUE(std::isnan(r::sum_fold_f32<r::SumTerm::kPlain>((std::vector<float>{1.f, kNaN, 2.f}).data(), 3)));
}

TEST(OpKernelsVec4, MinMaxFloat64FoldAndRowsWithNaN) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 0; n <= 40; ++n) {
    const std::vector<float> f = random_values(n, unsigned(n) + 100, 10.f);
    std::vector<double> x(f.begin(), f.end());
    double mx = -INFINITY, mn = INFINITY;
    for (double v : x) mx = std::max(mx, v), mn = std::min(mn, v);
    EXPECT_EQ(r::minmax_fold_f64<true>(x.data(), n), mx) << "n = " << n;
    EXPECT_EQ(r::minmax_fold_f64<false>(x.data(), n), mn) << "n = " << n;
    for (int64_t at = 0; at < n; at += 6) {
      std::vector<double> y = x;
      y[size_t(at)] = std::nan("");
      EXPECT_TRUE(std::isnan(r::minmax_fold_f64<true>(y.data(), n))) << "n = " << n << " at " << at;
      EXPECT_TRUE(std::isnan(r::minmax_fold_f64<false>(y.data(), n))) << "n = " << n << " at " << at;
    }
    if (n == 0) continue;
    std::vector<double> acc(x.rbegin(), x.rend()), row = x;
    row[size_t(n / 2)] = std::nan("");
    std::vector<double> want(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      want[size_t(k)] = k == n / 2 ? std::nan("") : std::max(acc[size_t(k)], row[size_t(k)]);
    r::minmax_row_f64<true>(acc.data(), row.data(), n);
    for (int64_t k = 0; k < n; ++k) {
      if (k == n / 2)
        EXPECT_TRUE(std::isnan(acc[size_t(k)]));
      else
        EXPECT_EQ(acc[size_t(k)], want[size_t(k)]) << "n " << n << " k " << k;
    }
  }
}

TEST(OpKernelsVec4, SumRowAndFlushMatchScalar) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 1; n <= 70; ++n) {
    // b's row is longer than n: the tail must not read it.
    const std::vector<float> a = random_values(n, 11, 10.f), b = random_values(n + 1, 12, 10.f);
    std::vector<float> acc(size_t(n), 0.f);
    std::vector<double> wide(size_t(n), 1.0);
    r::sum_row_f32<r::SumTerm::kPlain>(acc.data(), a.data(), n);
    r::sum_row_f32<r::SumTerm::kSquare>(acc.data(), b.data(), n);
    r::sum_flush_f32(wide.data(), acc.data(), n);
    for (int64_t k = 0; k < n; ++k) {
      EXPECT_FLOAT_EQ(float(wide[size_t(k)]), float(1.0 + double(a[size_t(k)] + b[size_t(k)] * b[size_t(k)])))
          << "n = " << n << " k = " << k;
      EXPECT_EQ(acc[size_t(k)], 0.f);
    }
  }
}

TEST(OpKernelsVec4, ArgExtremeRowMatchesSequentialWalk) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 1; n <= 70; ++n) {
    for (unsigned seed = 0; seed < 3; ++seed) {
      std::vector<float> x = seed == 0 ? random_values(n, unsigned(n), 10.f) : ties(n, unsigned(n * 7 + seed));
      if (seed == 2 && n > 3) x[size_t(n / 3)] = -0.f, x[size_t(n / 2)] = 0.f;  // signed zeros tie
      for (int last = 0; last < 2; ++last) {
        EXPECT_EQ(r::arg_extreme_row_f32<true>(x.data(), n, last != 0), arg_ref(x.data(), n, 1, true, last != 0))
            << "n = " << n << " seed " << seed << " last " << last;
        EXPECT_EQ(r::arg_extreme_row_f32<false>(x.data(), n, last != 0), arg_ref(x.data(), n, 1, false, last != 0))
            << "n = " << n << " seed " << seed << " last " << last;
      }
    }
  }
}

TEST(OpKernelsVec4, ArgExtremeRowNaNPlacement) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n : {1, 2, 15, 16, 17, 33, 64, 70}) {
    for (int64_t at = 0; at < n; at += 5) {
      std::vector<float> x = ties(n, 3);
      x[size_t(at)] = kNaN;
      if (at + 9 < n) x[size_t(at + 9)] = kNaN;
      for (int last = 0; last < 2; ++last)
        for (int mx = 0; mx < 2; ++mx) {
          const int64_t got = mx ? r::arg_extreme_row_f32<true>(x.data(), n, last != 0)
                                 : r::arg_extreme_row_f32<false>(x.data(), n, last != 0);
          EXPECT_EQ(got, arg_ref(x.data(), n, 1, mx != 0, last != 0)) << "n " << n << " at " << at << " last " << last;
        }
    }
  }
}

template <bool kMax, bool kLast> void check_cols(int64_t kn, int64_t rows, unsigned seed) {
  std::vector<float> x = ties(kn * rows, seed);
  for (int64_t i = 0; i < kn * rows; i += 13) x[size_t(i)] = kNaN;
  std::vector<float> best(x.begin(), x.begin() + kn);
  std::vector<int32_t> idx(size_t(kn), 0);
  for (int64_t j = 1; j < rows; ++j) r::arg_extreme_cols_f32<kMax, kLast>(best.data(), idx.data(), &x[size_t(j * kn)], int32_t(j), kn);
  for (int64_t k = 0; k < kn; ++k)
    EXPECT_EQ(idx[size_t(k)], arg_ref(&x[size_t(k)], rows, kn, kMax, kLast)) << "kn " << kn << " k " << k;
}

TEST(OpKernelsVec4, ArgExtremeColumnsMatchSequentialWalk) {
  SKIP_WITHOUT_AVX512();
  for (int64_t kn = 1; kn <= 40; ++kn) {
    check_cols<true, false>(kn, 9, unsigned(kn));
    check_cols<true, true>(kn, 9, unsigned(kn));
    check_cols<false, false>(kn, 9, unsigned(kn));
    check_cols<false, true>(kn, 9, unsigned(kn));
  }
}

TEST(OpKernelsVec4, CumSumRowIsFloatRunningSum) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 1; n <= 40; ++n) {
    const int64_t rows = 5;
    const std::vector<float> x = random_values(n * rows, unsigned(n), 10.f);
    for (int ex = 0; ex < 2; ++ex) {
      std::vector<float> acc(size_t(n), 0.f), y(size_t(n * rows + 1), -7.f);
      for (int64_t j = 0; j < rows; ++j) {
        if (ex)
          r::cumsum_row_f32<true>(acc.data(), &x[size_t(j * n)], &y[size_t(j * n)], n);
        else
          r::cumsum_row_f32<false>(acc.data(), &x[size_t(j * n)], &y[size_t(j * n)], n);
      }
      for (int64_t k = 0; k < n; ++k) {
        float s = 0.f;  // numpy's float32 cumsum, element by element
        for (int64_t j = 0; j < rows; ++j) {
          const float before = s;
          s += x[size_t(j * n + k)];
          EXPECT_EQ(y[size_t(j * n + k)], ex ? before : s) << "n " << n << " k " << k << " j " << j;
        }
      }
      EXPECT_EQ(y.back(), -7.f);
    }
  }
}

TEST(OpKernelsVec4, CastFloatToIntSaturatesLikeScalar) {
  if (!singa::ops::tensor::cast_int_avx512_supported()) GTEST_SKIP() << "no AVX-512 DQ on this CPU";
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f, -0.f, 1.9f, -1.9f, 2.5f, -2.5f, kNaN, -kNaN, inf, -inf, 9.2233720368547758e18f,
                          -9.2233720368547758e18f, 3e19f, -3e19f, 2147483648.f, -2147483648.f, 2147483520.f,
                          -2147483904.f, 16777217.f, 1e-30f};
  const std::vector<float> more = random_values(53, 4, 1e6f);
  x.insert(x.end(), more.begin(), more.end());
  for (int64_t n = 0; n <= int64_t(x.size()); ++n) {
    std::vector<int64_t> y64(size_t(n) + 1, 77);
    std::vector<int32_t> y32(size_t(n) + 1, 77);
    std::vector<double> xd(x.begin(), x.begin() + n);
    std::vector<int64_t> yd(size_t(n) + 1, 77);
    singa::ops::tensor::cast_f32_to_i64_avx512(x.data(), y64.data(), n);
    singa::ops::tensor::cast_f32_to_i32_avx512(x.data(), y32.data(), n);
    singa::ops::tensor::cast_f64_to_i64_avx512(xd.data(), yd.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[size_t(i)];
      const int64_t e64 = v != v ? 0 : v >= 9.2233720368547758e18 ? INT64_MAX : v <= -9.2233720368547758e18 ? INT64_MIN : int64_t(v);
      const int32_t e32 = v != v ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : int32_t(v);
      EXPECT_EQ(y64[size_t(i)], e64) << "x = " << v;
      EXPECT_EQ(yd[size_t(i)], e64) << "x = " << v;
      EXPECT_EQ(y32[size_t(i)], e32) << "x = " << v;
    }
    EXPECT_EQ(y64[size_t(n)], 77);
    EXPECT_EQ(y32[size_t(n)], 77);
    EXPECT_EQ(yd[size_t(n)], 77);
  }
}
#endif

// TopK's selection (vector filter on float32 where AVX-512 runs) against a
// stable sort by the ONNX order.
TEST(OpKernelsVec4, TopKSelectMatchesStableSort) {
  for (int64_t n : {1, 5, 16, 17, 40, 100, 333}) {
    for (int64_t k : {int64_t(1), int64_t(3), std::min<int64_t>(n, 16), n}) {
      if (k > n || k > r::kTopKSelectMax) continue;
      for (unsigned seed = 0; seed < 4; ++seed) {
        std::vector<float> x = seed < 2 ? ties(n, seed + unsigned(n)) : random_values(n, seed, 10.f);
        if (seed == 3)
          for (int64_t i = 2; i < n; i += 7) x[size_t(i)] = kNaN;
        for (int largest = 0; largest < 2; ++largest) {
          std::vector<int64_t> order(static_cast<size_t>(n));
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return largest ? r::topk_above(x[size_t(a)], x[size_t(b)]) : r::topk_above(x[size_t(b)], x[size_t(a)]);
          });
          std::vector<float> bv(static_cast<size_t>(k));
          std::vector<int64_t> bi(static_cast<size_t>(k));
          r::TopKBuffer<float> buf{bv.data(), bi.data(), k};
          r::topk_select(buf, x.data(), n, largest != 0);
          for (int64_t j = 0; j < k; ++j)
            EXPECT_EQ(bi[size_t(j)], order[size_t(j)]) << "n " << n << " k " << k << " seed " << seed << " j " << j;
          // The int path (no vector filter) agrees too.
          if (seed < 2) {  // only the NaN-free inputs convert to int
            std::vector<int32_t> xi(x.begin(), x.end());
            std::vector<int32_t> iv(static_cast<size_t>(k));
            r::TopKBuffer<int32_t> ib{iv.data(), bi.data(), k};
            r::topk_select(ib, xi.data(), n, largest != 0);
            for (int64_t j = 0; j < k; ++j) EXPECT_EQ(bi[size_t(j)], order[size_t(j)]) << "int n " << n << " j " << j;
          }
        }
      }
    }
  }
}

// ---- The ops through the runtime, on strided axes and long runs. ----

using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::f32_tensor;
using testing_util::i64_tensor;

class OpKernelsVec4Model : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& rt = singa::Runtime::instance();
    if (!rt.loaded()) rt.load();
  }
};

std::vector<singa::Tensor> run_model(const ModelBuilder& m, const singa::Tensor& x) {
  auto rep = singa::onnx::prepare_bytes(m.bytes());
  auto out = rep->run({x});
  std::vector<singa::Tensor> r;
  for (auto& p : out) r.push_back(p.second);
  return r;
}

// [A, N, B] with the op along N.
constexpr int64_t kA = 3, kN = 150, kB = 300;

TEST_F(OpKernelsVec4Model, SumsAndLogSumExpOverBothLayouts) {
  const std::vector<float> x = random_values(kA * kN * kB, 21, 10.f);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"}) {
    for (int axis : {1, 2}) {
      ModelBuilder m(18);
      m.input("X", SINGA_ONNX_FLOAT, {kA, kN, kB});
      m.initializer("axes", i64_tensor({axis}));
      m.node(op, {"X", "axes"}, {"Y"});
      m.output("Y", SINGA_ONNX_FLOAT, {kA, axis == 1 ? 1 : kN, axis == 1 ? kB : 1});
      const singa::Tensor y = run_model(m, f32_tensor({kA, kN, kB}, x)).at(0);
      const float* yp = static_cast<const float*>(y.raw_data());
      const std::string o = op;
      const int64_t n = axis == 1 ? kN : kB, inner = axis == 1 ? kB : 1, outer = axis == 1 ? kA : kA * kN;
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < inner; ++b) {
          double s = 0, mag = 0;
          if (o == "ReduceLogSumExp") {
            double mx = -INFINITY, se = 0;
            for (int64_t j = 0; j < n; ++j) mx = std::max(mx, double(x[size_t((a * n + j) * inner + b)]));
            for (int64_t j = 0; j < n; ++j) se += std::exp(double(x[size_t((a * n + j) * inner + b)]) - mx);
            const double ref = mx + std::log(se);
            ASSERT_NEAR(yp[a * inner + b], ref, 4e-6 * (std::fabs(ref) + 1)) << op << " axis " << axis;
            continue;
          }
          for (int64_t j = 0; j < n; ++j) {
            const double v = x[size_t((a * n + j) * inner + b)];
            s += o == "ReduceSumSquare" || o == "ReduceL2" ? v * v : o == "ReduceL1" ? std::fabs(v) : v;
            mag += std::fabs(v) * (o == "ReduceSumSquare" || o == "ReduceL2" ? std::fabs(v) : 1.0);
          }
          if (o == "ReduceMean") s /= double(n), mag /= double(n);
          if (o == "ReduceL2") s = std::sqrt(s), mag = std::sqrt(mag);
          ASSERT_NEAR(yp[a * inner + b], s, 2e-6 * mag + 1e-6) << op << " axis " << axis << " at " << a << "," << b;
        }
    }
  }
}

// float16 reductions run on the float32 kernels a converted block at a time.
TEST_F(OpKernelsVec4Model, Float16ReductionsMatchDouble) {
  std::vector<float> x = random_values(kA * kN * kB, 27, 10.f);
  singa::Tensor xt({kA, kN, kB}, SINGA_ONNX_FLOAT16);
  for (size_t i = 0; i < x.size(); ++i) {
    const singa::sdk::half h(x[i]);
    static_cast<uint16_t*>(xt.raw_data())[i] = h.bits;
    x[i] = float(h);
  }
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"})
    for (int axis : {1, 2}) {
      ModelBuilder m(18);
      m.input("X", SINGA_ONNX_FLOAT16, {kA, kN, kB});
      m.initializer("axes", i64_tensor({axis}));
      m.node(op, {"X", "axes"}, {"Y"});
      m.output("Y", SINGA_ONNX_FLOAT16, {kA, axis == 1 ? 1 : kN, axis == 1 ? kB : 1});
      const singa::Tensor y = run_model(m, xt).at(0);
      const uint16_t* yp = static_cast<const uint16_t*>(y.raw_data());
      const std::string o = op;
      const int64_t n = axis == 1 ? kN : kB, inner = axis == 1 ? kB : 1, outer = axis == 1 ? kA : kA * kN;
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < inner; ++b) {
          double s = o == "ReduceMax" ? -1e30 : o == "ReduceMin" ? 1e30 : 0.0;
          for (int64_t j = 0; j < n; ++j) {
            const double v = x[size_t((a * n + j) * inner + b)];
            s = o == "ReduceMax" ? std::max(s, v) : o == "ReduceMin" ? std::min(s, v) : s + v;
          }
          if (o == "ReduceMean") s /= double(n);
          singa::sdk::half h;
          h.bits = yp[a * inner + b];
          // One rounding to half of a sum computed in float32/double.
          ASSERT_EQ(h.bits, singa::sdk::half(float(s)).bits) << op << " axis " << axis << " ref " << s << " got " << float(h);
        }
    }
}

TEST_F(OpKernelsVec4Model, ArgMaxArgMinOverBothLayouts) {
  std::vector<float> x = ties(kA * kN * kB, 22);
  for (size_t i = 5; i < x.size(); i += 997) x[i] = kNaN;
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int axis : {1, 2})
      for (int last = 0; last < 2; ++last) {
        ModelBuilder m(13);
        m.input("X", SINGA_ONNX_FLOAT, {kA, kN, kB});
        m.node(op, {"X"}, {"Y"});
        add_int(m.last(), "axis", axis);
        add_int(m.last(), "select_last_index", last);
        m.output("Y", SINGA_ONNX_INT64, {kA, axis == 1 ? 1 : kN, axis == 1 ? kB : 1});
        const singa::Tensor y = run_model(m, f32_tensor({kA, kN, kB}, x)).at(0);
        const int64_t* yp = static_cast<const int64_t*>(y.raw_data());
        const int64_t n = axis == 1 ? kN : kB, inner = axis == 1 ? kB : 1, outer = axis == 1 ? kA : kA * kN;
        for (int64_t a = 0; a < outer; ++a)
          for (int64_t b = 0; b < inner; ++b)
            ASSERT_EQ(yp[a * inner + b], arg_ref(&x[size_t(a * n * inner + b)], n, inner, op[3] == 'M' && op[4] == 'a', last != 0))
                << op << " axis " << axis << " last " << last << " at " << a << "," << b;
      }
}

TEST_F(OpKernelsVec4Model, CumSumStridedMatchesFloatRunningSum) {
  const std::vector<float> x = random_values(kA * kN * kB, 23, 10.f);
  for (int ex = 0; ex < 2; ++ex)
    for (int rev = 0; rev < 2; ++rev) {
      ModelBuilder m(14);
      m.input("X", SINGA_ONNX_FLOAT, {kA, kN, kB});
      m.initializer("axis", i64_tensor({1}));
      m.node("CumSum", {"X", "axis"}, {"Y"});
      add_int(m.last(), "exclusive", ex);
      add_int(m.last(), "reverse", rev);
      m.output("Y", SINGA_ONNX_FLOAT, {kA, kN, kB});
      const singa::Tensor y = run_model(m, f32_tensor({kA, kN, kB}, x)).at(0);
      const float* yp = static_cast<const float*>(y.raw_data());
      for (int64_t a = 0; a < kA; ++a)
        for (int64_t b = 0; b < kB; ++b) {
          float s = 0.f;
          for (int64_t t = 0; t < kN; ++t) {
            const int64_t j = rev ? kN - 1 - t : t;
            const size_t at = size_t((a * kN + j) * kB + b);
            const float before = s;
            s += x[at];
            ASSERT_EQ(yp[at], ex ? before : s) << "ex " << ex << " rev " << rev << " at " << a << "," << j << "," << b;
          }
        }
    }
}

TEST_F(OpKernelsVec4Model, TopKAlongStridedAndLastAxis) {
  std::vector<float> x = ties(kA * kN * kB, 24);
  for (size_t i = 3; i < x.size(); i += 1009) x[i] = kNaN;
  for (int axis : {1, 2})
    for (int largest = 0; largest < 2; ++largest) {
      const int64_t k = 7;
      ModelBuilder m(11);
      m.input("X", SINGA_ONNX_FLOAT, {kA, kN, kB});
      m.initializer("K", i64_tensor({k}));
      m.node("TopK", {"X", "K"}, {"V", "I"});
      add_int(m.last(), "axis", axis);
      add_int(m.last(), "largest", largest);
      const std::vector<int64_t> dims = {kA, axis == 1 ? k : kN, axis == 1 ? kB : k};
      m.output("V", SINGA_ONNX_FLOAT, dims);
      m.output("I", SINGA_ONNX_INT64, dims);
      const auto out = run_model(m, f32_tensor({kA, kN, kB}, x));
      const float* vp = static_cast<const float*>(out.at(0).raw_data());
      const int64_t* ip = static_cast<const int64_t*>(out.at(1).raw_data());
      const int64_t n = axis == 1 ? kN : kB, inner = axis == 1 ? kB : 1, outer = axis == 1 ? kA : kA * kN;
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < inner; ++b) {
          std::vector<int64_t> order(static_cast<size_t>(n));
          std::iota(order.begin(), order.end(), 0);
          auto at = [&](int64_t j) { return x[size_t((a * n + j) * inner + b)]; };
          std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
            return largest ? r::topk_above(at(p), at(q)) : r::topk_above(at(q), at(p));
          });
          for (int64_t j = 0; j < k; ++j) {
            ASSERT_EQ(ip[(a * k + j) * inner + b], order[size_t(j)]) << "axis " << axis << " largest " << largest;
            const float v = vp[(a * k + j) * inner + b];
            ASSERT_TRUE(v == at(order[size_t(j)]) || (v != v && at(order[size_t(j)]) != at(order[size_t(j)])));
          }
        }
    }
}

TEST_F(OpKernelsVec4Model, HardmaxRowIsOneHotOfFirstMaximum) {
  std::vector<float> x = ties(4 * 70, 25);
  x[75] = kNaN;
  ModelBuilder m(13);
  m.input("X", SINGA_ONNX_FLOAT, {4, 70});
  m.node("Hardmax", {"X"}, {"Y"});
  m.output("Y", SINGA_ONNX_FLOAT, {4, 70});
  const singa::Tensor y = run_model(m, f32_tensor({4, 70}, x)).at(0);
  const float* yp = static_cast<const float*>(y.raw_data());
  for (int64_t row = 0; row < 4; ++row) {
    const int64_t arg = arg_ref(&x[size_t(row * 70)], 70, 1, true, false);
    for (int64_t j = 0; j < 70; ++j) ASSERT_EQ(yp[row * 70 + j], j == arg ? 1.f : 0.f) << "row " << row << " j " << j;
  }
}

TEST_F(OpKernelsVec4Model, CastFloatToInt64) {
  std::vector<float> x = random_values(1000, 26, 1e4f);
  x[3] = kNaN, x[500] = 1e30f, x[999] = -1e30f;
  ModelBuilder m(19);
  m.input("X", SINGA_ONNX_FLOAT, {1000});
  m.node("Cast", {"X"}, {"Y"});
  add_int(m.last(), "to", SINGA_ONNX_INT64);
  m.output("Y", SINGA_ONNX_INT64, {1000});
  const singa::Tensor y = run_model(m, f32_tensor({1000}, x)).at(0);
  const int64_t* yp = static_cast<const int64_t*>(y.raw_data());
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = x[size_t(i)];
    const int64_t e = v != v ? 0 : v >= 9.2233720368547758e18f ? INT64_MAX : v <= -9.2233720368547758e18f ? INT64_MIN : int64_t(v);
    ASSERT_EQ(yp[i], e) << "x = " << v;
  }
}

}  // namespace
