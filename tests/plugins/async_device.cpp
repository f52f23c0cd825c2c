// Two devices with truly asynchronous streams, for the host's ordering tests
// (tests/unit/test_events.cpp). A stream is a worker thread that runs queued
// copies and kernels after a short delay, so that a hand-off the host forgets
// to order reads stale or poisoned memory:
//  - "asyncdev" offers streams and the events extension (ABI 1.4);
//  - "asyncnoev" offers streams but no events: the host must keep to the
//    NULL stream, where everything is synchronous.
// Freed buffers are filled with NaNs at once and handed out again first, so
// memory the host frees while queued work still reads it shows in results.
// Kernels (float32, equal shapes): Add, Mul, Relu. The CPU op
// com.singa.test::AsyncCounters returns the counters below, per device.
#include <singa/kernel.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace {

enum Counter { kRecords, kWaits, kEventSyncs, kStreamsCreated, kStreamsDestroyed, kKernelsQueued, kKernelsInline,
               kCopiesQueued, kEventsLive, kNumCounters };
constexpr int kDevices = 2;
std::atomic<int64_t> g_counters[kDevices][kNumCounters];

struct DeviceSelf {
  int index;
};
DeviceSelf g_with_events{0}, g_without_events{1};
void bump(void* self, Counter c, int64_t by = 1) { g_counters[static_cast<DeviceSelf*>(self)->index][c] += by; }

// ---------------------------------------------------------------- memory

// Blocks by address while in use, and freed ones by size for reuse. The
// pool frees every block when the plugin's statics go (process exit, or an
// unload without shutdown), so nothing it holds is left unreachable.
struct Memory {
  std::mutex mutex;
  std::map<void*, size_t> live;
  std::multimap<size_t, void*> free;  // reused first
  ~Memory();
};
Memory g_mem;
bool g_mem_gone = false;  // trivially destructible: still readable after ~Memory

void free_all() {
  std::lock_guard<std::mutex> lock(g_mem.mutex);
  for (auto& b : g_mem.free) std::free(b.second);
  g_mem.free.clear();
}

Memory::~Memory() {
  free_all();
  for (auto& b : live) std::free(b.first);
  live.clear();
  g_mem_gone = true;
}

singa_status* alloc(void*, int32_t, size_t bytes, size_t, void** out) {
  const size_t size = (bytes + 63) / 64 * 64 + 64;
  std::lock_guard<std::mutex> lock(g_mem.mutex);
  auto it = g_mem.free.find(size);
  if (it != g_mem.free.end()) {
    *out = it->second;
    g_mem.free.erase(it);
  } else {
    *out = std::aligned_alloc(64, size);
    if (!*out) return singa::sdk::host().status_new(SINGA_OUT_OF_MEMORY, "asyncdev: out of memory");
  }
  g_mem.live[*out] = size;
  return nullptr;
}

void release(void*, int32_t, void* p) {
  if (g_mem_gone) return;  // freed with the pool already
  std::lock_guard<std::mutex> lock(g_mem.mutex);
  auto it = g_mem.live.find(p);
  if (it == g_mem.live.end()) return;
  std::memset(p, 0xff, it->second);  // NaN floats: a use after free shows
  g_mem.free.emplace(it->second, p);
  g_mem.live.erase(it);
}

// --------------------------------------------------------------- streams

