// fast::sgemm (plugins/common/sgemm.cpp, compiled in here) against a float64
// loop: every transpose pair, alpha/beta, both biases, padded leading
// dimensions, sizes around the tiles (16-wide vectors, 6/8/12-row blocks,
// 256-deep K passes) and K = 0. On CPUs without AVX-512 it checks the
// OpenBLAS fallback instead.
#include <sgemm.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace singa::fast;

namespace {

std::vector<float> rnd(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Runs the tasks on two threads, odd and even task indices apart, so tasks
// must not depend on each other.
class TwoThreads : public ParallelFor {
 public:
  int threads() const override { return 2; }
  void run(int64_t n, void (*task)(void*, int64_t, int64_t), void* user) const override {
    std::thread t([&] {
      for (int64_t i = 1; i < n; i += 2) task(user, i, i + 1);
    });
    for (int64_t i = 0; i < n; i += 2) task(user, i, i + 1);
    t.join();
  }
};

void check(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, bool rb, bool cb, bool parallel) {
  SCOPED_TRACE("ta" + std::to_string(ta) + " tb" + std::to_string(tb) + " " + std::to_string(M) + "x" +
               std::to_string(N) + "x" + std::to_string(K) + " alpha " + std::to_string(alpha) + " beta " +
               std::to_string(beta) + (rb ? " row_bias" : "") + (cb ? " col_bias" : "") + (parallel ? " parallel" : ""));
  const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
  auto A = rnd(size_t((ta ? K : M) * lda), 1), B = rnd(size_t((tb ? N : K) * ldb), 2);
  auto C = rnd(size_t(M * ldc), 3), R = rnd(size_t(M), 4), Cb = rnd(size_t(N), 5);
  std::vector<float> before = C;
  Out o;
  o.alpha = alpha, o.beta = beta;
  o.row_bias = rb ? R.data() : nullptr;
  o.col_bias = cb ? Cb.data() : nullptr;
  if (beta == 0)  // C must not be read: NaNs there must not leak out
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[size_t(i * ldc + j)] = NAN;
  if (parallel)
    sgemm_parallel(TwoThreads(), ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, o);
  else
    sgemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, o);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)]) *
             double(tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]);
      double want = alpha * s + (beta != 0 ? beta * before[size_t(i * ldc + j)] : 0.0) + (rb ? R[size_t(i)] : 0.f) +
                    (cb ? Cb[size_t(j)] : 0.f);
      ASSERT_NEAR(C[size_t(i * ldc + j)], want, 1e-5 * (std::sqrt(double(K)) + 1) * 4) << "C[" << i << "][" << j << "]";
    }
    for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(C[size_t(i * ldc + j)], before[size_t(i * ldc + j)]) << "padding touched";
  }
}

}  // namespace

TEST(Sgemm, EveryLayoutAndEdgeSize) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int64_t M : {1, 5, 6, 7, 13, 25, 50})
        for (int64_t N : {1, 15, 16, 17, 33, 64, 100, 130})
          for (int64_t K : {0, 1, 15, 17, 31, 40, 300}) {
            const float alpha = M % 2 ? 1.f : 0.5f;
            const float beta = N % 3 == 0 ? 0.f : N % 3 == 1 ? 1.f : -0.5f;
            check(ta, tb, M, N, K, alpha, beta, K % 2 == 1, M % 3 == 0, false);
            if (HasFatalFailure()) return;
          }
}

TEST(Sgemm, ParallelSplitsMatchTheSerialResult) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      check(ta, tb, 64, 500, 80, 1.f, 0.f, false, true, true);
      check(ta, tb, 130, 70, 300, 0.5f, 1.f, true, false, true);
      if (HasFatalFailure()) return;
    }
}
