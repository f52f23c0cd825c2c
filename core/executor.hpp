// executor.hpp - a prepared graph: one kernel instance per node, placed on a
// device, run in topological order. Internal to libsinga_core.
#ifndef SINGA_CORE_EXECUTOR_HPP
#define SINGA_CORE_EXECUTOR_HPP

#include "graph.hpp"
#include "host.hpp"

#include <map>
#include <memory>
#include <vector>

namespace singa {

struct ExecNode {
  const graph::Node* node = nullptr;
  const KernelEntry* kernel = nullptr;
  void* state = nullptr;
  Device* device = nullptr;
  int32_t device_id = 0;
  std::unique_ptr<singa_node> info;
  std::vector<bool> host_inputs;  // inputs the kernel reads on the host
  std::vector<int> release;       // values whose last reader is this node
  ExecNode() = default;
  ExecNode(ExecNode&&) = default;
  ~ExecNode();
};

class Executor {
 public:
  Executor(graph::Graph graph, Device* device, int32_t device_id, bool fallback, size_t max_tensor_bytes);
  const graph::Graph& graph() const { return g_; }
  const std::vector<ExecNode>& nodes() const { return exec_; }
  // Runs nodes [0, stop). `inputs` are aligned with graph().inputs.
  // Returns the values by id; `keep_all` keeps every intermediate.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, size_t stop, bool keep_all) const;

 private:
  void select(ExecNode& e, bool fallback);
  graph::Graph g_;
  std::vector<ExecNode> exec_;
  Device* device_;
  int32_t device_id_;
  Device* cpu_;
  size_t max_bytes_;
  std::vector<int> last_use_;
  // Initializers already copied to the device of the nodes that read them.
  std::map<std::pair<int, Device*>, Tensor> device_constants_;
};

}  // namespace singa
#endif
