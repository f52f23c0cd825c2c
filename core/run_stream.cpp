#include "run_stream.hpp"

#include "host.hpp"

#include <exception>
#include <string>

namespace singa {

namespace {

// Device memory a run lets go of waits for the stream; past this much the
// run waits early so that a long model's peak stays bounded.
constexpr size_t kMaxKeptBytes = size_t(64) << 20;

void warn(const std::string& what) { host_api()->log(SINGA_LOG_WARNING, what.c_str()); }

}  // namespace

StreamPool::~StreamPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (upload_.stream) free_.push_back(upload_);
  if (uploaded_) device_->event_destroy(id_, uploaded_);
  for (Entry& e : free_) destroy(e);
  if (given_back_ < created_) warn("device '" + device_->name() + "': an Executor was destroyed while a run held a stream");
}

StreamPool::Entry StreamPool::create() {
  Entry e;
  e.stream = device_->stream_create(id_);
  try {
    e.event = device_->event_create(id_);
  } catch (...) {
    device_->stream_destroy(id_, e.stream);
    throw;
  }
  ++created_;
  return e;
}

void StreamPool::destroy(Entry& e) noexcept {
  // Destroying a stream with work on it is the device's business to refuse
  // or drain; waiting first keeps every device's contract simple.
  try {
    device_->synchronize(id_, e.stream);
  } catch (const std::exception& ex) {
    warn(ex.what());
  }
  device_->event_destroy(id_, e.event);
  device_->stream_destroy(id_, e.stream);
  e = Entry();
}

StreamPool::Entry StreamPool::acquire() {
  Entry e;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    }
  }
  if (!e.stream) e = create();
  if (!e.waited) {
    // A cross-stream hand-off: the constants were written on the upload
    // stream and are read by kernels on this one.
    if (uploaded_) device_->stream_wait_event(id_, e.stream, uploaded_);
    e.waited = true;
  }
  return e;
}

void StreamPool::give_back(Entry e) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++given_back_;
  free_.push_back(e);
}

void StreamPool::discard(Entry e) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++given_back_;
  }
  destroy(e);
}

Tensor StreamPool::upload(const Tensor& host_constant) {
  if (!upload_.stream) {
    upload_ = create();
    ++given_back_;  // owned by the pool, never lent until finish_uploads
  }
  return host_constant.to(device_, id_, upload_.stream);
}

void StreamPool::finish_uploads() {
  if (!upload_.stream) return;
  uploaded_ = device_->event_create(id_);
  device_->event_record(id_, uploaded_, upload_.stream);
  upload_.waited = true;  // the same stream: already in order
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(upload_);
  upload_ = Entry();
}

RunStream::~RunStream() {
  if (!have_) return;
  // Only after an error: the run's memory may be released only once the
  // stream no longer uses it, and the stream is not reused.
  pool_->discard(entry_);
  kept_.clear();
}

void* RunStream::stream_for(const Device* device, int32_t id) {
  if (!mine(device, id)) return nullptr;
  if (!have_) {
    entry_ = pool_->acquire();
    have_ = true;
  }
  return entry_.stream;
}

Tensor RunStream::to_device(const Tensor& t, Device* device, int32_t id) {
  void* stream = stream_for(device, id);
  if (!stream || !t.on_host()) return t.to(device, id);  // already there, or between devices: synchronous
  Tensor out = t.to(device, id, stream);
  if (out.storage() != t.storage()) pending_ = true;
  return out;
}

Tensor RunStream::to_host(const Tensor& t) {
  if (t.on_host() || !t.defined()) return t;
  void* stream = stream_for(t.device(), t.device_id());
  if (!stream) return t.to_host();
  Tensor out = t.to(nullptr, 0, stream);
  pending_ = true;
  sync();
  return out;
}

void RunStream::sync() {
  if (!have_ || !pending_) return;
  Device* d = pool_->device();
  d->event_record(pool_->id(), entry_.event, entry_.stream);
  d->event_synchronize(pool_->id(), entry_.event);
  pending_ = false;
  kept_.clear();
  kept_bytes_ = 0;
}

void RunStream::keep(const Tensor& t) {
  if (!have_ || !t.defined() || t.on_host() || !mine(t.device(), t.device_id())) return;
  auto s = t.storage();
  kept_bytes_ += s->bytes;
  kept_.push_back(std::move(s));
}

void RunStream::trim() {
  if (kept_bytes_ > kMaxKeptBytes) sync();
}

void RunStream::finish() {
  if (!have_) return;
  sync();
  have_ = false;
  pool_->give_back(entry_);
  entry_ = StreamPool::Entry();
}

}  // namespace singa
