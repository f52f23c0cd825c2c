// The CPU device: host memory with 64-byte alignment (AVX-512 loads) and the
// intra-op thread pool that kernels reach through ctx_parallel_for.
#include "thread_pool.hpp"
#include "runtime_option.hpp"

#include <singa/kernel.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <pthread.h>
#include <unistd.h>
#include <unordered_map>

namespace {

using singa::cpu::ThreadPool;

// One thread per core until a prepare asks for another count
// (PrepareOptions::threads, the CLI's --threads; docs/options.md).
int default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? int(hw) : 1;
}

// The pool and the block cache live from plugin init to shutdown (not in
// function statics): the host may unload the plugin, and what stays behind then
// is threads running unmapped code and memory nobody can reach.
ThreadPool* g_pool = nullptr;

ThreadPool& pool() { return *g_pool; }

singa_status* device_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

// Large blocks freed by one run are handed to the next allocation of a similar
// size instead of going back to the system: glibc returns big blocks with
// munmap, and the next run then pays a page fault per 4 KiB on first touch
// (about a fifth of a ResNet-18 run before this cache). Small blocks stay with
// malloc, which reuses them well. The cache is bounded (the runtime option
// cpu.cache_mb, default 512; 0 turns it off) and a block serves requests from
// half to all of its size, so at most half of a reused block sits idle. The
// limit is process-wide, read when the plugin loads (docs/options.md).
class BlockCache {
 public:
  static constexpr size_t kMinBlock = size_t(256) << 10;

  explicit BlockCache(size_t limit_mb) : limit_(limit_mb << 20) {}

  void* get(size_t bytes, size_t alignment) {
    if (bytes >= kMinBlock && limit_ > 0 && alignment <= 64) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = idle_.lower_bound(bytes);
      if (it != idle_.end() && it->first <= 2 * bytes) {
        void* p = it->second;
        idle_bytes_ -= it->first;
        idle_.erase(it);
        return p;
      }
    }
    void* p = std::aligned_alloc(alignment, bytes);
    if (p && bytes >= kMinBlock) {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_[p] = bytes;
    }
    return p;
  }

  ~BlockCache() {
    for (auto& b : idle_) std::free(b.second);
  }

  // Held across fork() so that the child never inherits it taken mid-way by
  // another thread; the child makes it anew.
  void before_fork() { mu_.lock(); }
  void after_fork_in_parent() { mu_.unlock(); }
  void after_fork_in_child() { new (&mu_) std::mutex(); }

  void put(void* p) {
    if (!p) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sizes_.find(p);
      if (it != sizes_.end()) {
        if (idle_bytes_ + it->second <= limit_) {
          idle_.emplace(it->second, p);
          idle_bytes_ += it->second;
          return;
        }
        sizes_.erase(it);
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  size_t limit_ = 0, idle_bytes_ = 0;
  std::unordered_map<void*, size_t> sizes_;  // blocks this cache may keep
  std::multimap<size_t, void*> idle_;        // kept blocks by size
};

BlockCache* g_cache = nullptr;

BlockCache& cache() { return *g_cache; }

void cpu_shutdown() {
  delete g_pool;
  g_pool = nullptr;
  delete g_cache;  // frees the idle blocks; blocks still in use belong to tensors that outlive the plugin
  g_cache = nullptr;
}

singa_status* cpu_alloc(void*, int32_t, size_t bytes, size_t alignment, void** out) {
  if (alignment < 64) alignment = 64;
  size_t padded = (bytes + alignment - 1) / alignment * alignment;
  *out = cache().get(padded ? padded : alignment, alignment);
  if (!*out)
    return singa::sdk::host().status_new(SINGA_OUT_OF_MEMORY,
                                          ("cpu: cannot allocate " + std::to_string(bytes) + " bytes").c_str());
  return nullptr;
}

void cpu_free(void*, int32_t, void* p) { cache().put(p); }

singa_status* cpu_copy(void*, int32_t, void* dst, size_t dst_off, const void* src, size_t src_off, size_t bytes,
                       singa_copy_kind, void*) {
  if (bytes) std::memcpy(static_cast<char*>(dst) + dst_off, static_cast<const char*>(src) + src_off, bytes);
  return nullptr;
}

singa_status* cpu_memset(void*, int32_t, void* p, size_t off, int value, size_t bytes, void*) {
  std::memset(static_cast<char*>(p) + off, value, bytes);
  return nullptr;
}

singa_status* cpu_sync(void*, int32_t, void*) { return nullptr; }

singa_status* cpu_memory_info(void*, int32_t, size_t* free_bytes, size_t* total_bytes) {
  long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (total_bytes) *total_bytes = size_t(pages) * size_t(page);
  if (free_bytes) *free_bytes = size_t(avail) * size_t(page);
  return nullptr;
}

// fork() handlers (pthread_atfork; glibc drops them when the plugin is
// unloaded): see ThreadPool::before_fork.
void before_fork() {
  if (g_pool) g_pool->before_fork();
  if (g_cache) g_cache->before_fork();
}
void after_fork_in_parent() {
  if (g_cache) g_cache->after_fork_in_parent();
  if (g_pool) g_pool->after_fork_in_parent();
}
void after_fork_in_child() {
  if (g_cache) g_cache->after_fork_in_child();
  if (g_pool) g_pool->after_fork_in_child();
}

void cpu_parallel_for(void*, int64_t n, int64_t grain, singa_parallel_fn fn, void* user) {
  pool().parallel_for(n, grain, fn, user);
}
int32_t cpu_num_threads(void*) { return pool().size(); }
void cpu_set_num_threads(void*, int32_t n) { pool().resize(n > 0 ? n : default_threads()); }

}  // namespace

SINGA_PLUGIN("cpu", "0.1.0", "CPU device: aligned host memory and an intra-op thread pool") {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "cpu";
  d.dl_device_type = kDLCPU;
  d.score = 10;
  d.device_count = device_count;
  d.alloc = cpu_alloc;
  d.free = cpu_free;
  d.copy = cpu_copy;
  d.memset = cpu_memset;
  d.synchronize = cpu_sync;
  d.memory_info = cpu_memory_info;
  d.parallel_for = cpu_parallel_for;
  d.num_threads = cpu_num_threads;
  d.set_num_threads = cpu_set_num_threads;
  // Read before anything is made, so that a malformed value fails the load
  // with nothing to undo.
  const int64_t spin_us = singa::ops::runtime_option_int("cpu.spin_us", ThreadPool::kDefaultSpinUs, 0, 1000000);
  const size_t cache_mb = size_t(singa::ops::runtime_option_int("cpu.cache_mb", 512, 0, 1 << 20));
  reg.device(d);
  if (!g_pool) g_pool = new ThreadPool(default_threads(), spin_us);
  if (!g_cache) g_cache = new BlockCache(cache_mb);
  static bool fork_handlers = false;
  if (!fork_handlers) fork_handlers = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  reg.on_shutdown(cpu_shutdown);
}
