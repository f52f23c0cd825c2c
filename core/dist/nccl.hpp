// nccl.hpp - NCCL for gradients on CUDA devices. NCCL and CUDA's runtime live
// in a module of their own (libsinga_dist_nccl.so, built where CUDA and NCCL
// are found) that the core loads on first use, so that libsinga_core itself
// never needs a GPU library.
#ifndef SINGA_CORE_DIST_NCCL_HPP
#define SINGA_CORE_DIST_NCCL_HPP

#include <singa/dist.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace singa {
namespace dist {

class NcclComm {
 public:
  // One NCCL communicator over the ranks of `comm` on CUDA device `device`
  // (the unique id travels through `comm`). Throws when the module or a GPU
  // is missing.
  static std::unique_ptr<NcclComm> create(Communicator& comm, int device);
  ~NcclComm();
  // Starts averaging each float32 buffer (device memory, in place) over the ranks.
  void allreduce_avg(const std::vector<std::pair<void*, int64_t>>& buffers, const std::string& what);
  // Waits for everything started, up to `timeout` seconds (then aborts NCCL).
  void wait(const std::string& what, double timeout);

 private:
  NcclComm() = default;
  void* comm_ = nullptr;
  int rank_ = 0;
};

}  // namespace dist
}  // namespace singa
#endif
