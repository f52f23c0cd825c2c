#include "host.hpp"

#include <singa/runtime.hpp>

#include <algorithm>
#include <cstring>

namespace singa {

Device::Device(const singa_device_def& def, std::string plugin_path)
    : def_(def), name_(def.name ? def.name : ""), plugin_path_(std::move(plugin_path)) {
  def_.name = name_.c_str();
  read_extensions();
}

// Walks the device's extension chain once, at registration: unknown types
// are skipped, a known one is read only within its struct_size, so a plugin
// older or newer than this core is fine. Events count only with all five
// calls and stream_create/stream_destroy: half a protocol cannot order work.
void Device::read_extensions() {
  int links = 0;
  for (const singa_extension* x = def_.extensions; x && links < 64; x = x->next, ++links) {
    if (x->type != SINGA_EXTENSION_EVENTS || x->struct_size < sizeof(singa_extension)) continue;
    const auto* ev = reinterpret_cast<const singa_event_ext*>(x);
    singa_event_ext e{};
    std::memcpy(&e, ev, std::min(x->struct_size, sizeof(e)));
    e.base.struct_size = sizeof(e);
    if (!SINGA_EXTENSION_HAS_FIELD(ev, singa_event_ext, event_synchronize)) continue;
    events_ = e;
  }
  has_events_ = def_.stream_create && def_.stream_destroy && events_.event_create && events_.event_destroy &&
                events_.event_record && events_.stream_wait_event && events_.event_synchronize;
  def_.extensions = nullptr;  // the plugin's chain is not kept: everything needed is copied
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

void* Device::stream_create(int32_t id) {
  void* s = nullptr;
  if (!def_.stream_create) throw Error(SINGA_UNIMPLEMENTED, "device '" + name_ + "' has no streams");
  check(def_.stream_create(def_.self, id, &s), "device '" + name_ + "': stream_create");
  if (!s) throw Error(SINGA_INTERNAL, "device '" + name_ + "': stream_create returned no stream");
  return s;
}

void Device::stream_destroy(int32_t id, void* stream) {
  if (def_.stream_destroy && stream) def_.stream_destroy(def_.self, id, stream);
}

void* Device::event_create(int32_t id) {
  void* e = nullptr;
  if (!has_events_) throw Error(SINGA_UNIMPLEMENTED, "device '" + name_ + "' has no events");
  check(events_.event_create(def_.self, id, &e), "device '" + name_ + "': event_create");
  if (!e) throw Error(SINGA_INTERNAL, "device '" + name_ + "': event_create returned no event");
  return e;
}

void Device::event_destroy(int32_t id, void* event) {
  if (has_events_ && event) events_.event_destroy(def_.self, id, event);
}

void Device::event_record(int32_t id, void* event, void* stream) {
  check(events_.event_record(def_.self, id, event, stream), "device '" + name_ + "': event_record");
}

void Device::stream_wait_event(int32_t id, void* stream, void* event) {
  check(events_.stream_wait_event(def_.self, id, stream, event), "device '" + name_ + "': stream_wait_event");
}

void Device::event_synchronize(int32_t id, void* event) {
  check(events_.event_synchronize(def_.self, id, event), "device '" + name_ + "': event_synchronize");
}

int32_t Device::num_threads() const { return def_.num_threads ? def_.num_threads(def_.self) : 1; }

void Device::set_num_threads(int32_t n) {
  if (def_.set_num_threads) def_.set_num_threads(def_.self, n);
}

}  // namespace singa
