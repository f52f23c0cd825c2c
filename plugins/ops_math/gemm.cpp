// gemm.cpp - the BLAS calls and numpy's matmul shape rules.
#include "gemm.hpp"

#include "dnnl_sgemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <string>

namespace singa {
namespace ops {
namespace math {
namespace {

// Debian's OpenBLAS takes 32-bit dimensions.
blasint blas_dim(int64_t d) {
  if (d > INT_MAX)
    sdk::fail("matrix dimension " + std::to_string(d) + " exceeds what BLAS accepts (" + std::to_string(INT_MAX) + ")");
  return blasint(d);
}

// BLAS leaves Y untouched (times beta) when K is 0, but wants leading
// dimensions >= 1 even for empty matrices: handle the degenerate cases here.
template <typename T>
bool degenerate(int64_t M, int64_t N, int64_t K, T beta, T* Y) {
  if (M == 0 || N == 0) return true;
  if (K != 0) return false;
  for (int64_t i = 0; i < M * N; ++i) Y[i] = beta == T(0) ? T(0) : beta * Y[i];
  return true;
}

}  // namespace

void blas_gemm(const sdk::Context& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               const float* B, float beta, float* Y, const float* col_bias) {
  if (!degenerate(M, N, K, beta, Y)) sgemm(ctx, ta, tb, M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, Y, N);
  if (col_bias)
    ctx.parallel_for(M, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        float* y = Y + i * N;
        for (int64_t j = 0; j < N; ++j) y[j] += col_bias[j];
      }
    });
}

void blas_gemm(const sdk::Context& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
               const double* A, const double* B, double beta, double* Y) {
  if (degenerate(M, N, K, beta, Y)) return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blas_dim(M), blas_dim(N),
              blas_dim(K), alpha, A, blas_dim(ta ? M : K), B, blas_dim(tb ? K : N), beta, Y, blas_dim(N));
}

MatMulPlan plan_matmul(const Shape& a_in, const Shape& b_in) {
  SINGA_CHECK(!a_in.empty() && !b_in.empty(),
              "inputs must have rank >= 1, got A " + shape_str(a_in) + " and B " + shape_str(b_in));
  Shape a = a_in, b = b_in;
  bool drop_m = a.size() == 1, drop_n = b.size() == 1;
  if (drop_m) a.insert(a.begin(), 1);
  if (drop_n) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  SINGA_CHECK(b[b.size() - 2] == p.K, "inner dimensions differ: A " + shape_str(a_in) + " and B " + shape_str(b_in));

  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes({a_batch, b_batch});
  } catch (const sdk::Error&) {
    sdk::fail("batch dimensions of A " + shape_str(a_in) + " and B " + shape_str(b_in) + " cannot be broadcast");
  }
  p.batch = sdk::numel(batch);
  p.out_shape = batch;
  if (!drop_m) p.out_shape.push_back(p.M);
  if (!drop_n) p.out_shape.push_back(p.N);

  int64_t a_count = sdk::numel(a_batch), b_count = sdk::numel(b_batch);
  p.fold = b_count == 1 && a_count == p.batch && p.batch > 1;

  // Offsets of each product's matrices: walk the batch index like an odometer.
  size_t rank = batch.size();
  std::vector<int64_t> a_stride(rank, 0), b_stride(rank, 0);
  int64_t as = p.M * p.K, bs = p.K * p.N;
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;
    if (i < a_batch.size()) {
      int64_t dim = a_batch[a_batch.size() - 1 - i];
      if (dim != 1) a_stride[d] = as;
      as *= dim;
    }
    if (i < b_batch.size()) {
      int64_t dim = b_batch[b_batch.size() - 1 - i];
      if (dim != 1) b_stride[d] = bs;
      bs *= dim;
    }
  }
  p.a_off.resize(size_t(p.batch));
  p.b_off.resize(size_t(p.batch));
  std::vector<int64_t> idx(rank, 0);
  int64_t ao = 0, bo = 0;
  for (int64_t n = 0; n < p.batch; ++n) {
    p.a_off[size_t(n)] = ao;
    p.b_off[size_t(n)] = bo;
    for (size_t d = rank; d-- > 0;) {
      ao += a_stride[d];
      bo += b_stride[d];
      if (++idx[d] < batch[d]) break;
      ao -= a_stride[d] * batch[d];
      bo -= b_stride[d] * batch[d];
      idx[d] = 0;
    }
  }
  return p;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
