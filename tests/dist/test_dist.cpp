// DistOpt under `mpirun -np 2` (also runs as a single rank). Each rank builds
// the same small model from the same seed and feeds its own data; every rank
// can compute every other rank's gradient, so the averaged result is checked
// against a reference computed here in double precision.
#include <gtest/gtest.h>

#include <singa/autograd.hpp>
#include <singa/dist.hpp>
#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include "../../core/dist/half.hpp"

#include <cmath>
#include <random>
#include <vector>

using namespace singa;
using autograd::Variable;

namespace {

std::shared_ptr<dist::Communicator> comm() { return dist::world(); }

Tensor random_tensor(const Shape& s, uint64_t seed, float scale = 1) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0, scale);
  Tensor t(s, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

// loss = sum(w * x_r) + 0.5 * sum(b^2) * r: d/dw = x_r, d/db = b * r.
struct Toy {
  Variable w{random_tensor({300, 7}, 1), true, "w"};
  Variable b{random_tensor({5}, 2), true, "b"};
  Variable loss(int rank) {
    Variable x(random_tensor({300, 7}, 100 + uint64_t(rank)));
    Variable r(autograd::scalar(double(rank)));
    Variable l1 = autograd::reduce_sum(autograd::mul(w, x), {});
    Variable l2 = autograd::mul(autograd::reduce_sum(autograd::mul(b, b), {}), autograd::mul(r, Variable(autograd::scalar(0.5))));
    return autograd::add(l1, l2);
  }
  // The mean over ranks of each rank's gradient of w.
  std::vector<double> mean_grad_w(int n) {
    std::vector<double> m(size_t(w.data().numel()), 0);
    for (int r = 0; r < n; ++r) {
      Tensor x = random_tensor({300, 7}, 100 + uint64_t(r));
      for (size_t i = 0; i < m.size(); ++i) m[i] += x.data<float>()[i] / n;
    }
    return m;
  }
};

class Dist : public ::testing::Test {
 protected:
  void SetUp() override { Runtime::instance(); }
};

TEST_F(Dist, LaunchEnvironmentMatchesMpi) {
  auto li = dist::launch_info_from_env();
  EXPECT_EQ(li.world_size, comm()->size());
  EXPECT_EQ(li.rank, comm()->rank());
}

TEST_F(Dist, Fp32AveragesGradientsInBucketsDuringBackward) {
  Toy t;
  optim::SGD sgd({{"w", t.w}, {"b", t.b}}, 1.0);
  dist::DistOptions o;
  o.bucket_bytes = 64;  // w and b in buckets of their own
  dist::DistOpt d(sgd, comm(), o);
  Tensor w0 = t.w.data().clone(), b0 = t.b.data().clone();
  d.backward_and_update(t.loss(d.rank()));
  const int n = d.world_size();
  auto mw = t.mean_grad_w(n);
  double mr = 0;
  for (int r = 0; r < n; ++r) mr += double(r) / n;
  for (int64_t i = 0; i < w0.numel(); ++i) ASSERT_NEAR(t.w.data().data<float>()[i], w0.data<float>()[i] - mw[size_t(i)], 1e-5);
  for (int64_t i = 0; i < b0.numel(); ++i)
    ASSERT_NEAR(t.b.data().data<float>()[i], b0.data<float>()[i] * (1 - mr), 1e-5);
  EXPECT_EQ(d.last_step().buckets, 2);
  // b's gradient is final before w's product is differentiated... both are
  // leaves of the last ops; at least one bucket starts inside backward.
  EXPECT_GE(d.last_step().started_during_backward, 1);
}

TEST_F(Dist, Fp16RoundsLikeHalfPrecision) {
  Toy t;
  optim::SGD sgd({{"w", t.w}, {"b", t.b}}, 1.0);
  dist::DistOpt d(sgd, comm());
  Tensor w0 = t.w.data().clone();
  d.backward_and_update_half(t.loss(d.rank()));
  const int n = d.world_size();
  auto mw = t.mean_grad_w(n);
  // Each rank's x_r / n is rounded to half (relative error 2^-11), and so is
  // each partial sum: the error is bounded by the magnitudes, not the mean.
  std::vector<double> mag(size_t(w0.numel()), 0);
  for (int r = 0; r < n; ++r) {
    Tensor x = random_tensor({300, 7}, 100 + uint64_t(r));
    for (size_t i = 0; i < mag.size(); ++i) mag[i] += std::fabs(x.data<float>()[i]) / n;
  }
  double worst = 0;
  for (int64_t i = 0; i < w0.numel(); ++i) {
    const double got = w0.data<float>()[i] - t.w.data().data<float>()[i];
    worst = std::max(worst, std::fabs(got - mw[size_t(i)]) / (mag[size_t(i)] + 1e-6));
  }
  EXPECT_LT(worst, 2.5e-3);  // about two half ulps (2^-11 each)
  EXPECT_GT(worst, 0);     // and it really travelled as half
}

TEST_F(Dist, SparseTopKSendsTheLargestAndKeepsTheRest) {
  Toy t;
  optim::SGD sgd({{"w", t.w}}, 1.0);
  dist::DistOpt d(sgd, comm());
  t.b.set_requires_grad(false);
  Tensor w0 = t.w.data().clone();
  d.backward_and_sparse_update(t.loss(d.rank()), true, 0.1f);
  // Reference: each rank's top 10% of |x_r|, summed, / n.
  const int n = d.world_size();
  const int64_t m = w0.numel(), k = std::llround(0.1 * double(m));
  std::vector<double> ref(size_t(m), 0);
  for (int r = 0; r < n; ++r) {
    Tensor x = random_tensor({300, 7}, 100 + uint64_t(r));
    std::vector<float> a(x.data<float>(), x.data<float>() + m);
    std::vector<float> s = a;
    for (auto& v : s) v = std::fabs(v);
    std::nth_element(s.begin(), s.begin() + (k - 1), s.end(), std::greater<float>());
    for (int64_t i = 0; i < m; ++i)
      if (std::fabs(a[size_t(i)]) >= s[size_t(k - 1)]) ref[size_t(i)] += a[size_t(i)] / n;
  }
  int64_t changed = 0;
  for (int64_t i = 0; i < m; ++i) {
    const double step = w0.data<float>()[i] - t.w.data().data<float>()[i];
    ASSERT_NEAR(step, ref[size_t(i)], 1e-5) << "element " << i;
    changed += step != 0;
  }
  EXPECT_LE(changed, k * n);
  EXPECT_GE(changed, k);
}

TEST_F(Dist, SparseThresholdSendsOnlyLargeValues) {
  Toy t;
  t.b.set_requires_grad(false);
  optim::SGD sgd({{"w", t.w}}, 1.0);
  dist::DistOpt d(sgd, comm());
  Tensor w0 = t.w.data().clone();
  d.backward_and_sparse_update(t.loss(d.rank()), false, 1.5f);
  const int n = d.world_size();
  for (int64_t i = 0; i < w0.numel(); ++i) {
    double ref = 0;
    for (int r = 0; r < n; ++r) {
      float x = random_tensor({300, 7}, 100 + uint64_t(r)).data<float>()[i];
      if (std::fabs(x) >= 1.5f) ref += x / n;
    }
    ASSERT_NEAR(w0.data<float>()[i] - t.w.data().data<float>()[i], ref, 1e-5);
  }
}

TEST_F(Dist, PartialUpdateAveragesOneBucketPerStep) {
  Toy t;
  optim::SGD sgd({{"w", t.w}, {"b", t.b}}, 1.0);
  dist::DistOptions o;
  o.bucket_bytes = 64;
  dist::DistOpt d(sgd, comm(), o);
  d.backward_and_partial_update(t.loss(d.rank()));
  sgd.zero_grad();
  // Bucket 0 holds b (the last parameter): averaged now, so equal everywhere.
  std::vector<double> b(t.b.data().data<float>(), t.b.data().data<float>() + 5), b_sum = d.sum(b);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i] * d.world_size(), b_sum[i], 1e-4);
  // w was updated locally only: x_r differs per rank.
  double w00 = t.w.data().data<float>()[0];
  double w00_sum = d.sum({w00})[0];
  if (d.world_size() > 1) EXPECT_GT(std::fabs(w00 * d.world_size() - w00_sum), 1e-3);
  d.average_parameters();
  w00 = t.w.data().data<float>()[0];
  EXPECT_NEAR(w00 * d.world_size(), d.sum({w00})[0], 1e-4);
}