class Stream {
 public:
  Stream() : worker_([this] { loop(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // runs what is queued first
  }
  void push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.push_back(std::move(task));
      ++pushed_;
    }
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t target = pushed_;
    cv_.wait(lock, [&] { return done_ >= target; });
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // the device is slow
      task();
      {
        std::lock_guard<std::mutex> lock(m_);
        ++done_;
      }
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t pushed_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;  // last: starts once the rest exists
};

struct Event {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;
};

// Runs `task` on the stream, or now on the NULL stream.
void launch(void* self, void* stream, std::function<void()> task, Counter queued) {
  if (stream) {
    bump(self, queued);
    static_cast<Stream*>(stream)->push(std::move(task));
  } else {
    task();
  }
}

singa_status* count(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}

singa_status* copy(void* self, int32_t, void* dst, size_t doff, const void* src, size_t soff, size_t bytes,
                   singa_copy_kind kind, void* stream) {
  char* d = static_cast<char*>(dst) + doff;
  const char* s = static_cast<const char*>(src) + soff;
  if (stream && kind == SINGA_COPY_HOST_TO_DEVICE) {
    // The host may reuse its source once this returns (as with CUDA's
    // pageable memory): take a snapshot now, write it later.
    auto snapshot = std::make_shared<std::vector<char>>(s, s + bytes);
    launch(self, stream, [d, snapshot] { std::memcpy(d, snapshot->data(), snapshot->size()); }, kCopiesQueued);
  } else {
    launch(self, stream, [d, s, bytes] { std::memmove(d, s, bytes); }, kCopiesQueued);
  }
  return nullptr;
}

singa_status* fill(void* self, int32_t, void* p, size_t off, int v, size_t bytes, void* stream) {
  char* d = static_cast<char*>(p) + off;
  launch(self, stream, [d, v, bytes] { std::memset(d, v, bytes); }, kCopiesQueued);
  return nullptr;
}

singa_status* synchronize(void*, int32_t, void* stream) {
  if (stream) static_cast<Stream*>(stream)->drain();
  return nullptr;
}

singa_status* stream_create(void* self, int32_t, void** stream) {
  bump(self, kStreamsCreated);
  *stream = new Stream();
  return nullptr;
}

void stream_destroy(void* self, int32_t, void* stream) {
  bump(self, kStreamsDestroyed);
  delete static_cast<Stream*>(stream);
}

singa_status* event_create(void* self, int32_t, void** event) {
  bump(self, kEventsLive);
  *event = new Event();
  return nullptr;
}

void event_destroy(void* self, int32_t, void* event) {
  bump(self, kEventsLive, -1);
  delete static_cast<Event*>(event);
}

singa_status* event_record(void* self, int32_t, void* event, void* stream) {
  bump(self, kRecords);
  auto* e = static_cast<Event*>(event);
  uint64_t g;
  {
    std::lock_guard<std::mutex> lock(e->m);
    g = ++e->recorded;
  }
  auto reach = [e, g] {
    std::lock_guard<std::mutex> lock(e->m);
    if (g > e->reached) e->reached = g;
    e->cv.notify_all();
  };
  if (stream) static_cast<Stream*>(stream)->push(reach);
  else reach();
  return nullptr;
}

singa_status* stream_wait_event(void* self, int32_t, void* stream, void* event) {
  bump(self, kWaits);
  auto* e = static_cast<Event*>(event);
  uint64_t g;
  {
    std::lock_guard<std::mutex> lock(e->m);
    g = e->recorded;
  }
  if (!stream || g == 0) return nullptr;
  static_cast<Stream*>(stream)->push([e, g] {
    std::unique_lock<std::mutex> lock(e->m);
    e->cv.wait(lock, [&] { return e->reached >= g; });
  });
  return nullptr;
}

singa_status* event_synchronize(void* self, int32_t, void* event) {
  bump(self, kEventSyncs);
  auto* e = static_cast<Event*>(event);
  std::unique_lock<std::mutex> lock(e->m);
  const uint64_t g = e->recorded;
  e->cv.wait(lock, [&] { return e->reached >= g; });
  return nullptr;
}

singa_event_ext g_events = {
    {SINGA_EVENT_EXT_STRUCT_SIZE, SINGA_EXTENSION_EVENTS, nullptr},
    event_create, event_destroy, event_record, stream_wait_event, event_synchronize};

singa_device_def device(const char* name, DeviceSelf* self, bool events) {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = name;
  d.dl_device_type = kDLExtDev;
  d.score = 1;
  d.self = self;
  d.device_count = count;
  d.alloc = alloc;
  d.free = release;
  d.copy = copy;
  d.memset = fill;
  d.synchronize = synchronize;
  d.stream_create = stream_create;
  d.stream_destroy = stream_destroy;
  d.extensions = events ? &g_events.base : nullptr;
  return d;
}

// --------------------------------------------------------------- kernels

using singa::sdk::Context;
using singa::sdk::Node;

const float* device_data(const singa::sdk::Tensor& t) {
  singa::sdk::check(t.raw()->device.device_type == kDLExtDev, "asyncdev: an input was not copied to the device");
  return t.data<float>();
}

// Queues the kernel's work on its stream, or runs it now on the NULL stream.
template <int Dev>
void run(const Context& ctx, std::function<void()> work) {
  void* self = Dev == 0 ? &g_with_events : &g_without_events;
  if (void* stream = ctx.stream()) {
    launch(self, stream, std::move(work), kKernelsQueued);
  } else {
    bump(self, kKernelsInline);
    work();
  }
}

template <int Dev, int Op>  // Op: 0 Add, 1 Mul
struct Binary {
  explicit Binary(const Node&) {}
  void compute(Context& ctx) const {
    auto a = ctx.input(0), b = ctx.input(1);
    singa::sdk::check(a.shape() == b.shape(), "asyncdev: shapes differ");
    auto y = ctx.output(0, a.shape(), SINGA_ONNX_FLOAT);
    const float *pa = device_data(a), *pb = device_data(b);
    float* py = y.data<float>();
    const int64_t n = a.numel();
    run<Dev>(ctx, [=] {
      for (int64_t i = 0; i < n; ++i) py[i] = Op == 0 ? pa[i] + pb[i] : pa[i] * pb[i];
    });
  }
};

template <int Dev>
struct Relu {
  explicit Relu(const Node&) {}
  void compute(Context& ctx) const {
    auto x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), SINGA_ONNX_FLOAT);
    const float* px = device_data(x);
    float* py = y.data<float>();
    const int64_t n = x.numel();
    run<Dev>(ctx, [=] {
      for (int64_t i = 0; i < n; ++i) py[i] = px[i] > 0 ? px[i] : 0.0f;
    });
  }
};

