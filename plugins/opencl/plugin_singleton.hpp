// plugin_singleton.hpp - an object the plugin creates at first use and
// deletes at its shutdown (not at process exit, when the ICD loader may be
// gone already; and not never, since a plugin is unloaded and loaded again
// by Runtime::reset and each load would leak one).
#ifndef SINGA_OPENCL_PLUGIN_SINGLETON_HPP
#define SINGA_OPENCL_PLUGIN_SINGLETON_HPP

#include <atomic>
#include <functional>
#include <mutex>

namespace singa {
namespace opencl {

template <typename T>
class PluginSingleton {
 public:
  explicit PluginSingleton(std::function<T*()> make) : make_(std::move(make)) {}
  T& get() {
    if (T* p = ptr_.load(std::memory_order_acquire)) return *p;
    std::lock_guard<std::mutex> lock(mu_);
    if (!ptr_.load(std::memory_order_relaxed)) ptr_.store(make_(), std::memory_order_release);
    return *ptr_.load(std::memory_order_relaxed);
  }
  // nullptr when get() was never called (shutdown must not create it).
  T* if_created() const { return ptr_.load(std::memory_order_acquire); }
  void destroy() {
    std::lock_guard<std::mutex> lock(mu_);
    delete ptr_.exchange(nullptr);
  }

 private:
  std::function<T*()> make_;
  std::mutex mu_;
  std::atomic<T*> ptr_{nullptr};
};

}  // namespace opencl
}  // namespace singa
#endif
