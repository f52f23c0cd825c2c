#include "isolate.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace singa {
namespace cli {

namespace {

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = strsignal(sig);
  std::string s = "signal " + std::to_string(sig);
  if (abbrev) s += std::string(" (SIG") + abbrev + (desc ? std::string(": ") + desc : "") + ")";
  return s;
}

}  // namespace

ChildOutcome run_isolated(const std::function<std::string()>& work, int timeout_s) {
  ChildOutcome out;
  int fds[2];
  if (::pipe(fds) != 0) {
    out.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    return out;
  }
  std::cout.flush();
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    out.failure = std::string("cannot fork: ") + std::strerror(errno);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string result = work();
    write_all(fds[1], result);
    ::close(fds[1]);
    // Static destructors could wait on threads or devices the case left busy.
    ::_exit(0);
  }
  ::close(fds[1]);

  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  std::string data;
  char buf[4096];
  for (;;) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = int(std::min<long long>(left, 1 << 30));
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int r = ::poll(&pfd, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    if (r == 0) continue;  // the deadline check above ends the wait
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child finished or died
    data.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    out.failure = "timed out after " + std::to_string(timeout_s) + " s";
  } else if (WIFSIGNALED(status)) {
    out.failure = "crashed with " + signal_text(WTERMSIG(status));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    out.failure = "exited with status " + std::to_string(WEXITSTATUS(status)) + " before reporting a result";
  } else if (data.empty()) {
    out.failure = "ended without reporting a result";
  } else {
    out.completed = true;
    out.result = std::move(data);
  }
  return out;
}

}  // namespace cli
}  // namespace singa
