// blas_threads.hpp - hands OpenBLAS the context's intra-op thread count (the
// --threads value) before a product. OpenBLAS's count is one process-wide
// setting shared by every pack that links it, so it is read back rather than
// remembered per pack; left alone, OpenBLAS takes every core and its idle
// workers spin (sched_yield) through the rest of the run.
#ifndef SINGA_PLUGINS_COMMON_BLAS_THREADS_HPP
#define SINGA_PLUGINS_COMMON_BLAS_THREADS_HPP

#include <singa/kernel.hpp>

#include <cblas.h>

#include <algorithm>

namespace singa {
namespace ops {

inline void use_blas_threads(const sdk::Context& ctx) {
  const int n = std::max(1, ctx.num_threads());
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

}  // namespace ops
}  // namespace singa
#endif
