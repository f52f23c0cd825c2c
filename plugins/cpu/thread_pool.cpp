#include "thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <new>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace singa {
namespace cpu {

namespace {

using Clock = std::chrono::steady_clock;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until `done()` or `ns` have passed; true when done.
template <class F>
bool spin_until(int64_t ns, F&& done) {
  if (ns <= 0) return done();
  const auto deadline = Clock::now() + std::chrono::nanoseconds(ns);
  for (int i = 0;; ++i) {
    if (done()) return true;
    relax();
    if ((i & 63) == 63 && Clock::now() >= deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads, int64_t spin_us) : spin_ns_(spin_us > 0 ? spin_us * 1000 : 0) { start(threads); }
ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int threads) {
  quit_ = false;
  restart_threads_ = 0;
  ranges_ = std::vector<Range>(size_t(std::max(1, threads)));
  // The generation a new worker has seen is read here, before it starts: read
  // in the thread it could already be the next job's, whose chunks the worker
  // would then never take (kernels whose parts wait on each other, such as
  // an LSTM's steps, rely on every participant taking its share).
  const uint64_t seen = generation_;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, seen] { worker_loop(i, seen); });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::resize(int threads) {
  std::lock_guard<std::mutex> job(job_mu_);
  stop();
  start(std::max(1, threads));
}

namespace {

constexpr uint64_t kLow = 0xffffffffu;

uint64_t pack(uint64_t lo, uint64_t hi) { return hi << 32 | lo; }

// The next chunk from the front (own work, in order) or the back (another
// participant's, taken last so that it keeps its front) of a range. Acquire:
// a chunk taken is one of the job whose fn_ and user_ were stored before it.
bool take(std::atomic<uint64_t>& range, bool front, int64_t& c) {
  uint64_t v = range.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t lo = v & kLow, hi = v >> 32;
    if (lo >= hi) return false;
    const uint64_t next = front ? pack(lo + 1, hi) : pack(lo, hi - 1);
    if (range.compare_exchange_weak(v, next, std::memory_order_acquire)) {
      c = int64_t(front ? lo : hi - 1);
      return true;
    }
  }
}

}  // namespace

void ThreadPool::run_chunks(int self) {
  const int parts = int(ranges_.size());
  auto run = [&](int64_t c) { fn_(user_, c * chunk_, std::min(n_, (c + 1) * chunk_)); };
  int64_t c = 0;
  while (take(ranges_[size_t(self)].bounds, true, c)) run(c);
  for (int k = 1; k < parts; ++k)
    while (take(ranges_[size_t((self + k) % parts)].bounds, false, c)) run(c);
}

void ThreadPool::worker_loop(int self, uint64_t seen) {
  for (;;) {
    spin_until(spin_ns_, [&] { return published_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      ++active_;
      busy_.store(active_);
    }
    run_chunks(self);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_.store(--active_);
      if (active_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::before_fork() {
  job_mu_.lock();
  mu_.lock();
}

void ThreadPool::after_fork_in_parent() {
  mu_.unlock();
  job_mu_.unlock();
}

void ThreadPool::after_fork_in_child() {
  // The parent's workers do not exist here: their std::thread objects are
  // dropped without join or detach (the vector's old storage is leaked, on
  // purpose), and the locks and condition variables, which may record them,
  // are made anew rather than unlocked.
  restart_threads_ = int(workers_.size()) + 1;
  new (&workers_) std::vector<std::thread>();
  new (&job_mu_) std::mutex();
  new (&mu_) std::mutex();
  new (&cv_) std::condition_variable();
  new (&done_cv_) std::condition_variable();
  active_ = 0;
  busy_.store(0);
  quit_ = false;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, singa_parallel_fn fn, void* user) {
  if (n <= 0) return;
  std::unique_lock<std::mutex> job(job_mu_, std::try_to_lock);
  if (job.owns_lock() && restart_threads_ > 0) start(restart_threads_);
  if (workers_.empty() || n <= grain || !job.owns_lock()) {
    fn(user, 0, n);
    return;
  }
  const int parts = size();
  // A few chunks per thread balance uneven work without much overhead.
  const int64_t chunk = std::max<int64_t>(grain, (n + parts * 4 - 1) / (parts * 4));
  const int64_t chunks = (n + chunk - 1) / chunk;  // at most 4 per participant
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    user_ = user;
    n_ = n;
    chunk_ = chunk;
    for (int i = 0; i < parts; ++i)
      ranges_[size_t(i)].bounds.store(pack(uint64_t(chunks * i / parts), uint64_t(chunks * (i + 1) / parts)),
                                      std::memory_order_release);
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  cv_.notify_all();
  run_chunks(0);
  // Workers that took a chunk are counted in busy_ before they run it.
  spin_until(spin_ns_, [&] { return busy_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  // Workers that woke for this generation finish their chunks; those that have
  // not woken yet will find no chunk left.
  done_cv_.wait(lock, [&] { return active_ == 0; });
}

}  // namespace cpu
}  // namespace singa
