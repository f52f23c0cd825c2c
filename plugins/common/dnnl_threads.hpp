// dnnl_threads.hpp - oneDNN runs single-threaded inside each call: its OpenMP
// workers would spin between calls and fight the runtime's own pool (and
// other processes) for the cores, which on a busy 2-core machine cost several
// times the work itself. Parallelism comes from running parts on the pool
// instead, and every task that calls oneDNN says so first.
#ifndef SINGA_PLUGINS_COMMON_DNNL_THREADS_HPP
#define SINGA_PLUGINS_COMMON_DNNL_THREADS_HPP

#ifdef _OPENMP
#include <omp.h>
#endif

namespace singa {
namespace ops {

// One OpenMP thread for oneDNN calls made from this thread.
inline void dnnl_single_thread() {
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}

}  // namespace ops
}  // namespace singa
#endif
