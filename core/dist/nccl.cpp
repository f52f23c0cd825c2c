// Finds libsinga_dist_nccl.so next to libsinga_core (or in its dist/ folder
// in the build tree) and drives it.
#include "nccl.hpp"
#include "nccl_abi.h"

#include <singa/error.hpp>

#include <dlfcn.h>

#include <mutex>

namespace singa {
namespace dist {

namespace {

struct Api {
  void* lib = nullptr;
  singa_nccl_id_fn id = nullptr;
  singa_nccl_init_fn init = nullptr;
  singa_nccl_allreduce_avg_fn allreduce = nullptr;
  singa_nccl_wait_fn wait = nullptr;
  singa_nccl_destroy_fn destroy = nullptr;
  std::string error;
};

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    std::string dir;
    if (dladdr(reinterpret_cast<void*>(&have_nccl), &info) && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.substr(0, dir.find_last_of('/') + 1);
    }
    for (const std::string& p : {dir + "dist/libsinga_dist_nccl.so", dir + "libsinga_dist_nccl.so"}) {
      a.lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (a.lib) break;
      const char* e = dlerror();
      if (a.error.empty() && e) a.error = e;
    }
    if (!a.lib) return;
    a.id = reinterpret_cast<singa_nccl_id_fn>(dlsym(a.lib, "singa_nccl_id"));
    a.init = reinterpret_cast<singa_nccl_init_fn>(dlsym(a.lib, "singa_nccl_init"));
    a.allreduce = reinterpret_cast<singa_nccl_allreduce_avg_fn>(dlsym(a.lib, "singa_nccl_allreduce_avg"));
    a.wait = reinterpret_cast<singa_nccl_wait_fn>(dlsym(a.lib, "singa_nccl_wait"));
    a.destroy = reinterpret_cast<singa_nccl_destroy_fn>(dlsym(a.lib, "singa_nccl_destroy"));
    if (!a.id || !a.init || !a.allreduce || !a.wait || !a.destroy) {
      a.error = "libsinga_dist_nccl.so lacks a function";
      a.lib = nullptr;
    }
  });
  return a;
}

}  // namespace

bool have_nccl() { return api().lib != nullptr; }

std::unique_ptr<NcclComm> NcclComm::create(Communicator& comm, int device) {
  const Api& a = api();
  if (!a.lib) throw Error(SINGA_UNAVAILABLE, "NCCL: libsinga_dist_nccl.so does not load: " + a.error);
  unsigned char id[SINGA_NCCL_ID_BYTES] = {};
  char err[256] = {};
  int ok = comm.rank() != 0 || a.id(id, err, sizeof err) == 0 ? 1 : 0;
  // Rank 0's failure must reach the others, or they would wait for its id.
  int64_t all_ok = ok;
  comm.allreduce(&all_ok, 1, Elem::kInt64, "NCCL: creating the unique id");
  if (all_ok != comm.size()) throw Error(SINGA_UNAVAILABLE, std::string("NCCL on rank 0: ") + (ok ? "failed" : err));
  comm.broadcast(id, sizeof id, 0, "NCCL: broadcasting the unique id");
  std::unique_ptr<NcclComm> c(new NcclComm);
  c->rank_ = comm.rank();
  if (a.init(&c->comm_, id, comm.size(), comm.rank(), device, err, sizeof err) != 0)
    throw Error(SINGA_UNAVAILABLE, "rank " + std::to_string(comm.rank()) + ": " + err);
  return c;
}

NcclComm::~NcclComm() {
  if (comm_) api().destroy(comm_);
}

void NcclComm::allreduce_avg(const std::vector<std::pair<void*, int64_t>>& buffers, const std::string& what) {
  std::vector<void*> bufs;
  std::vector<size_t> counts;
  for (const auto& [p, n] : buffers) bufs.push_back(p), counts.push_back(size_t(n));
  char err[256] = {};
  if (api().allreduce(comm_, bufs.data(), counts.data(), int(bufs.size()), err, sizeof err) != 0)
    throw Error(SINGA_UNAVAILABLE, "rank " + std::to_string(rank_) + ": " + what + ": " + err);
}

void NcclComm::wait(const std::string& what, double timeout) {
  char err[256] = {};
  if (api().wait(comm_, timeout, err, sizeof err) != 0)
    throw Error(SINGA_UNAVAILABLE, "rank " + std::to_string(rank_) + ": " + what + ": " + err);
}

}  // namespace dist
}  // namespace singa
