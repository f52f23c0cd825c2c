// dist.hpp - data-parallel training across processes: a communicator over
// MPI (CPU tensors) or NCCL (CUDA tensors), and DistOpt, which wraps any
// optimizer and averages the gradients of all ranks with SINGA's update modes.
//
// A program started by `mpirun -np N` (or Slurm's `srun`) calls world() to
// learn its rank; without a launcher world() is a single rank and DistOpt
// behaves like the optimizer it wraps. docs/distributed.md has the details.
#ifndef SINGA_DIST_HPP
#define SINGA_DIST_HPP

#include <singa/optim.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace singa {
namespace dist {

using autograd::Variable;
using optim::NamedVariables;

// Where this process sits in the job, as its launcher's environment says:
// Open MPI (OMPI_COMM_WORLD_*), MPICH/Hydra and Intel MPI (PMI_*, MPI_LOCALRANKID),
// PMIx (PMIX_RANK) or Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
struct LaunchInfo {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string launcher;  // "mpirun", "pmi", "slurm" or "" (none: a single process)
};
LaunchInfo launch_info_from_env();

// Element types a communicator reduces.
enum class Elem { kFloat32, kFloat16, kFloat64, kInt64 };

// Collective operations among the ranks of one job. Every rank must issue the
// same collectives in the same order. Operations that wait give up after
// timeout() seconds with a singa::Error that names the ranks that do not
// answer, instead of hanging.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual std::string backend() const = 0;  // "single", "mpi"

  // Starts an in-place sum of `count` elements at `data` (host memory) over
  // all ranks and returns a ticket for wait(). The buffer must stay untouched
  // until then.
  virtual int64_t start_allreduce(void* data, int64_t count, Elem type) = 0;
  // Lets started operations advance without blocking (MPI moves nonblocking
  // collectives forward only inside its calls).
  virtual void progress() = 0;
  // Blocks until the ticket's operation is done; `what` names it in errors.
  virtual void wait(int64_t ticket, const std::string& what) = 0;

  // Blocking collectives.
  void allreduce(void* data, int64_t count, Elem type, const std::string& what) {
    wait(start_allreduce(data, count, type), what);
  }
  // Every rank sends `bytes` bytes; `out` gets size() * bytes, by rank.
  virtual void allgather(const void* data, size_t bytes, void* out, const std::string& what) = 0;
  // Every rank sends its own number of bytes; returns each rank's bytes.
  std::vector<std::string> allgather_bytes(const std::string& mine, const std::string& what);
  virtual void broadcast(void* data, size_t bytes, int root, const std::string& what) = 0;
  // Broadcasts a byte string of any length from `root`.
  std::string broadcast_bytes(const std::string& s, int root, const std::string& what);
  virtual void barrier(const std::string& what) = 0;
  // Ends every rank of the job (after an error on this one), with `code`.
  [[noreturn]] virtual void abort(int code) = 0;

  double timeout() const { return timeout_; }
  void set_timeout(double seconds) { timeout_ = seconds; }

 protected:
  virtual void allgatherv(const void* data, size_t bytes, void* out, const std::vector<size_t>& sizes,
                          const std::string& what) = 0;
  double timeout_ = 300;
};

// The job's communicator, made on first use: MPI when a launcher started
// several ranks (MPI is initialised then, and finalised at exit), a single
// rank otherwise. Throws when the launcher asked for ranks this build cannot
// serve (built without MPI).
std::shared_ptr<Communicator> world();
// Whether this build has the MPI backend, and whether the NCCL module loads
// (it needs CUDA's runtime and libnccl at run time).
bool have_mpi();
bool have_nccl();

// SINGA's distributed update modes (train_one_batch's `dist_option`).
enum class Mode { kFp32, kFp16, kPartial, kSparseTopK, kSparseThreshold };
// "fp32", "fp16", "partialUpdate", "sparseTopK", "sparseThreshold".
Mode parse_mode(const std::string& name);
const char* mode_name(Mode m);

struct DistOptions {
  // Gradients are packed into buckets of about this many bytes (in bucket
  // order, the reverse of the parameters', which is roughly the order in
  // which backward finishes them); each bucket's all-reduce starts as soon as
  // its last gradient is final, while backward goes on.
  int64_t bucket_bytes = 1 << 20;
  // Seconds a collective may wait for the other ranks (Communicator::timeout).
  double timeout_seconds = 300;
};

// Counters of the last step, for tests and benchmarks.
struct StepStats {
  int buckets = 0;                     // collectives of gradient data
  int started_during_backward = 0;     // of which began before backward returned
  int64_t bytes_sent = 0;              // payload this rank contributed
  double wait_seconds = 0;             // time blocked on communication after backward
};

// Wraps an optimizer for data-parallel training. Each step, the gradients of
// the optimizer's parameters are averaged over all ranks (so N ranks at batch
// b train like one process at batch N*b), then the wrapped optimizer updates.
// `weight` scales this rank's gradient before averaging: world_size *
// local_examples / global_examples when ranks hold different numbers of
// examples in a step (1 when equal).
class DistOpt {
 public:
  explicit DistOpt(optim::Optimizer& opt, std::shared_ptr<Communicator> comm = nullptr, DistOptions options = {});
  ~DistOpt();
  DistOpt(const DistOpt&) = delete;
  DistOpt& operator=(const DistOpt&) = delete;

  int rank() const;
  int world_size() const;
  int local_rank() const;
  Communicator& communicator();
  optim::Optimizer& optimizer();

  // 'fp32': backward, averaging float32 gradients in buckets, then update.
  void backward_and_update(const Variable& loss, double weight = 1);
  // 'fp16': as fp32, but the gradients travel (and are summed) in half
  // precision; with `clipping` each value is first clipped to +-clip_value.
  void backward_and_update_half(const Variable& loss, bool clipping = false, float clip_value = 100, double weight = 1);
  // 'partialUpdate': every rank updates with its own gradient, then one
  // bucket of parameters (the next in turn each step) is averaged over ranks.
  void backward_and_partial_update(const Variable& loss);
  // 'sparseTopK' / 'sparseThreshold': each rank sends only the largest
  // spars * n gradient values of a bucket (top_k) or those with |g| >= spars,
  // as (index, value) pairs; with `corr` the values not sent are kept and added
  // to the next step's gradient (error feedback).
  void backward_and_sparse_update(const Variable& loss, bool top_k = true, float spars = 0.05f, bool corr = true,
                                  double weight = 1);
  // One of the above by mode (train_one_batch's dist_option and spars).
  void train_step(Mode mode, const Variable& loss, float spars = 0.05f, double weight = 1);

  // Copies `root`'s parameters, the optimizer's state and `extra` (buffers
  // such as running statistics) to every rank: all ranks start alike.
  void broadcast_state(const NamedVariables& extra = {}, int root = 0);
  // Averages every parameter over the ranks (after partial updates, before a
  // checkpoint or an export, so that all ranks hold the same model).
  void average_parameters();
  // Sum over ranks of a few numbers (metrics: correct answers, losses).
  std::vector<double> sum(std::vector<double> values);

  const StepStats& last_step() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dist
}  // namespace singa
#endif
