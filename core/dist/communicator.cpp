// The byte-string collectives every backend shares, the single-rank
// communicator, and world(), which picks the backend from the launcher.
#include "backends.hpp"

#include <singa/error.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace singa {
namespace dist {

std::vector<std::string> Communicator::allgather_bytes(const std::string& mine, const std::string& what) {
  const uint64_t n = mine.size();
  std::vector<uint64_t> counts(static_cast<size_t>(size()));
  allgather(&n, sizeof n, counts.data(), what + " (sizes)");
  std::vector<size_t> sizes(counts.begin(), counts.end());
  size_t total = 0;
  for (size_t s : sizes) total += s;
  std::string all(total, '\0');
  allgatherv(mine.data(), mine.size(), all.data(), sizes, what);
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t s : sizes) out.push_back(all.substr(at, s)), at += s;
  return out;
}

std::string Communicator::broadcast_bytes(const std::string& s, int root, const std::string& what) {
  uint64_t n = s.size();
  broadcast(&n, sizeof n, root, what + " (size)");
  std::string out = rank() == root ? s : std::string(size_t(n), '\0');
  if (n) broadcast(out.data(), size_t(n), root, what);
  return out;
}

namespace {

class SingleComm : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string backend() const override { return "single"; }
  int64_t start_allreduce(void*, int64_t, Elem) override { return 0; }
  void progress() override {}
  void wait(int64_t, const std::string&) override {}
  void allgather(const void* data, size_t bytes, void* out, const std::string&) override {
    if (bytes) std::memcpy(out, data, bytes);
  }
  void broadcast(void*, size_t, int root, const std::string& what) override {
    if (root != 0) throw Error(SINGA_INVALID_ARGUMENT, what + ": root rank " + std::to_string(root) + " of a single rank");
  }
  void barrier(const std::string&) override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

 protected:
  void allgatherv(const void* data, size_t bytes, void* out, const std::vector<size_t>&, const std::string&) override {
    if (bytes) std::memcpy(out, data, bytes);
  }
};

}  // namespace

std::shared_ptr<Communicator> make_single() { return std::make_shared<SingleComm>(); }

bool have_mpi() {
#ifdef SINGA_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::shared_ptr<Communicator> world() {
  static std::mutex mu;
  static std::shared_ptr<Communicator> w;
  std::lock_guard<std::mutex> lock(mu);
  if (w) return w;
  LaunchInfo li = launch_info_from_env();
  if (li.world_size > 1) {
#ifdef SINGA_HAVE_MPI
    w = make_mpi(li);
#else
    throw Error(SINGA_UNAVAILABLE, "started as rank " + std::to_string(li.rank) + " of " + std::to_string(li.world_size) +
                                       " by " + li.launcher + ", but this singa was built without MPI "
                                       "(install libopenmpi-dev and rebuild)");
#endif
  } else {
    w = make_single();
  }
  return w;
}

}  // namespace dist
}  // namespace singa
