// dnnl_sgemm.hpp - float products through oneDNN's sgemm, split over the runtime's
// pool. oneDNN's AVX-512 kernels ran these shapes about 2x faster than
// OpenBLAS's (with OPENBLAS_CORETYPE=Haswell) and 15% faster than its SkylakeX
// ones, and 3-7x faster for the one-row products of an LSTM step. oneDNN runs
// single-threaded in each part (dnnl_threads.hpp says why); the pool runs the parts, so --threads is the count used.
#ifndef SINGA_PLUGINS_COMMON_DNNL_SGEMM_HPP
#define SINGA_PLUGINS_COMMON_DNNL_SGEMM_HPP

#include <singa/kernel.hpp>

#include "dnnl_threads.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <string>

namespace singa {
namespace ops {

// A failed dnnl_sgemm call (bad arguments) as the kernel's error.
inline void check_sgemm(dnnl_status_t st) {
  if (st != dnnl_success) sdk::fail("oneDNN sgemm failed (status " + std::to_string(int(st)) + ")");
}

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major with leading dimensions;
// C is not read when beta is 0. M, N, K > 0.
inline void sgemm(const sdk::Context& ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  auto one = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    dnnl_single_thread();
    const float* a = ta ? A + m0 : A + m0 * lda;
    const float* b = tb ? B + n0 * ldb : B + n0;
    check_sgemm(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m1 - m0, n1 - n0, K, alpha, a, lda, b, ldb, beta,
                           C + m0 * ldc + n0, ldc));
  };
  const int64_t threads = std::max(1, ctx.num_threads());
  // Parts below ~64^3 multiply-adds cost more to hand out than they save.
  // Products of a few rows are bound by reading B, not by the arithmetic:
  // they count as 8 rows (ResNet-18's 512 -> 1000 classifier at batch 1 read
  // its 2 MB of weights on one core, 0.09 ms at 1 and 2 threads).
  const int64_t parts = std::min<int64_t>(threads, std::max<int64_t>(M, 8) * N * K / (int64_t(1) << 18));
  if (parts >= 2 && N >= 32 * parts) {
    ctx.parallel_for(parts, 1, [&](int64_t pb, int64_t pe) {
      // Column blocks start on multiples of 16 (whole vectors); the last takes the rest.
      for (int64_t p = pb; p < pe; ++p)
        one(0, M, N * p / parts / 16 * 16, p + 1 == parts ? N : N * (p + 1) / parts / 16 * 16);
    });
  } else if (parts >= 2 && M >= 8 * parts) {
    ctx.parallel_for(parts, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) one(M * p / parts, M * (p + 1) / parts, 0, N);
    });
  } else {
    one(0, M, 0, N);
  }
}

}  // namespace ops
}  // namespace singa
#endif
