// sgemm.hpp - single-precision matrix products for the CPU kernels that sit
// on the training path (Conv, ConvGrad; Gemm/MatMul use oneDNN, dnnl_sgemm.hpp). On CPUs with AVX-512
// they run register-blocked AVX-512 code of our own: Debian's OpenBLAS 0.3.21
// does not know newer AVX-512 CPUs (AMD family 1Ah among them) and falls back
// to its AVX2 kernels there, at half the vector width. Elsewhere, and with
// the runtime option cpu.avx512=0 (to compare), everything goes to OpenBLAS.
//
// Row-major throughout. Compiled into each plugin that uses it
// (plugins/common/sgemm.cpp).
#ifndef SINGA_PLUGINS_COMMON_SGEMM_HPP
#define SINGA_PLUGINS_COMMON_SGEMM_HPP

#include <cstdint>

namespace singa {
namespace fast {

// What is done with the product P = op(A) op(B) before it lands in C:
// C = alpha * P + beta * C + row_bias[i] + col_bias[j]. C is not read when
// beta == 0; absent biases are null.
struct Out {
  float alpha = 1, beta = 0;
  const float* row_bias = nullptr;
  const float* col_bias = nullptr;
};

// True when the AVX-512 kernels run (CPU support, and the runtime option
// cpu.avx512 not 0; read at the first call).
bool avx512();

// C[M x N] = op(A)[M x K] op(B)[K x N] per `o`; op(A) is A^T when ta (A
// stored K x M), likewise B. Single-threaded: callers parallelise over
// independent products (images), or use sgemm_parallel.
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           float* C, int64_t ldc, const Out& o = Out());

// Runs `task(begin, end)` over [0, n) on some pool; sgemm_parallel's hook
// into the caller's thread pool (sdk::Context::parallel_for).
struct ParallelFor {
  virtual ~ParallelFor() = default;
  virtual int threads() const = 0;
  virtual void run(int64_t n, void (*task)(void*, int64_t, int64_t), void* user) const = 0;
};

// sgemm split over the pool's threads when the product is large enough.
void sgemm_parallel(const ParallelFor& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, const Out& o = Out());

}  // namespace fast
}  // namespace singa
#endif
