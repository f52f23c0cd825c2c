// toy_stream.cpp - streams as worker threads, events as counters.
#include "toy_stream.hpp"

#include <chrono>

namespace toy {

Stream::Stream(int delay_us) : delay_us_(delay_us), worker_([this] { work(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Stream::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    ++pushed_;
  }
  cv_.notify_all();
}

void Stream::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = pushed_;
  cv_.wait(lock, [&] { return done_ >= target; });
}

void Stream::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    task();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
    }
    cv_.notify_all();
  }
}

void Event::record(Stream* stream) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = ++recorded_;
  }
  if (stream) stream->push([this, ticket] { reach(ticket); });
  else reach(ticket);
}

void Event::wait_on(Stream* stream) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = recorded_;
  }
  if (ticket == 0) return;
  if (stream) stream->push([this, ticket] { wait_for(ticket); });
  else wait_for(ticket);
}

void Event::synchronize() {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = recorded_;
  }
  wait_for(ticket);
}

void Event::reach(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ticket > reached_) reached_ = ticket;
  }
  cv_.notify_all();
}

void Event::wait_for(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return reached_ >= ticket; });
}

}  // namespace toy
