// executor.hpp - a prepared graph: one kernel instance per node, placed on a
// device, run in topological order. Internal to libsinga_core.
#ifndef SINGA_CORE_EXECUTOR_HPP
#define SINGA_CORE_EXECUTOR_HPP

#include "control/core_op.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "memory_plan.hpp"
#include "run_stream.hpp"

#include <singa/value.hpp>

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace singa {

struct ExecNode {
  const graph::Node* node = nullptr;
  const KernelEntry* kernel = nullptr;  // null when the core runs the node
  std::unique_ptr<CoreOp> core;
  void* state = nullptr;
  Device* device = nullptr;
  int32_t device_id = 0;
  std::unique_ptr<singa_node> info;
  std::vector<bool> host_inputs;  // inputs the kernel reads on the host
  std::vector<int> release;       // values whose last reader is this node
  std::vector<std::pair<int64_t, size_t>> planned;  // per output: arena offset (-1: none), room
  ExecNode() = default;
  ExecNode(ExecNode&&) = default;
  ~ExecNode();
};

class Executor {
 public:
  Executor(graph::Graph graph, const ExecConfig& config);
  Executor(graph::Graph graph, Device* device, int32_t device_id, bool fallback, size_t max_tensor_bytes)
      : Executor(std::move(graph), ExecConfig{device, device_id, fallback, max_tensor_bytes}) {}
  const graph::Graph& graph() const { return g_; }
  const std::vector<ExecNode>& nodes() const { return exec_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // Runs nodes [0, stop). `inputs` are aligned with graph().inputs, then
  // graph().outer (a subgraph's values from enclosing scopes).
  // Returns the values by id; `keep_all` keeps every intermediate. With
  // `timings`, appends (node index, milliseconds) per node, synchronizing the
  // node's device after it. On a device with events the run queues its work
  // on a stream of its own; the values it returns are complete.
  std::vector<Value> run(const std::vector<Value>& inputs, size_t stop, bool keep_all,
                         std::vector<std::pair<size_t, double>>* timings = nullptr) const;
  // The graph's outputs, in order, for the given inputs (subgraph bodies).
  std::vector<Value> run_outputs(const std::vector<Value>& inputs) const;

 private:
  // Picks the node's kernel and creates its state: the requested device's
  // kernels for the node's opset and types first, then the CPU's (fallback);
  // a kernel that declines at create makes way for the next.
  void select(ExecNode& e, bool fallback);
  void check_layouts_stay_on_device() const;
  void plan_memory_of_intermediates();
  void plan_concat_inputs_in_place(std::vector<PlanValue>& values) const;
  void run_kernel(const ExecNode& e, size_t index, std::vector<Value>& env, bool keep_all,
                  const std::shared_ptr<Storage>& arena, RunStream& rs) const;
  void run_core(const ExecNode& e, std::vector<Value>& env) const;
  graph::Graph g_;
  ExecConfig config_;
  std::vector<ExecNode> exec_;
  Device* device_;
  int32_t device_id_;
  Device* cpu_;
  size_t max_bytes_;
  std::vector<int> last_use_;
  // Initializers a run puts in its value table: those a core op reads and
  // those that are graph outputs. Kernels read the rest from the graph, which
  // saves a tensor copy per initializer per run.
  std::vector<int> env_constants_;
  MemoryPlan plan_;
  // Initializers already copied to the device of the nodes that read them.
  std::map<std::pair<int, Device*>, Tensor> device_constants_;
  // The device's streams when it has events (null otherwise: the NULL
  // stream). Declared last: destroyed first, waiting for the work that
  // still reads the constants above.
  std::unique_ptr<StreamPool> streams_;
};

}  // namespace singa
#endif
