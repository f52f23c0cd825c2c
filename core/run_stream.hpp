// run_stream.hpp - the stream an Executor run queues its device work on, and
// the events that order hand-offs (docs/abi.md, "Streams and events").
// Internal to libsinga_core.
#ifndef SINGA_CORE_RUN_STREAM_HPP
#define SINGA_CORE_RUN_STREAM_HPP

#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <memory>
#include <mutex>
#include <vector>

namespace singa {

// The streams of one Executor on its device (which has_events()): a run
// takes one, creating it when none is free, and gives it back, so runs from
// several threads each queue on their own. Destroyed with the Executor.
class StreamPool {
 public:
  struct Entry {
    void* stream = nullptr;
    void* event = nullptr;  // recorded at each hand-off to the host
    bool waited = false;    // has waited for the uploaded constants
  };
  StreamPool(Device* device, int32_t id) : device_(device), id_(id) {}
  ~StreamPool();  // waits for and destroys every stream and event
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;
  Device* device() const { return device_; }
  int32_t id() const { return id_; }
  // A stream of its own for the caller; it has waited for the constants.
  Entry acquire();
  void give_back(Entry e);
  // A failed run's stream may hold broken work: it is destroyed, not reused.
  void discard(Entry e);
  // Uploads the Executor's constants on a stream of the pool and records an
  // event after them, which any other stream waits for before its first use.
  Tensor upload(const Tensor& host_constant);
  void finish_uploads();

 private:
  Entry create();
  void destroy(Entry& e) noexcept;
  Device* device_;
  int32_t id_;
  std::mutex mutex_;
  std::vector<Entry> free_;
  size_t created_ = 0, given_back_ = 0;
  Entry upload_;
  void* uploaded_ = nullptr;  // the event after the constants
};

// One run's use of a StreamPool (none: the NULL stream, every copy
// synchronous, exactly as without streams). Device values the host lets go
// of are kept until the stream has passed their last use: freed memory may
// be handed to another run's stream at once.
class RunStream {
 public:
  explicit RunStream(StreamPool* pool) : pool_(pool) {}
  ~RunStream();  // after an error: waits, releases, discards the stream
  RunStream(const RunStream&) = delete;
  RunStream& operator=(const RunStream&) = delete;
  // The stream for work on (device, id): this run's when it is the pool's
  // device, else NULL. Creates or takes the stream on first need.
  void* stream_for(const Device* device, int32_t id);
  // Work was queued on the stream since the host last waited.
  void queued() { pending_ = true; }
  // `t` for a kernel on (device, id): copied there on the stream when needed.
  Tensor to_device(const Tensor& t, Device* device, int32_t id);
  // `t` in host memory, complete on return (a hand-off to the host).
  Tensor to_host(const Tensor& t);
  // Everything queued so far is done when this returns (event record and
  // event_synchronize); kept memory is released.
  void sync();
  // Keeps the memory of `t` alive until the next sync when it is on the stream's device.
  void keep(const Tensor& t);
  // Syncs when the kept memory has grown past a bound (64 MiB).
  void trim();
  // The end of a run: syncs and gives the stream back.
  void finish();

 private:
  bool mine(const Device* device, int32_t id) const {
    return pool_ && device == pool_->device() && id == pool_->id();
  }
  StreamPool* pool_;
  StreamPool::Entry entry_;
  bool have_ = false, pending_ = false;
  std::vector<std::shared_ptr<Storage>> kept_;
  size_t kept_bytes_ = 0;
};

}  // namespace singa
#endif
