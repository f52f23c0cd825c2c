#include "allocator.hpp"

#include "cuda_util.hpp"

#include <cstdint>

namespace singa {
namespace cuda {

namespace {

// cudaMalloc already aligns to 256 bytes; larger alignments are served by
// over-allocating and rounding the pointer up.
constexpr size_t kNativeAlignment = 256;
constexpr size_t kMinBucket = 512;

std::string mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

CachingAllocator::CachingAllocator(bool caching) : caching_(caching) {}

// Blocks are not returned here: at process exit the CUDA runtime may already
// be gone. shutdown() calls release_cache() while it is still alive.
CachingAllocator::~CachingAllocator() = default;

size_t CachingAllocator::bucket_size(size_t bytes) {
  if (bytes <= kMinBucket) return kMinBucket;
  // Four buckets per power of two: at most 25% waste, few distinct sizes so
  // that blocks freed by one run are found again by the next.
  size_t p = size_t(1) << (63 - __builtin_clzll(static_cast<unsigned long long>(bytes)));
  size_t step = p / 4 < kMinBucket ? kMinBucket : p / 4;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::Pool& CachingAllocator::pool(int device) {
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto& p = pools_[device];
  if (!p) p = std::make_unique<Pool>();
  return *p;
}

void* CachingAllocator::alloc(int device, size_t bytes, size_t alignment) {
  if (alignment == 0) alignment = 1;
  if (alignment & (alignment - 1))
    sdk::fail("cuda: alignment " + std::to_string(alignment) + " is not a power of two");
  const size_t extra = alignment > kNativeAlignment ? alignment : 0;
  if (bytes > SIZE_MAX / 2 - extra) sdk::fail("cuda: cannot allocate " + std::to_string(bytes) + " bytes", SINGA_OUT_OF_MEMORY);
  const size_t size = bucket_size(bytes + extra);
  Pool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mu);

  void* base = nullptr;
  auto it = p.free_lists.find(size);
  if (caching_ && it != p.free_lists.end() && !it->second.empty()) {
    base = it->second.back();
    it->second.pop_back();
    p.cached -= size;
  } else {
    DeviceGuard guard(device);
    cudaError_t err = cudaMalloc(&base, size);
    if (err == cudaErrorMemoryAllocation && p.cached > 0) {
      // The cache may hold enough memory in other sizes: give it back and retry.
      (void)cudaGetLastError();
      release_locked(device, p);
      err = cudaMalloc(&base, size);
    }
    if (err != cudaSuccess) {
      std::string msg = cuda_message(err, "cudaMalloc of " + std::to_string(bytes) + " bytes on device " + std::to_string(device));
      size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        msg += "; " + mib(free_b) + " free of " + mib(total_b);
      else
        (void)cudaGetLastError();
      throw sdk::Error(cuda_code(err), msg);
    }
  }
  uintptr_t aligned = (reinterpret_cast<uintptr_t>(base) + alignment - 1) & ~(uintptr_t(alignment) - 1);
  void* ptr = reinterpret_cast<void*>(aligned);
  p.live[ptr] = Block{base, size};
  return ptr;
}

bool CachingAllocator::free(int device, void* ptr) {
  if (!ptr) return true;
  Pool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = p.live.find(ptr);
  if (it == p.live.end()) return false;
  Block b = it->second;
  p.live.erase(it);
  if (caching_) {
    p.free_lists[b.size].push_back(b.base);
    p.cached += b.size;
    return true;
  }
  DeviceGuard guard(device);
  // A failure here is an earlier asynchronous error resurfacing; the next
  // checked call on this device reports it.
  if (cudaFree(b.base) != cudaSuccess) (void)cudaGetLastError();
  return true;
}

size_t CachingAllocator::cached_bytes(int device) {
  Pool& p = pool(device);
  std::lock_guard<std::mutex> lock(p.mu);
  return p.cached;
}

void CachingAllocator::release_locked(int device, Pool& p) {
  DeviceGuard guard(device);
  for (auto& entry : p.free_lists)
    for (void* base : entry.second)
      if (cudaFree(base) != cudaSuccess) (void)cudaGetLastError();
  p.free_lists.clear();
  p.cached = 0;
}

void CachingAllocator::release_cache() {
  std::lock_guard<std::mutex> lock(pools_mu_);
  for (auto& entry : pools_) {
    std::lock_guard<std::mutex> pool_lock(entry.second->mu);
    if (entry.second->cached) release_locked(entry.first, *entry.second);
  }
}

}  // namespace cuda
}  // namespace singa
