// The CPU device's fork-join pool (plugins/cpu/thread_pool.hpp): every index
// of every job runs exactly once, whatever the sizes, grains and thread
// counts, when workers are slow to come (the caller then takes their ranges)
// and when several threads call at once (a busy pool runs the loop inline);
// every idle worker joins each job, whether it spins or sleeps in between.
#include "thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

using singa::cpu::ThreadPool;

namespace {

struct Job {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> calls{0};
  int sleep_us = 0;  // per call, so that a part may be taken by another thread
  explicit Job(int64_t n) : hits(size_t(n)) {}
};

void count(void* user, int64_t b, int64_t e) {
  auto* job = static_cast<Job*>(user);
  job->calls.fetch_add(1);
  if (job->sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(job->sleep_us));
  for (int64_t i = b; i < e; ++i) job->hits[size_t(i)].fetch_add(1);
}

void expect_each_once(const Job& job) {
  for (size_t i = 0; i < job.hits.size(); ++i) ASSERT_EQ(job.hits[i].load(), 1) << "index " << i;
}

}  // namespace

TEST(ThreadPool, EveryIndexRunsOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 7, 8, 9, 31, 64, 1000, 100003})
      for (int64_t grain : {1, 4, 16, 5000}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) + " grain " +
                     std::to_string(grain));
        Job job(n);
        pool.parallel_for(n, grain, count, &job);
        expect_each_once(job);
        // A few chunks per thread, never a call per index.
        EXPECT_LE(job.calls.load(), 4 * threads);
      }
  }
}

TEST(ThreadPool, SlowPartsAreTakenOverAndResizeKeepsWorking) {
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    Job job(24);
    job.sleep_us = round % 2 ? 200 : 0;
    pool.parallel_for(24, 1, count, &job);
    expect_each_once(job);
  }
  pool.resize(2);
  Job job(1000);
  pool.parallel_for(1000, 1, count, &job);
  expect_each_once(job);
}

TEST(ThreadPool, ConcurrentCallersEachRunTheirWholeJob) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        Job job(257);
        pool.parallel_for(257, 1, count, &job);
        for (const auto& h : job.hits)
          if (h.load() != 1) bad.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(bad.load(), 0);
}

namespace {

// One part per participant, each waiting (up to a second) until all have
// started: what an LSTM's step barrier needs of the pool.
struct Meeting {
  int parts;
  std::atomic<int> arrived{0}, missed{0};
};

void meet(void* user, int64_t b, int64_t e) {
  auto* m = static_cast<Meeting*>(user);
  for (int64_t i = b; i < e; ++i) {
    m->arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (m->arrived.load() < m->parts)
      if (std::chrono::steady_clock::now() > deadline) {
        m->missed.fetch_add(1);
        break;
      }
  }
}

}  // namespace

TEST(ThreadPool, EveryIdleWorkerJoinsEachJobSpinningOrAsleep) {
  for (int64_t spin_us : {200, 0}) {  // 0: the workers sleep between jobs
    SCOPED_TRACE("spin_us " + std::to_string(spin_us));
    for (int threads : {2, 3}) {
      ThreadPool pool(threads, spin_us);
      for (int round = 0; round < 300; ++round) {
        Meeting m;
        m.parts = threads;
        pool.parallel_for(threads, 1, meet, &m);
        ASSERT_EQ(m.missed.load(), 0) << "round " << round;
        ASSERT_EQ(m.arrived.load(), threads);
        // A pause now and then, so that sleeping workers go to sleep.
        if (round % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }
}
