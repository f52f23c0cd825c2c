// allocator.hpp - a caching pool of cl_mem buffers, one per device id.
//
// clCreateBuffer/clReleaseMemObject are not free (PoCL allocates and frees
// host memory each time), and a model run allocates the same sizes again and
// again. Freed buffers wait in size-bucketed free lists. Reuse is safe because
// every command of a device goes through its one in-order queue: work queued
// after the free that reuses a buffer runs after the work that used it, and
// OpenCL keeps a released buffer alive while queued commands reference it.
#ifndef SINGA_OPENCL_ALLOCATOR_HPP
#define SINGA_OPENCL_ALLOCATOR_HPP

#include "plugin_singleton.hpp"
#include "cl_runtime.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace singa {
namespace opencl {

class BufferPool {
 public:
  // `caching` false releases buffers at once (SINGA_OPENCL_NO_CACHE=1).
  explicit BufferPool(bool caching);

  // A buffer of at least `bytes`. Throws sdk::Error (OUT_OF_MEMORY after
  // dropping the cache and retrying).
  cl_mem alloc(int device, size_t bytes);
  // Returns false when `mem` did not come from alloc on `device`.
  bool free(int device, cl_mem mem);
  // The device id a live buffer belongs to, or -1.
  int owner(cl_mem mem);
  size_t cached_bytes(int device);
  size_t live_bytes(int device);
  // Releases every cached buffer (shutdown, or on allocation failure).
  void release_cache();

  // The bucket a request of `bytes` is served from.
  static size_t bucket_size(size_t bytes);

 private:
  struct Pool {
    std::map<size_t, std::vector<cl_mem>> free_lists;  // bucket size -> buffers
    size_t cached = 0, live = 0;
  };
  void release_locked(Pool& p);

  bool caching_;
  std::mutex mu_;
  std::map<int, Pool> pools_;
  std::unordered_map<cl_mem, std::pair<int, size_t>> live_;  // buffer -> (device, bucket)
};

BufferPool& buffer_pool();
// Its holder: the plugin's shutdown releases and deletes the pool.
PluginSingleton<BufferPool>& buffer_pool_holder();

}  // namespace opencl
}  // namespace singa

#endif