struct Counters {
  explicit Counters(const Node&) {}
  void compute(Context& ctx) const {
    auto y = ctx.output(0, {kDevices, kNumCounters}, SINGA_ONNX_INT64);
    for (int d = 0; d < kDevices; ++d)
      for (int c = 0; c < kNumCounters; ++c) y.data<int64_t>()[d * kNumCounters + c] = g_counters[d][c].load();
  }
};

}  // namespace

SINGA_PLUGIN("test_async_device", "1.0", "devices with asynchronous streams, with and without events") {
  reg.device(device("asyncdev", &g_with_events, true));
  reg.device(device("asyncnoev", &g_without_events, false));
  const uint64_t f32 = singa::sdk::bit(SINGA_ONNX_FLOAT);
  reg.kernel<Binary<0, 0>>("", "Add", 7, 14, "asyncdev", {{"T", 0, f32}});
  reg.kernel<Binary<0, 1>>("", "Mul", 7, 14, "asyncdev", {{"T", 0, f32}});
  reg.kernel<Relu<0>>("", "Relu", 6, 14, "asyncdev", {{"T", 0, f32}});
  reg.kernel<Binary<1, 0>>("", "Add", 7, 14, "asyncnoev", {{"T", 0, f32}});
  reg.kernel<Binary<1, 1>>("", "Mul", 7, 14, "asyncnoev", {{"T", 0, f32}});
  reg.kernel<Relu<1>>("", "Relu", 6, 14, "asyncnoev", {{"T", 0, f32}});
  reg.kernel<Counters>("com.singa.test", "AsyncCounters", 1, 1, "cpu", {});
  reg.on_shutdown(free_all);
}
