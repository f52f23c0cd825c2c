// toy_pool.cpp - the first-fit allocator behind the toy device.
#include "toy_pool.hpp"

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <new>

namespace toy {

namespace {

// Every block is a multiple of this and starts at a multiple of it, which
// also covers the 64-byte alignment the core asks of devices.
constexpr size_t kGrain = 64;
constexpr size_t kBaseAlignment = 4096;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

Pool::Pool(size_t bytes) : size_(round_up(bytes, kBaseAlignment)) {
  // Pages are committed by the OS only when touched, so a large pool costs
  // nothing until it is used.
  base_ = static_cast<unsigned char*>(std::aligned_alloc(kBaseAlignment, size_));
  if (!base_) throw std::bad_alloc();
  free_[0] = size_;
  stats_.total_bytes = size_;
}

Pool::~Pool() { std::free(base_); }

void* Pool::allocate(size_t bytes, size_t alignment, std::string& why) {
  if (alignment < kGrain) alignment = kGrain;
  if (alignment & (alignment - 1)) {
    why = "alignment " + std::to_string(alignment) + " is not a power of two";
    return nullptr;
  }
  if (bytes > size_) {
    why = "asked for " + std::to_string(bytes) + " bytes, more than the whole pool (" + std::to_string(size_) + ")";
    return nullptr;
  }
  const size_t need = round_up(bytes == 0 ? 1 : bytes, kGrain);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const size_t start = it->first, len = it->second;
    // base_ is aligned to kBaseAlignment, so aligning the offset aligns the
    // address for every alignment up to it (larger ones are rare).
    const size_t at = round_up(reinterpret_cast<uintptr_t>(base_) + start, alignment) -
                      reinterpret_cast<uintptr_t>(base_);
    if (at + need > start + len) continue;
    free_.erase(it);
    if (at > start) free_[start] = at - start;
    if (at + need < start + len) free_[at + need] = start + len - (at + need);
    live_[at] = need;
    stats_.live_bytes += need;
    if (stats_.live_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.live_bytes;
    ++stats_.allocations;
    return base_ + at;
  }
  why = "pool exhausted: " + std::to_string(bytes) + " bytes asked, " + std::to_string(stats_.live_bytes) + " of " +
        std::to_string(size_) + " in use";
  return nullptr;
}

bool Pool::release(void* p) {
  if (!p) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
  if (a < b || a >= b + size_) return false;
  auto it = live_.find(a - b);
  if (it == live_.end()) return false;
  size_t start = it->first, len = it->second;
  live_.erase(it);
  stats_.live_bytes -= len;
  ++stats_.frees;
  // Coalesce with the free neighbours on both sides, so the pool does not
  // fragment into pieces too small for the next big tensor.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = len;
  return true;
}

std::map<size_t, size_t>::const_iterator Pool::block_at(uintptr_t a) const {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
  if (a < b || a >= b + size_) return live_.end();
  auto it = live_.upper_bound(a - b);
  if (it == live_.begin()) return live_.end();
  --it;
  return a - b < it->first + it->second ? it : live_.end();
}

bool Pool::holds(const void* p, size_t offset, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = block_at(a);
  if (it == live_.end()) return false;
  const size_t block_end = it->first + it->second;
  const size_t at = a - reinterpret_cast<uintptr_t>(base_);
  return offset <= block_end - at && bytes <= block_end - at - offset;
}

void Pool::count_copy(int direction, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (direction == 0) {
    ++stats_.copies_in;
    stats_.bytes_in += bytes;
  } else if (direction == 1) {
    ++stats_.copies_out;
    stats_.bytes_out += bytes;
  } else {
    ++stats_.copies_within;
  }
}

PoolStats Pool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

namespace {
std::mutex g_pool_mu;
std::atomic<Pool*> g_pool{nullptr};
}  // namespace

Pool& pool() {
  // Created on first use and destroyed only by release_pool(), never by
  // static destruction: the host may free buffers after this library's
  // statics would have been torn down.
  if (Pool* p = g_pool.load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool.load()) g_pool.store(new Pool(kPoolBytes), std::memory_order_release);
  return *g_pool.load();
}

bool release_pool(PoolStats* last) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  Pool* p = g_pool.load();
  if (!p) return true;
  if (last) *last = p->stats();
  if (p->stats().live_bytes != 0) return false;
  g_pool.store(nullptr);
  delete p;
  return true;
}

}  // namespace toy
