// toy_device.cpp - the device callbacks of the toy device.
//
// Each callback is a thin layer over the pool (toy_pool.hpp) and the streams
// (toy_stream.hpp). A real device plugin has the same shape: alloc/free call
// the driver's allocator, copy/memset enqueue DMA on `stream` (or block when
// it is NULL), synchronize waits for the queue, and the events extension
// (ABI 1.4) maps onto the driver's events.
#include "toy_device.hpp"

#include "toy_pool.hpp"
#include "toy_stream.hpp"

#include <singa/kernel.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace toy {

namespace {

singa_status* error(singa_code code, const std::string& msg) {
  return singa::sdk::host().status_new(code, ("toy device: " + msg).c_str());
}

// Logged at debug level (SINGA_LOG_LEVEL=0 shows it): the pool's events are
// what a vendor looks at first when memory goes wrong.
void debug(const std::string& msg) { singa::sdk::host().log(SINGA_LOG_DEBUG, ("toy: " + msg).c_str()); }

singa_status* device_count(void*, int32_t* count) {
  *count = 1;  // a driver would report its devices, or SINGA_UNAVAILABLE and why
  return nullptr;
}

singa_status* check_id(int32_t id) {
  return id == 0 ? nullptr : error(SINGA_INVALID_ARGUMENT, "there is one toy device (id 0), not id " + std::to_string(id));
}

singa_status* alloc(void*, int32_t id, size_t bytes, size_t alignment, void** out) {
  if (singa_status* st = check_id(id)) return st;
  std::string why;
  *out = pool().allocate(bytes, alignment, why);
  if (!*out) return error(SINGA_OUT_OF_MEMORY, why);
  const PoolStats s = pool().stats();
  debug("alloc " + std::to_string(bytes) + " B (live " + std::to_string(s.live_bytes) + " B, peak " +
        std::to_string(s.peak_bytes) + " B)");
  return nullptr;
}

void release(void*, int32_t, void* ptr) {
  // free cannot report an error through the ABI; a pointer that is not ours
  // is a bug in the caller, worth a loud log rather than a crash.
  if (!pool().release(ptr)) {
    singa::sdk::host().log(SINGA_LOG_ERROR, "toy device: free of a pointer it did not allocate");
    return;
  }
  debug("free (live " + std::to_string(pool().stats().live_bytes) + " B)");
}

// Pointers on the toy side must lie inside a live block; host pointers are
// the caller's business.
singa_status* check_range(const char* what, const void* p, size_t offset, size_t bytes) {
  if (pool().holds(p, offset, bytes)) return nullptr;
  return error(SINGA_INVALID_ARGUMENT, std::string(what) + " range of " + std::to_string(bytes) + " bytes at offset " +
                                           std::to_string(offset) + " is not inside a toy buffer");
}

singa_status* copy(void*, int32_t id, void* dst, size_t dst_offset, const void* src, size_t src_offset, size_t bytes,
                   singa_copy_kind kind, void* stream) {
  if (singa_status* st = check_id(id)) return st;
  if (bytes == 0) return nullptr;
  const bool src_toy = kind != SINGA_COPY_HOST_TO_DEVICE, dst_toy = kind != SINGA_COPY_DEVICE_TO_HOST;
  if (src_toy)
    if (singa_status* st = check_range("copy source", src, src_offset, bytes)) return st;
  if (dst_toy)
    if (singa_status* st = check_range("copy destination", dst, dst_offset, bytes)) return st;
  char* d = static_cast<char*>(dst) + dst_offset;
  const char* s = static_cast<const char*>(src) + src_offset;
  if (stream && kind == SINGA_COPY_HOST_TO_DEVICE) {
    // The ABI lets the host reuse a host source once copy returns (CUDA's
    // copies from pageable memory behave so): stage it now, store it later.
    auto staged = std::make_shared<std::vector<char>>(s, s + bytes);
    run_on(stream, [d, staged] { std::memcpy(d, staged->data(), staged->size()); });
  } else {
    // Device sources stay alive and unchanged until the stream is past this
    // copy, and a host destination is read only after an event says so:
    // keeping those promises is the host's side of the contract.
    run_on(stream, [d, s, bytes] { std::memmove(d, s, bytes); });
  }
  const int direction = kind == SINGA_COPY_HOST_TO_DEVICE ? 0 : kind == SINGA_COPY_DEVICE_TO_HOST ? 1 : 2;
  pool().count_copy(direction, bytes);
  static const char* names[] = {"host->toy", "toy->host", "toy->toy"};
  debug(std::string("copy ") + names[direction] + " " + std::to_string(bytes) + " B");
  return nullptr;
}

singa_status* fill(void*, int32_t id, void* ptr, size_t offset, int value, size_t bytes, void* stream) {
  if (singa_status* st = check_id(id)) return st;
  if (bytes == 0) return nullptr;
  if (singa_status* st = check_range("memset", ptr, offset, bytes)) return st;
  char* d = static_cast<char*>(ptr) + offset;
  run_on(stream, [d, value, bytes] { std::memset(d, value, bytes); });
  return nullptr;
}

singa_status* synchronize(void*, int32_t id, void* stream) {
  if (singa_status* st = check_id(id)) return st;
  if (stream) static_cast<Stream*>(stream)->drain();  // the NULL stream never has work pending
  return nullptr;
}

// ------------------------------------------------ streams and events

// The pause each stream takes before a task, from the named option
// toy.stream_delay_us (--option on the CLI): 0 by default; the example's test
// sets it so that a hand-off the host failed to order shows.
int stream_delay_us() {
  const singa_host_api& h = singa::sdk::host();
  const char* v = SINGA_HAS_FIELD(&h, singa_host_api, runtime_option) && h.runtime_option
                      ? h.runtime_option("toy.stream_delay_us")
                      : nullptr;
  return v ? std::atoi(v) : 0;
}

singa_status* stream_create(void*, int32_t id, void** stream) {
  if (singa_status* st = check_id(id)) return st;
  *stream = new Stream(stream_delay_us());
  debug("stream created");
  return nullptr;
}

void stream_destroy(void*, int32_t, void* stream) { delete static_cast<Stream*>(stream); }

singa_status* event_create(void*, int32_t id, void** event) {
  if (singa_status* st = check_id(id)) return st;
  *event = new Event();
  return nullptr;
}

void event_destroy(void*, int32_t, void* event) { delete static_cast<Event*>(event); }

singa_status* event_record(void*, int32_t id, void* event, void* stream) {
  if (singa_status* st = check_id(id)) return st;
  static_cast<Event*>(event)->record(static_cast<Stream*>(stream));
  return nullptr;
}

singa_status* stream_wait_event(void*, int32_t id, void* stream, void* event) {
  if (singa_status* st = check_id(id)) return st;
  static_cast<Event*>(event)->wait_on(static_cast<Stream*>(stream));
  return nullptr;
}

singa_status* event_synchronize(void*, int32_t id, void* event) {
  if (singa_status* st = check_id(id)) return st;
  static_cast<Event*>(event)->synchronize();
  return nullptr;
}

// Found by the host through singa_device_def.extensions. A host older than
// ABI 1.4 never looks, and runs everything on the NULL stream.
const singa_event_ext kEvents = {
    {SINGA_EVENT_EXT_STRUCT_SIZE, SINGA_EXTENSION_EVENTS, nullptr},
    event_create, event_destroy, event_record, stream_wait_event, event_synchronize};

singa_status* memory_info(void*, int32_t id, size_t* free_bytes, size_t* total_bytes) {
  if (singa_status* st = check_id(id)) return st;
  const PoolStats s = pool().stats();
  *total_bytes = s.total_bytes;
  *free_bytes = s.total_bytes - s.live_bytes;
  return nullptr;
}

}  // namespace

