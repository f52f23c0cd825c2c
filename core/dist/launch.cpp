// Rank, world size and local rank from the launcher's environment, and the
// names of the update modes.
#include <singa/dist.hpp>
#include <singa/error.hpp>

#include <cstdlib>

namespace singa {
namespace dist {

namespace {

// The first of `names` that is set, as an int; -1 when none is. A value that
// is not a number is an error: it would put the rank in the wrong place.
int env_int(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (!v || !*v) continue;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 24)
      throw Error(SINGA_INVALID_ARGUMENT, std::string("launcher environment: ") + n + "='" + v + "' is not a rank count");
    return int(x);
  }
  return -1;
}

}  // namespace

LaunchInfo launch_info_from_env() {
  LaunchInfo li;
  struct Source {
    const char* launcher;
    std::initializer_list<const char*> rank, size, local;
  };
  // Open MPI's mpirun first (it also sets PMIX_RANK), then PMI-based
  // launchers (MPICH's Hydra, Intel MPI), then Slurm's srun.
  const Source sources[] = {
      {"mpirun", {"OMPI_COMM_WORLD_RANK"}, {"OMPI_COMM_WORLD_SIZE"}, {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"pmi", {"PMI_RANK", "PMIX_RANK"}, {"PMI_SIZE"}, {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}},
      {"slurm", {"SLURM_PROCID"}, {"SLURM_NTASKS", "SLURM_NPROCS"}, {"SLURM_LOCALID"}},
  };
  for (const auto& s : sources) {
    const int rank = env_int(s.rank), size = env_int(s.size);
    if (rank < 0 || size < 1) continue;
    if (rank >= size)
      throw Error(SINGA_INVALID_ARGUMENT, std::string("launcher environment (") + s.launcher + "): rank " +
                                              std::to_string(rank) + " is not below the world size " + std::to_string(size));
    li.rank = rank;
    li.world_size = size;
    const int local = env_int(s.local);
    li.local_rank = local >= 0 ? local : 0;
    li.launcher = s.launcher;
    return li;
  }
  return li;
}

Mode parse_mode(const std::string& name) {
  if (name == "fp32") return Mode::kFp32;
  if (name == "fp16") return Mode::kFp16;
  if (name == "partialUpdate") return Mode::kPartial;
  if (name == "sparseTopK") return Mode::kSparseTopK;
  if (name == "sparseThreshold") return Mode::kSparseThreshold;
  throw Error(SINGA_INVALID_ARGUMENT, "distributed update mode must be fp32, fp16, partialUpdate, sparseTopK or "
                                      "sparseThreshold, got '" + name + "'");
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kFp32: return "fp32";
    case Mode::kFp16: return "fp16";
    case Mode::kPartial: return "partialUpdate";
    case Mode::kSparseTopK: return "sparseTopK";
    case Mode::kSparseThreshold: return "sparseThreshold";
  }
  return "?";
}

}  // namespace dist
}  // namespace singa
