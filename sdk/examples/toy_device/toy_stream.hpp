// toy_stream.hpp - the toy device's streams and events.
//
// A stream is a queue with a worker thread: copies and kernels are pushed
// onto it and run later, in order, as a GPU runs what is queued on a CUDA
// stream. An event marks a point in a stream's queue; the host uses it to
// wait for that point (event_synchronize) or to hold another stream back
// until the point is reached (stream_wait_event). The core creates the
// streams (one per concurrent run) and decides where to wait: the toy only
// has to keep its promises about order.
#ifndef TOY_STREAM_HPP
#define TOY_STREAM_HPP

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace toy {

class Stream {
 public:
  // `delay_us`: a pause before each task (the option toy.stream_delay_us),
  // which makes an ordering mistake of the host show as a wrong result.
  explicit Stream(int delay_us);
  ~Stream();  // runs what is queued, then stops the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void push(std::function<void()> task);
  // Returns once everything pushed before the call has run.
  void drain();

 private:
  void work();
  const int delay_us_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t pushed_ = 0, done_ = 0;
  bool stopping_ = false;
  std::thread worker_;  // last: started once everything above exists
};

// Counts records and the points reached: record() takes a ticket, the
// stream reaches it when it gets there, and waiting is waiting for the
// ticket of the last record (CUDA's semantics: a wait on an event never
// recorded returns at once).
class Event {
 public:
  // A NULL stream is the synchronous default stream: its point is reached
  // at once, and holding it back means waiting here.
  void record(Stream* stream);
  void wait_on(Stream* stream);  // `stream` waits; the caller does not
  void synchronize();            // the caller waits

 private:
  void reach(uint64_t ticket);
  void wait_for(uint64_t ticket);
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t recorded_ = 0, reached_ = 0;
};

}  // namespace toy

#endif  // TOY_STREAM_HPP