TEST_F(Dist, BroadcastStateCopiesRankZero) {
  Variable w(random_tensor({4, 3}, 7 + uint64_t(comm()->rank())), true, "w");
  optim::SGD sgd({{"w", w}}, 0.1, 0.9);
  dist::DistOpt d(sgd, comm());
  d.broadcast_state();
  Tensor want = random_tensor({4, 3}, 7);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(w.data().data<float>()[i], want.data<float>()[i]);
}

TEST_F(Dist, MismatchedShapesAcrossRanksAreAnErrorNamingTheRank) {
  if (comm()->size() < 2) GTEST_SKIP() << "needs two ranks";
  Variable w(Tensor::zeros({3, comm()->rank() == 1 ? 5 : 4}, SINGA_ONNX_FLOAT), true, "w");
  optim::SGD sgd({{"w", w}}, 0.1);
  try {
    dist::DistOpt d(sgd, comm());
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("rank 1"), std::string::npos) << m;
    EXPECT_NE(m.find("[3,5]"), std::string::npos) << m;
  }
}

// The packed (F16C) conversion the fp16 mode sends with rounds exactly as the
// scalar one: every float16 neighbourhood, halfway points, subnormals, infinities.
TEST(Half, PackedConversionMatchesTheScalarOne) {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x7c00u; h += 7) {
    const float a = dist::half_to_float(uint16_t(h)), b = dist::half_to_float(uint16_t(h + 1));
    for (float v : {a, 0.5f * (a + b), std::nextafter(0.5f * (a + b), b), -a, -0.5f * (a + b)}) x.push_back(v);
  }
  for (float v : {0.f, -0.f, 65504.f, 65520.f, 1e9f, -1e9f, 1e-9f, 5.96e-8f, 2.98e-8f, INFINITY, -INFINITY}) x.push_back(v);
  std::vector<uint16_t> packed(x.size());
  dist::floats_to_halves(x.data(), packed.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(packed[i], dist::float_to_half(x[i])) << "at " << x[i];
}

TEST_F(Dist, ParseMode) {
  EXPECT_EQ(dist::parse_mode("partialUpdate"), dist::Mode::kPartial);
  EXPECT_STREQ(dist::mode_name(dist::Mode::kSparseThreshold), "sparseThreshold");
  EXPECT_THROW(dist::parse_mode("fp8"), Error);
}

}  // namespace
