// thread_pool.hpp - the CPU device's intra-op pool.
#ifndef SINGA_CPU_THREAD_POOL_HPP
#define SINGA_CPU_THREAD_POOL_HPP

#include <singa/singa_abi.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace singa {
namespace cpu {

// A fork-join pool: parallel_for hands [0, n) out in chunks to the workers and
// the caller, and returns when all are done. Each participant first runs its
// own contiguous share of the chunks, so that consecutive ops that split their
// tensors alike find their share in that core's cache (with a shared counter
// the share went to whoever came first, and about half of each tensor crossed
// between the cores; the VMs' slow phases look like cross-core traffic
// costing more); a participant done with its share takes the others' chunks
// from their far ends, so a late or slow one does not hold the job up. A Rep may be run from several
// threads at once; a caller that finds the pool busy runs its loop inline
// rather than waiting, so concurrent runs never deadlock or mix work.
//
// Every participant comes for every job published while it is idle (a new
// worker counts from the generation current when it was started), and runs
// fn once per chunk: a loop whose parts wait on each other (an LSTM's steps,
// plugins/ops_rnn/step_barrier.hpp) may rely on each part getting a thread
// of its own when there are no more parts than threads.
//
// Idle workers spin for a short while (`spin_us`: the runtime option
// cpu.spin_us, default 200 µs) before
// they sleep, and so does the caller waiting for them: the next job of an
// inference comes within microseconds, while waking a sleeping thread takes
// tens of microseconds, or milliseconds on a busy machine, long enough for the
// caller to run every chunk alone (a BERT encoder's 2-thread run took as long
// as its 1-thread run before the spin).
class ThreadPool {
 public:
  static constexpr int64_t kDefaultSpinUs = 200;
  explicit ThreadPool(int threads, int64_t spin_us = kDefaultSpinUs);
  ~ThreadPool();
  int size() const { return restart_threads_ > 0 ? restart_threads_ : int(workers_.size()) + 1; }
  void resize(int threads);
  void parallel_for(int64_t n, int64_t grain, singa_parallel_fn fn, void* user);

  // fork() support, called from pthread_atfork handlers. Before the fork the
  // pool waits for a running job and holds its locks, so that no lock is
  // taken mid-way in the child; the child has none of the parent's workers
  // (only the forking thread survives a fork), so it forgets them and starts
  // as many new ones with its next job. Without this, a job whose parts wait
  // on each other (an LSTM's steps) waited forever in a forked child.
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  void start(int threads);
  void stop();
  void worker_loop(int self, uint64_t seen);
  void run_chunks(int self);

  std::vector<std::thread> workers_;
  std::mutex job_mu_;      // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, for spinning workers to read without the lock
  std::atomic<int> busy_{0};            // active_, likewise for the waiting caller
  bool quit_ = false;
  int64_t spin_ns_ = 0;
  // the current job
  singa_parallel_fn fn_ = nullptr;
  void* user_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  // Participant i (the caller is 0) first runs the chunks of ranges_[i] in
  // order, then takes what is left of the others from their back ends.
  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};  // chunk indices: end << 32 | next
  };
  std::vector<Range> ranges_;
  int active_ = 0;
  int restart_threads_ = 0;  // in a forked child: workers to start with the next job
};

}  // namespace cpu
}  // namespace singa
#endif
