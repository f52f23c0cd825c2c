#include "allocator.hpp"
#include "plugin_singleton.hpp"
#include "runtime_option.hpp"

#include <cstdlib>
#include <cstring>

namespace singa {
namespace opencl {

namespace {
constexpr size_t kMinBucket = 256;
}

PluginSingleton<BufferPool>& buffer_pool_holder() {
  static PluginSingleton<BufferPool> holder(
      [] { return new BufferPool(ops::runtime_flag("opencl.cache", true)); });  // runtime option, read at first use
  return holder;
}

BufferPool& buffer_pool() { return buffer_pool_holder().get(); }

BufferPool::BufferPool(bool caching) : caching_(caching) {}

size_t BufferPool::bucket_size(size_t bytes) {
  if (bytes <= kMinBucket) return kMinBucket;
  // Four buckets per power of two: at most 25% waste, and few distinct sizes
  // so that the buffers one run frees serve the next.
  size_t p = size_t(1) << (63 - __builtin_clzll(static_cast<unsigned long long>(bytes)));
  size_t step = p / 4 < kMinBucket ? kMinBucket : p / 4;
  return (bytes + step - 1) / step * step;
}

cl_mem BufferPool::alloc(int device, size_t bytes) {
  if (bytes > (SIZE_MAX >> 2)) sdk::fail("opencl: cannot allocate " + std::to_string(bytes) + " bytes", SINGA_OUT_OF_MEMORY);
  const size_t size = bucket_size(bytes);
  DeviceEnv& env = Runtime::instance().env(device);
  std::lock_guard<std::mutex> lock(mu_);
  Pool& p = pools_[device];
  cl_mem mem = nullptr;
  auto it = p.free_lists.find(size);
  if (caching_ && it != p.free_lists.end() && !it->second.empty()) {
    mem = it->second.back();
    it->second.pop_back();
    p.cached -= size;
  } else {
    cl_int err = CL_SUCCESS;
    mem = clCreateBuffer(env.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    if (err != CL_SUCCESS && p.cached > 0) {
      // The cache may hold enough memory in other sizes: give it back and retry.
      release_locked(p);
      mem = clCreateBuffer(env.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    }
    if (err != CL_SUCCESS)
      throw sdk::Error(err == CL_INVALID_BUFFER_SIZE ? SINGA_OUT_OF_MEMORY : cl_code(err),
                       "opencl: clCreateBuffer of " + std::to_string(bytes) + " bytes on device " + std::to_string(device) +
                           " (" + env.name + ", " + std::to_string(env.global_mem >> 20) + " MiB, " +
                           std::to_string(p.live >> 20) + " MiB in use) failed: " + cl_error_name(err));
  }
  p.live += size;
  live_[mem] = {device, size};
  return mem;
}

bool BufferPool::free(int device, cl_mem mem) {
  if (!mem) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(mem);
  if (it == live_.end() || it->second.first != device) return false;
  const size_t size = it->second.second;
  live_.erase(it);
  Pool& p = pools_[device];
  p.live -= size;
  if (caching_) {
    p.free_lists[size].push_back(mem);
    p.cached += size;
  } else {
    clReleaseMemObject(mem);
  }
  return true;
}

int BufferPool::owner(cl_mem mem) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(mem);
  return it == live_.end() ? -1 : it->second.first;
}

size_t BufferPool::cached_bytes(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_[device].cached;
}

size_t BufferPool::live_bytes(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_[device].live;
}

void BufferPool::release_locked(Pool& p) {
  for (auto& entry : p.free_lists)
    for (cl_mem m : entry.second) clReleaseMemObject(m);
  p.free_lists.clear();
  p.cached = 0;
}

void BufferPool::release_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : pools_) release_locked(entry.second);
}

}  // namespace opencl
}  // namespace singa
