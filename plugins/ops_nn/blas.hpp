// blas.hpp - row-major GEMM over OpenBLAS for float and double.
#ifndef SINGA_OPS_NN_BLAS_HPP
#define SINGA_OPS_NN_BLAS_HPP

#include <cblas.h>

#include <cstdint>

namespace singa {
namespace nn {

// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, row-major.
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// Keeps OpenBLAS to one thread while it lives (when `on`), restoring the
// count after: for products issued from inside the pool's tasks.
class SingleThreadedBlas {
 public:
  explicit SingleThreadedBlas(bool on) : saved_(on ? openblas_get_num_threads() : 0) {
    if (saved_ > 1) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (saved_ > 1) openblas_set_num_threads(saved_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_;
};

inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace nn
}  // namespace singa

#endif
