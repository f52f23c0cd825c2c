// The AVX-512 kernels of the op matrix work (bench/ops) against scalar
// references, at every length up to a few vectors so that each tail mask is
// hit: ReduceMax/ReduceMin folds and rows (NaN wins), the normalisations'
// sums in double, and Floor/Ceil/Round for float, double and float16.
#include "../../plugins/common/moments_f32.hpp"
#include "../../plugins/common/round_avx512.hpp"
#include "../../plugins/ops_reduce/minmax_f32.hpp"

#include <singa/kernel.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#ifdef SINGA_AVX512_BEGIN
namespace {

std::vector<float> values(int64_t n, unsigned seed, float scale = 100.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

#define SKIP_WITHOUT_AVX512() \
  if (!singa::vec::unary_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or SINGA_NO_AVX512 set)"

TEST(OpKernelsVec, MinMaxFoldMatchesScalarAtEveryTail) {
  SKIP_WITHOUT_AVX512();
  using singa::ops::reduce::minmax_fold_f32;
  for (int64_t n = 0; n <= 100; ++n) {
    const std::vector<float> x = values(n, unsigned(n));
    float mx = -INFINITY, mn = INFINITY;
    for (float v : x) mx = std::max(mx, v), mn = std::min(mn, v);
    EXPECT_EQ(minmax_fold_f32<true>(x.data(), n), mx) << "n = " << n;
    EXPECT_EQ(minmax_fold_f32<false>(x.data(), n), mn) << "n = " << n;
  }
}

TEST(OpKernelsVec, MinMaxNaNWinsAnywhere) {
  SKIP_WITHOUT_AVX512();
  using singa::ops::reduce::minmax_fold_f32;
  for (int64_t n : {1, 15, 16, 17, 33, 70}) {
    for (int64_t at = 0; at < n; at += 7) {
      std::vector<float> x = values(n, 3);
      x[size_t(at)] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(std::isnan(minmax_fold_f32<true>(x.data(), n))) << "n = " << n << " at " << at;
      EXPECT_TRUE(std::isnan(minmax_fold_f32<false>(x.data(), n))) << "n = " << n << " at " << at;
    }
  }
}

TEST(OpKernelsVec, MinMaxRowMatchesScalar) {
  SKIP_WITHOUT_AVX512();
  using singa::ops::reduce::minmax_row_f32;
  for (int64_t n = 1; n <= 64; ++n) {
    const int rows = 5;
    std::vector<float> x = values(n * rows, unsigned(7 + n));
    x[size_t(n / 2)] = std::numeric_limits<float>::quiet_NaN();  // row 0, one lane
    std::vector<float> acc(size_t(n), -INFINITY), ref(size_t(n), -INFINITY);
    for (int r = 0; r < rows; ++r) {
      minmax_row_f32<true>(acc.data(), x.data() + r * n, n);
      for (int64_t k = 0; k < n; ++k) {
        const float v = x[size_t(r * n + k)];
        float& a = ref[size_t(k)];
        a = (v > a || v != v) ? v : a;
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      if (std::isnan(ref[size_t(k)]))
        EXPECT_TRUE(std::isnan(acc[size_t(k)])) << "n = " << n << " k = " << k;
      else
        EXPECT_EQ(acc[size_t(k)], ref[size_t(k)]) << "n = " << n << " k = " << k;
    }
  }
}

TEST(OpKernelsVec, MomentsMatchScalarDouble) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 0; n <= 100; ++n) {
    const std::vector<float> x = values(n, unsigned(11 + n), 3.f);
    double s = 0;
    for (float v : x) s += double(v);
    const double mean = n ? s / double(n) : 0.0;
    double ss = 0;
    for (float v : x) ss += (double(v) - mean) * (double(v) - mean);
    EXPECT_NEAR(singa::vec::sum_f32(x.data(), n), s, 1e-12 * (1 + std::fabs(s) + n)) << "n = " << n;
    EXPECT_NEAR(singa::vec::sum_sq_dev_f32(x.data(), n, mean), ss, 1e-12 * (1 + ss)) << "n = " << n;
  }
}

std::vector<float> rounding_cases(int64_t n) {
  std::vector<float> x = values(n, 5, 8.f);
  const float special[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, -0.f, 0.f, 1e20f, -1e20f, INFINITY, -INFINITY,
                           0.49999997f, -3.7f, 7.0f};
  for (size_t i = 0; i < x.size() && i < sizeof(special) / sizeof(float); ++i) x[i] = special[i];
  return x;
}

template <int kMode>
float ref_round(float v) {
  if (kMode == singa::vec::kRoundFloor) return std::floor(v);
  if (kMode == singa::vec::kRoundCeil) return std::ceil(v);
  return std::nearbyint(v);  // the default rounding mode: halves to even
}

template <int kMode>
void check_rounding(const char* what) {
  for (int64_t n = 0; n <= 40; ++n) {
    const std::vector<float> x = rounding_cases(n);
    std::vector<float> y(size_t(n), 42.f);
    singa::vec::round_f32<kMode>(x.data(), y.data(), n);
    std::vector<double> xd(x.begin(), x.end()), yd(size_t(n), 42.0);
    singa::vec::round_f64<kMode>(xd.data(), yd.data(), n);
    std::vector<singa::sdk::half> xh(static_cast<size_t>(n)), yh(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xh[size_t(i)] = singa::sdk::half(x[size_t(i)]);
    singa::vec::round_f16<kMode>(reinterpret_cast<const uint16_t*>(xh.data()), reinterpret_cast<uint16_t*>(yh.data()),
                                 n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = ref_round<kMode>(x[size_t(i)]);
      EXPECT_EQ(y[size_t(i)], want) << what << " f32 of " << x[size_t(i)];
      EXPECT_EQ(std::signbit(y[size_t(i)]), std::signbit(want)) << what << " sign of " << x[size_t(i)];
      EXPECT_EQ(yd[size_t(i)], double(want)) << what << " f64 of " << x[size_t(i)];
      const float hx = float(xh[size_t(i)]), hy = float(yh[size_t(i)]);
      EXPECT_EQ(hy, float(singa::sdk::half(ref_round<kMode>(hx)))) << what << " f16 of " << hx;
    }
  }
}

TEST(OpKernelsVec, FloorCeilRoundMatchLibm) {
  SKIP_WITHOUT_AVX512();
  check_rounding<singa::vec::kRoundFloor>("Floor");
  check_rounding<singa::vec::kRoundCeil>("Ceil");
  check_rounding<singa::vec::kRoundEven>("Round");
}

}  // namespace
#endif
