// gemm.hpp - matrix products shared by MatMul, Gemm, MatMulInteger and
// QLinearMatMul: numpy's batched shape rules, OpenBLAS for float/double, a
// portable row kernel for the integer types.
#ifndef SINGA_OPS_MATH_GEMM_HPP
#define SINGA_OPS_MATH_GEMM_HPP

#include <vector>

#include "blas_threads.hpp"
#include "fused_activation.hpp"
#include "math_common.hpp"

namespace singa {
namespace ops {
namespace math {

// Y (M x N, row-major, leading dimension N) = alpha * op(A) op(B) + beta * Y,
// where op(A) is M x K (A stored K x M when trans_a). Y is not read when
// beta == 0. float through oneDNN split over the context's pool
// (plugins/common/dnnl_sgemm.hpp), double through cblas_dgemm. `col_bias`
// (length N, or null; float only) is added to every row of Y afterwards:
// Linear's bias, without broadcasting it into Y before the product.
void blas_gemm(const sdk::Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, const float* B, float beta, float* Y, const float* col_bias = nullptr);
void blas_gemm(const sdk::Context& ctx, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
               const double* A, const double* B, double beta, double* Y);

// The activation a graph pass fused into a Gemm (plugins/ops_nn/passes/fuse_conv_activation.cpp):
// attribute `activation` "Relu" | "LeakyRelu" | "Clip" with `activation_alpha`
// or `activation_min`/`activation_max`. Applied to the finished output.
// Gemm/MatMul read a fused activation as Conv does.
using GemmActivation = ops::FusedActivation;

// Products smaller than this (M*N*K) run single-threaded inside OpenBLAS, so
// several of them may run side by side on the pool.
constexpr int64_t kSmallProduct = int64_t(1) << 18;

// How numpy's matmul pairs the matrices of A [..., M, K] and B [..., K, N]:
// 1-D operands are promoted (and the promoted dim dropped from the output),
// the leading dims broadcast.
struct MatMulPlan {
  Shape out_shape;
  int64_t M = 0, K = 0, N = 0;
  int64_t batch = 1;                  // number of matrix products
  std::vector<int64_t> a_off, b_off;  // element offset of each product's A and B
  // B is the same matrix for every product and the A matrices are stacked
  // contiguously: the whole thing is one (batch*M) x K by K x N product.
  bool fold = false;
};
MatMulPlan plan_matmul(const Shape& a, const Shape& b);

// The integer accumulator: unsigned arithmetic wraps like numpy's on
// overflow without undefined behaviour.
template <typename T, bool = is_int_v<T>>
struct acc_type {
  using type = compute_t<T>;
};
template <typename T>
struct acc_type<T, true> {
  using type = wide_unsigned_t<T>;
};
template <typename T>
using acc_t = typename acc_type<T>::type;

// row[0..N) = sum_k op(A)[i, k] * op(B)[k, :], for one row i.
template <typename T, typename U>
void row_product(int64_t i, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
                 U* row) {
  if (!trans_b) {
    for (int64_t j = 0; j < N; ++j) row[j] = U(0);
    for (int64_t k = 0; k < K; ++k) {
      U a = U(compute_t<T>(trans_a ? A[k * M + i] : A[i * K + k]));
      const T* b = B + k * N;
      for (int64_t j = 0; j < N; ++j) row[j] = U(row[j] + a * U(compute_t<T>(b[j])));
    }
    return;
  }
  for (int64_t j = 0; j < N; ++j) {
    const T* b = B + j * K;
    U s = U(0);
    for (int64_t k = 0; k < K; ++k)
      s = U(s + U(compute_t<T>(trans_a ? A[k * M + i] : A[i * K + k])) * U(compute_t<T>(b[k])));
    row[j] = s;
  }
}

// Y = A @ B for the integer types, parallel over all rows of all products.
template <typename T>
void matmul_generic(const sdk::Context& ctx, const MatMulPlan& p, const T* A, const T* B, T* Y) {
  using U = acc_t<T>;
  int64_t rows = p.batch * p.M;
  int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.N * p.K));
  ctx.parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    std::vector<U> row(size_t(std::max<int64_t>(p.N, 1)));
    for (int64_t r = rb; r < re; ++r) {
      int64_t b = r / p.M, i = r % p.M;
      row_product(i, false, false, p.M, p.N, p.K, A + p.a_off[size_t(b)], B + p.b_off[size_t(b)], row.data());
      T* y = Y + r * p.N;
      for (int64_t j = 0; j < p.N; ++j) y[j] = T(row[size_t(j)]);
    }
  });
}

// Y = alpha A @ B for float/double through oneDNN's sgemm / OpenBLAS.
// trans_b: each B matrix is stored [N, K] (a Transpose folded into the MatMul).
template <typename T>
void matmul_blas(const sdk::Context& ctx, const MatMulPlan& p, const T* A, const T* B, T* Y, T alpha = T(1),
                 bool trans_b = false) {
  if (p.fold) {
    blas_gemm(ctx, false, trans_b, p.batch * p.M, p.N, p.K, alpha, A, B, T(0), Y);
    return;
  }
  int64_t mn = p.M * p.N;
  auto one = [&](int64_t b) {
    blas_gemm(ctx, false, trans_b, p.M, p.N, p.K, alpha, A + p.a_off[size_t(b)], B + p.b_off[size_t(b)], T(0),
              Y + b * mn);
  };
  if (p.batch > 1 && mn * p.K < kSmallProduct) {
    ctx.parallel_for(p.batch, 1, [&](int64_t bb, int64_t be) {
      for (int64_t b = bb; b < be; ++b) one(b);
    });
  } else {
    for (int64_t b = 0; b < p.batch; ++b)
      one(b);
  }
}

// Converts n elements (16-bit floats to float for BLAS, and back).
template <typename To, typename From>
void convert_n(const sdk::Context& ctx, const From* in, To* out, int64_t n) {
  ctx.parallel_for(n, 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = convert<To>(in[i]);
  });
}

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
