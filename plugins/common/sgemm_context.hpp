// sgemm_context.hpp - fast::sgemm_parallel on a kernel's context: the pool
// the runtime gives the kernel (--threads) runs the product's tasks.
#ifndef SINGA_PLUGINS_COMMON_SGEMM_CONTEXT_HPP
#define SINGA_PLUGINS_COMMON_SGEMM_CONTEXT_HPP

#include "sgemm.hpp"

#include <singa/kernel.hpp>

namespace singa {
namespace fast {

class ContextPool : public ParallelFor {
 public:
  explicit ContextPool(const sdk::Context& ctx) : ctx_(ctx) {}
  int threads() const override { return ctx_.num_threads(); }
  void run(int64_t n, void (*task)(void*, int64_t, int64_t), void* user) const override {
    ctx_.parallel_for(n, 1, [&](int64_t b, int64_t e) { task(user, b, e); });
  }

 private:
  const sdk::Context& ctx_;
};

}  // namespace fast
}  // namespace singa
#endif
