// allocator.hpp - a caching pool over cudaMalloc, one per device id.
//
// cudaMalloc/cudaFree are slow and cudaFree synchronises the whole device, so
// freed blocks are kept in size-bucketed free lists and handed out again.
// Reuse is ordered by the host: a run on its own stream (the events
// extension, core/run_stream.hpp) frees device memory only after a wait on
// that stream has passed the work that used it, so a block handed out again
// is idle; without events the core uses the legacy default stream, where
// later work is ordered after earlier. Two user streams that both use the
// pool must be synchronised by the user.
#ifndef SINGA_CUDA_ALLOCATOR_HPP
#define SINGA_CUDA_ALLOCATOR_HPP

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace cuda {

class CachingAllocator {
 public:
  // `caching` false frees blocks at once (cuda.cache=0: lets
  // compute-sanitizer see every use after free).
  explicit CachingAllocator(bool caching);
  ~CachingAllocator();

  // Throws sdk::Error (OUT_OF_MEMORY after dropping the cache and retrying).
  void* alloc(int device, size_t bytes, size_t alignment);
  // Returns false when `ptr` did not come from alloc on `device`.
  bool free(int device, void* ptr);
  // Bytes held in free lists (usable without asking the driver).
  size_t cached_bytes(int device);
  // cudaFree of every cached block of every device (shutdown, or on OOM).
  void release_cache();

  // The bucket a request of `bytes` is served from (exposed for tests and docs).
  static size_t bucket_size(size_t bytes);

 private:
  struct Block {
    void* base;
    size_t size;  // bucket size, the key of its free list
  };
  struct Pool {
    std::mutex mu;
    std::map<size_t, std::vector<void*>> free_lists;  // bucket size -> bases
    std::unordered_map<void*, Block> live;           // handed-out pointer -> block
    size_t cached = 0;
  };
  Pool& pool(int device);
  static void release_locked(int device, Pool& p);

  bool caching_;
  std::mutex pools_mu_;
  std::map<int, std::unique_ptr<Pool>> pools_;
};

}  // namespace cuda
}  // namespace singa

#endif
