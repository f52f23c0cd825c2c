#include "thread_pool.hpp"

#include <algorithm>

namespace singa {
namespace cpu {

ThreadPool::ThreadPool(int threads) { start(threads); }
ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int threads) {
  quit_ = false;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
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

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t b = next_.fetch_add(chunk_);
    if (b >= n_) break;
    fn_(user_, b, std::min(n_, b + chunk_));
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      ++active_;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, singa_parallel_fn fn, void* user) {
  if (n <= 0) return;
  std::unique_lock<std::mutex> job(job_mu_, std::try_to_lock);
  if (workers_.empty() || n <= grain || !job.owns_lock()) {
    fn(user, 0, n);
    return;
  }
  int parts = size();
  // A few chunks per thread balance uneven work without much overhead.
  int64_t chunk = std::max<int64_t>(grain, (n + parts * 4 - 1) / (parts * 4));
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    user_ = user;
    n_ = n;
    chunk_ = chunk;
    next_.store(0);
    ++generation_;
  }
  cv_.notify_all();
  run_chunks();
  std::unique_lock<std::mutex> lock(mu_);
  // Workers that woke for this generation finish their chunks; those that have
  // not woken yet will find no chunk left.
  done_cv_.wait(lock, [&] { return active_ == 0; });
}

}  // namespace cpu
}  // namespace singa
