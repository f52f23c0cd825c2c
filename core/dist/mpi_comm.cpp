// The MPI backend: MPI_COMM_WORLD with nonblocking collectives, polled with a
// deadline so that a dead or stuck rank gives an error naming it, not a hang.
//
// MPI is called from one thread at a time (MPI_THREAD_SERIALIZED). While a
// rank waits it also answers "are you alive" messages on a separate
// communicator; when a wait times out, the waiting rank asks every other rank
// and names those that do not answer.
#include "backends.hpp"
#include "half.hpp"

#include <singa/error.hpp>

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

namespace singa {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPingTag = 71, kPongTag = 72;

// Sum of float16 values (as uint16), through float32: MPI has no half type.
void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}

void finalize_at_exit() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}

class MpiComm : public Communicator {
 public:
  explicit MpiComm(const LaunchInfo& li) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        throw Error(SINGA_UNAVAILABLE, "MPI_Init_thread failed (started by " + li.launcher + ")");
      std::atexit(finalize_at_exit);
    }
    // Errors come back as codes (turned into singa::Error) instead of ending the process.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &ping_comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ping_comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (size_ != li.world_size)
      throw Error(SINGA_UNAVAILABLE, "MPI has " + std::to_string(size_) + " ranks but the launcher (" + li.launcher +
                                         ") said " + std::to_string(li.world_size) +
                                         "; was singa started by a launcher of another MPI library?");
    local_rank_ = li.local_rank;
    if (li.launcher == "slurm" || li.launcher.empty()) {  // the node's own count is surer than Slurm's
      MPI_Comm node;
      if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local_rank_);
        MPI_Comm_free(&node);
      }
    }
    MPI_Op_create(&half_sum, 1, &half_op_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend() const override { return "mpi"; }

  int64_t start_allreduce(void* data, int64_t count, Elem type) override {
    if (count < 0 || count > INT_MAX)
      throw Error(SINGA_INVALID_ARGUMENT, "all-reduce of " + std::to_string(count) + " elements (at most INT_MAX per call)");
    MPI_Datatype t = MPI_FLOAT;
    MPI_Op op = MPI_SUM;
    switch (type) {
      case Elem::kFloat32: t = MPI_FLOAT; break;
      case Elem::kFloat64: t = MPI_DOUBLE; break;
      case Elem::kInt64: t = MPI_INT64_T; break;
      case Elem::kFloat16: t = MPI_UINT16_T, op = half_op_; break;
    }
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), t, op, comm_, &r), "MPI_Iallreduce");
    return add(r);
  }

  void progress() override {
    for (auto& [id, r] : pending_) {
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    }
    answer_pings();
  }

  void wait(int64_t ticket, const std::string& what) override {
    auto it = pending_.find(ticket);
    if (it == pending_.end()) return;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
    for (int spins = 0;; ++spins) {
      int done = 0;
      const int rc = MPI_Test(&it->second, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        pending_.erase(it);
        check(rc, what);
      }
      if (done) break;
      answer_pings();
      if (Clock::now() > deadline) {
        pending_.erase(it);
        diagnose(what);
      }
      // Sleep a little once the first spins found nothing: ranks often share
      // cores with the computing threads of others.
      if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(spins > 4096 ? 1000 : 50));
    }
    pending_.erase(it);
  }

  void allgather(const void* data, size_t bytes, void* out, const std::string& what) override {
    MPI_Request r;
    check(MPI_Iallgather(data, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm_, &r), what);
    wait(add(r), what);
  }
  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    if (root < 0 || root >= size_) throw Error(SINGA_INVALID_ARGUMENT, what + ": no rank " + std::to_string(root));
    if (bytes > size_t(INT_MAX)) throw Error(SINGA_INVALID_ARGUMENT, what + ": broadcast of more than 2 GiB");
    MPI_Request r;
    check(MPI_Ibcast(data, int(bytes), MPI_BYTE, root, comm_, &r), what);
    wait(add(r), what);
  }
  void barrier(const std::string& what) override {
    MPI_Request r;
    check(MPI_Ibarrier(comm_, &r), what);
    wait(add(r), what);
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 protected:
  void allgatherv(const void* data, size_t bytes, void* out, const std::vector<size_t>& sizes,
                  const std::string& what) override {
    std::vector<int> counts(sizes.size()), displs(sizes.size());
    size_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (at > size_t(INT_MAX) || sizes[i] > size_t(INT_MAX))
        throw Error(SINGA_INVALID_ARGUMENT, what + ": more than 2 GiB gathered");
      counts[i] = int(sizes[i]), displs[i] = int(at), at += sizes[i];
    }
    MPI_Request r;
    check(MPI_Iallgatherv(data, int(bytes), MPI_BYTE, out, counts.data(), displs.data(), MPI_BYTE, comm_, &r), what);
    wait(add(r), what);
  }

 private:
  int64_t add(MPI_Request r) {
    pending_[next_] = r;
    return next_++;
  }

  void check(int rc, const std::string& what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(SINGA_UNAVAILABLE, "rank " + std::to_string(rank_) + ": " + what + ": MPI error: " + std::string(msg, size_t(len)) +
                                       " (another rank may have died)");
  }

  // Replies to every "are you alive" message that has arrived.
  void answer_pings() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, ping_comm_, &flag, &st) != MPI_SUCCESS || !flag) break;
      int seq = 0;
      MPI_Recv(&seq, 1, MPI_INT, st.MPI_SOURCE, kPingTag, ping_comm_, MPI_STATUS_IGNORE);
      MPI_Request r;
      if (MPI_Isend(&pong_, 1, MPI_INT, st.MPI_SOURCE, kPongTag, ping_comm_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
    }
  }

  // After a timeout: asks every other rank whether it is alive, then throws
  // an error naming those that did not answer.
  [[noreturn]] void diagnose(const std::string& what) {
    const double window = std::min(10.0, std::max(1.0, timeout_ / 4));
    std::vector<MPI_Request> recv(size_t(size_), MPI_REQUEST_NULL);
    std::vector<int> answers(size_t(size_), 0);
    int seq = 1;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request s;
      if (MPI_Isend(&seq, 1, MPI_INT, r, kPingTag, ping_comm_, &s) == MPI_SUCCESS) MPI_Request_free(&s);
      MPI_Irecv(&answers[size_t(r)], 1, MPI_INT, r, kPongTag, ping_comm_, &recv[size_t(r)]);
    }
    const auto end = Clock::now() + std::chrono::duration<double>(window);
    std::vector<bool> answered(size_t(size_), false);
    answered[size_t(rank_)] = true;
    while (Clock::now() < end) {
      bool all = true;
      for (int r = 0; r < size_; ++r) {
        if (answered[size_t(r)]) continue;
        int done = 0;
        if (MPI_Test(&recv[size_t(r)], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) answered[size_t(r)] = true;
        all = all && answered[size_t(r)];
      }
      if (all) break;
      answer_pings();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::string silent;
    for (int r = 0; r < size_; ++r)
      if (!answered[size_t(r)]) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_);
    std::string msg = "rank " + std::to_string(rank_) + ": " + what + " did not complete within " + secs + " s; ";
    if (!silent.empty())
      msg += "rank" + std::string(silent.find(',') != std::string::npos ? "s " : " ") + silent +
             " did not answer (dead or stuck)";
    else
      msg += "every rank answers, so the ranks are out of step (different numbers of steps or parameters)";
    throw Error(SINGA_UNAVAILABLE, msg);
  }

  MPI_Comm comm_ = MPI_COMM_NULL, ping_comm_ = MPI_COMM_NULL;
  MPI_Op half_op_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, pong_ = 1;
  std::map<int64_t, MPI_Request> pending_;
  int64_t next_ = 1;
};

}  // namespace

std::shared_ptr<Communicator> make_mpi(const LaunchInfo& launch) { return std::make_shared<MpiComm>(launch); }

}  // namespace dist
}  // namespace singa
