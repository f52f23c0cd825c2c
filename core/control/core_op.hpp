// core_op.hpp - ops the core runs itself rather than through a plugin kernel:
// control flow with subgraphs (If, Loop, Scan, SequenceMap), the sequence
// and optional ops, and ai.onnx.ml's ZipMap (it makes maps). They move values around or run nested executors; no
// device arithmetic, so no plugin has to know about sequences or subgraphs.
#ifndef SINGA_CORE_CONTROL_CORE_OP_HPP
#define SINGA_CORE_CONTROL_CORE_OP_HPP

#include "../graph.hpp"

#include <singa/value.hpp>

#include <memory>
#include <string>
#include <vector>

namespace singa {

class Device;

// How an executor places its nodes; subgraph executors inherit it.
struct ExecConfig {
  Device* device = nullptr;
  int32_t device_id = 0;
  bool fallback = true;
  size_t max_tensor_bytes = 0;
  bool memory_plan = true;  // place intermediates in one arena per run (core/memory_plan.hpp)
  // The prepare's named options (PrepareOptions::options), for kernels' create.
  std::shared_ptr<const std::map<std::string, std::string>> options;
};

struct CoreCall {
  const graph::Node& node;
  const std::string& where;          // "file: node 'x' (Op)"
  std::vector<const Value*> inputs;  // aligned with node.inputs; null when absent
  std::vector<Value> outputs;        // aligned with node.outputs
  size_t max_tensor_bytes = 0;
};

class CoreOp {
 public:
  virtual ~CoreOp() = default;
  // Thread-safe: one CoreOp may run from several threads at once.
  virtual void run(CoreCall& call) const = 0;
};

// The core's op for `node`, or null when a plugin kernel should run it.
// Throws for a malformed node (naming it).
std::unique_ptr<CoreOp> make_core_op(const graph::Graph& g, const graph::Node& node, const ExecConfig& config);

namespace control {
// Constructors, one per file.
std::unique_ptr<CoreOp> make_sequence_op(const graph::Graph& g, const graph::Node& node);
std::unique_ptr<CoreOp> make_if(const graph::Graph& g, const graph::Node& node, const ExecConfig& config);
std::unique_ptr<CoreOp> make_loop(const graph::Graph& g, const graph::Node& node, const ExecConfig& config);
std::unique_ptr<CoreOp> make_scan(const graph::Graph& g, const graph::Node& node, const ExecConfig& config);
std::unique_ptr<CoreOp> make_sequence_map(const graph::Graph& g, const graph::Node& node, const ExecConfig& config);
std::unique_ptr<CoreOp> make_zip_map(const graph::Graph& g, const graph::Node& node);

// Host-side data movement shared by the ops above (any dtype but string).
Tensor concat(const std::vector<Tensor>& parts, int64_t axis, bool new_axis, const std::string& where);
std::vector<Tensor> split(const Tensor& t, int64_t axis, const std::vector<int64_t>& sizes, bool keep_dims, const std::string& where);
// t[..., i, ...] along `axis`, without that axis.
Tensor take(const Tensor& t, int64_t axis, int64_t i);
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& where);
// The single value of a scalar-like tensor (bool/int/float), read on the host.
int64_t scalar_int(const Tensor& t, const std::string& what, const std::string& where);
}  // namespace control

}  // namespace singa
#endif
