#include "host.hpp"

#include <singa/runtime.hpp>

namespace singa {

Device::Device(const singa_device_def& def, std::string plugin_path)
    : def_(def), name_(def.name ? def.name : ""), plugin_path_(std::move(plugin_path)) {
  def_.name = name_.c_str();
}

static void check(singa_status* st, const std::string& what) { throw_status(st, what); }

int32_t Device::count(std::string* reason) const {
  int32_t n = 0;
  if (!def_.device_count) return 1;
  singa_status* st = def_.device_count(def_.self, &n);
  if (st) {
    if (reason) *reason = take_status_message(st);
    else take_status_message(st);
    return 0;
  }
  return n;
}

void* Device::alloc(int32_t id, size_t bytes, size_t alignment) {
  void* p = nullptr;
  if (singa_status* st = def_.alloc(def_.self, id, bytes, alignment, &p))
    check(st, "device '" + name_ + "': allocating " + std::to_string(bytes) + " bytes");
  if (!p) throw Error(SINGA_OUT_OF_MEMORY, "device '" + name_ + "' returned no memory for " + std::to_string(bytes) + " bytes");
  return p;
}

void Device::free(int32_t id, void* p) { def_.free(def_.self, id, p); }

void Device::copy(int32_t id, void* dst, size_t dst_off, const void* src, size_t src_off, size_t bytes,
                  singa_copy_kind kind, void* stream) {
  if (singa_status* st = def_.copy(def_.self, id, dst, dst_off, src, src_off, bytes, kind, stream))
    check(st, "device '" + name_ + "': copy");
}

void Device::memset(int32_t id, void* p, size_t off, int value, size_t bytes, void* stream) {
  check(def_.memset(def_.self, id, p, off, value, bytes, stream), "device '" + name_ + "': memset");
}

void Device::synchronize(int32_t id, void* stream) {
  if (def_.synchronize) check(def_.synchronize(def_.self, id, stream), "device '" + name_ + "': synchronize");
}

void Device::parallel_for(int64_t n, int64_t grain, singa_parallel_fn fn, void* user) const {
  if (def_.parallel_for) {
    def_.parallel_for(def_.self, n, grain, fn, user);
  } else {
    fn(user, 0, n);
  }
}

int32_t Device::num_threads() const { return def_.num_threads ? def_.num_threads(def_.self) : 1; }

void Device::set_num_threads(int32_t n) {
  if (def_.set_num_threads) def_.set_num_threads(def_.self, n);
}

}  // namespace singa
