// step_barrier.hpp - the barrier between the steps of a recurrence whose
// parts run on the pool's threads through one parallel_for for all steps.
//
// A parallel_for per step hands the parts out and joins them again at every
// step: on the 2-core VMs that was ~1 us a step, 15% of a 256-unit LSTM's
// time at 2 threads. With one parallel_for over the parts, each participant
// runs its parts' steps in order and, after each step, counts its parts in
// here and waits for the rest: one shared counter, no lock, and every part
// keeps its thread (and its weights that thread's cache) for the whole
// sequence.
//
// Why it cannot deadlock: the pool calls the body once per chunk of one
// part, and a caller that finds the pool busy runs all parts in one call, so
// a participant waits only on parts it does not hold. A chunk is only ever
// waited on by the participants that hold other chunks, and there are no
// more parts than participants; a worker that sleeps is woken by the
// parallel_for and takes its chunk. The waits spin, then yield the core, so
// a waiting thread leaves the core to a delayed one on an oversubscribed
// machine.
#ifndef SINGA_OPS_RNN_STEP_BARRIER_HPP
#define SINGA_OPS_RNN_STEP_BARRIER_HPP

#include <atomic>
#include <cstdint>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace singa {
namespace ops {
namespace rnn {

class StepBarrier {
 public:
  explicit StepBarrier(int64_t parts) : parts_(parts) {}

  // Counts `mine` parts as done with step s and returns when all parts are:
  // their writes of step s are then visible to the caller.
  void arrive_and_wait(int64_t s, int64_t mine) {
    arrived_.fetch_add(mine, std::memory_order_acq_rel);
    const int64_t target = parts_ * (s + 1);
    for (int spins = 0; arrived_.load(std::memory_order_acquire) < target; ++spins) {
      if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  const int64_t parts_;
  alignas(64) std::atomic<int64_t> arrived_{0};
};

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
