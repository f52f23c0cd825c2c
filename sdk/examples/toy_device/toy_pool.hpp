// toy_pool.hpp - the toy device's memory: every buffer is carved out of one
// pool the device owns, as a real accelerator's allocator carves buffers out
// of its device memory.
//
// The pool is host memory underneath, but nothing outside this plugin is
// told so: the device registers as DLPack kDLExtDev, so the core treats its
// buffers as foreign and moves data in and out only through the device's
// copy callbacks. The pool counts what happens to it, and checks every
// pointer it is handed, so a buffer the core forgot to copy shows up as an
// error instead of a silently wrong answer.
#ifndef TOY_POOL_HPP
#define TOY_POOL_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace toy {

// What the pool has done so far (a snapshot).
struct PoolStats {
  size_t total_bytes = 0;  // the pool's size
  size_t live_bytes = 0;   // carved out now, rounded up to blocks
  size_t peak_bytes = 0;   // the most ever carved out at once
  int64_t allocations = 0, frees = 0;
  int64_t copies_in = 0, copies_out = 0, copies_within = 0;  // host->toy, toy->host, toy->toy
  size_t bytes_in = 0, bytes_out = 0;
};

// A first-fit allocator over one fixed block. Thread-safe: the core may
// allocate from several runs at once.
class Pool {
 public:
  explicit Pool(size_t bytes);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A block of at least `bytes` (0 gives a valid block too) aligned to
  // `alignment` (a power of two); nullptr with `why` filled when the pool
  // cannot hold it.
  void* allocate(size_t bytes, size_t alignment, std::string& why);
  // Returns a block; false when `p` is not a block of this pool.
  bool release(void* p);
  // Whether [p + offset, p + offset + bytes) lies inside one live block:
  // what every copy, memset and kernel checks before touching toy memory.
  bool holds(const void* p, size_t offset, size_t bytes) const;
  // Counts a copy of `bytes` of the given direction (0 in, 1 out, 2 within).
  void count_copy(int direction, size_t bytes);
  PoolStats stats() const;

 private:
  // The block containing address `a`, or live_.end(); callers hold mu_.
  std::map<size_t, size_t>::const_iterator block_at(uintptr_t a) const;

  unsigned char* base_ = nullptr;
  size_t size_ = 0;
  mutable std::mutex mu_;
  std::map<size_t, size_t> free_;  // offset -> bytes, coalesced
  std::map<size_t, size_t> live_;  // offset -> bytes of each carved block
  PoolStats stats_;
};

// The device's one pool, created on first use (so loading the plugin to list
// it costs nothing). kPoolBytes is what a vendor would read from the driver.
constexpr size_t kPoolBytes = size_t(256) << 20;
Pool& pool();
// Frees the pool when no block is live (the plugin's shutdown); false, and
// the pool kept, while the host still holds toy buffers. `last` receives the
// final counters when the pool was ever created.
bool release_pool(PoolStats* last);

}  // namespace toy

#endif  // TOY_POOL_HPP