singa_device_def device_def() {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = kDeviceName;
  // Not kDLCPU: the core must not read toy buffers directly, so it inserts
  // copies wherever a toy value meets a node running elsewhere.
  d.dl_device_type = kDLExtDev;
  d.score = 1;
  d.self = nullptr;  // the pool is global; a driver would pass its context
  d.device_count = device_count;
  d.alloc = alloc;
  d.free = release;
  d.copy = copy;
  d.memset = fill;
  d.synchronize = synchronize;
  d.memory_info = memory_info;
  // Streams and events: the core then runs each run's work on a stream of
  // its own. Without them it passes NULL, the synchronous default stream.
  d.stream_create = stream_create;
  d.stream_destroy = stream_destroy;
  d.extensions = &kEvents.base;
  return d;
}

void run_on(void* stream, std::function<void()> task) {
  if (stream) static_cast<Stream*>(stream)->push(std::move(task));
  else task();
}

void shutdown_device() {
  PoolStats s;
  const bool released = release_pool(&s);
  if (s.total_bytes == 0) return;  // the pool was never used
  debug("pool: " + std::to_string(s.allocations) + " allocations, " + std::to_string(s.frees) + " frees, peak " +
        std::to_string(s.peak_bytes) + " B; copies " + std::to_string(s.copies_in) + " in (" +
        std::to_string(s.bytes_in) + " B), " + std::to_string(s.copies_out) + " out (" + std::to_string(s.bytes_out) +
        " B), " + std::to_string(s.copies_within) + " within");
  if (!released) singa::sdk::host().log(SINGA_LOG_WARNING, "toy device: buffers still live at shutdown; pool kept");
}

}  // namespace toy
