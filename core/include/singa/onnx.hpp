// onnx.hpp - the backend: an ONNX model becomes a runnable Rep (SINGA's sonnx
// `prepare` / `SingaRep.run`).
#ifndef SINGA_ONNX_HPP
#define SINGA_ONNX_HPP

#include <singa/tensor.hpp>
#include <singa/value.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace singa {
namespace onnx {

struct PrepareOptions {
  std::string device = "cpu";  // "cpu", "cuda:0", "opencl:0", ...
  bool fallback = true;        // nodes without a kernel on `device` run on the CPU
  // Values for symbolic dimensions (e.g. {"batch", 8}); unbound ones are taken
  // from the inputs at run time.
  std::map<std::string, int64_t> dims;
  int threads = 0;             // intra-op threads, 0 = one per core
  bool check_model = true;     // run onnx::checker
  bool optimize = true;        // graph passes after checking: folding, fusions (core/passes/)
  // Intermediates whose size is known at prepare time share one arena per run,
  // at offsets planned so that values alive at the same node never overlap.
  bool memory_plan = true;
  size_t max_tensor_bytes = size_t(16) << 30;  // refuse larger allocations
  // Named options for the plugins (key=value; docs/options.md lists them):
  // kernels read them at create time, graph passes while they run.
  std::map<std::string, std::string> options;
};

// One node's share of a run, for RunOptions::profile.
struct NodeTiming {
  std::string node, op_type, device;
  double ms = 0;  // wall time of the node, its device synchronized after it
};

struct RunOptions {
  // <= 0: stop |last_layers| nodes before the end (the outputs are then those
  // of the last node that runs), as in sonnx.
  int last_layers = 0;
  // When set, stop after the node of this name instead (Rep::nodes() lists
  // them); give last_layers or last_node, not both.
  std::string last_node;
  bool all_outputs = false;  // return every intermediate value by name
  // When set, each node that runs appends its timing here, in run order (the
  // top-level graph's nodes; a Loop/If/Scan counts as one). Profiling waits for
  // the device after every node, so a profiled run is slower than a plain one
  // on asynchronous devices; sum by op type to see where the time goes.
  std::vector<NodeTiming>* profile = nullptr;
};

struct ValueInfo {
  enum class Kind { kTensor, kSequence, kOptional };
  std::string name;
  Kind kind = Kind::kTensor;          // sequences/optionals need Rep::run_values
  bool optional_of_sequence = false;
  int32_t dtype = 0;                  // element type (of a sequence's tensors)
  bool rank_known = false;            // false: nothing is known of the shape
  std::vector<int64_t> dims;          // -1 where symbolic/unknown
  std::vector<std::string> dim_names; // symbolic names ("" when fixed)
};

// One node of a prepared model (Rep::nodes()).
struct NodeInfo {
  std::string name, op_type, domain;
  std::vector<ValueInfo> outputs;  // an absent optional output has an empty name
};

struct NodePlacement {
  std::string node, op_type, device, plugin;
  int since_version = 0;
};

// The static memory plan of a prepared model (PrepareOptions::memory_plan).
struct MemoryPlanInfo {
  size_t arena_bytes = 0;     // allocated once per run
  size_t planned_values = 0;  // intermediates placed in it
  size_t planned_bytes = 0;   // their sizes added up: what separate buffers would take
};

// The plans specialized per input shape (core.shape_cache in docs/options.md):
// a model with symbolic input dims gets, for each shape it is run with twice,
// a plan with those dims bound and its shape arithmetic folded.
struct ShapeCacheInfo {
  size_t capacity = 0;  // most plans kept (least recently used go); 0: off or nothing to specialize
  size_t entries = 0;   // plans held now
  size_t hits = 0, misses = 0;  // runs that found a plan held; runs that did not (general plan, or built one)
  size_t built = 0, failed = 0;  // specializations made; those that failed (the general plan runs)
  size_t unchanged = 0;          // shapes whose specialization folded nothing (the general plan runs)
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using NamedValues = std::vector<std::pair<std::string, Value>>;

class Rep {
 public:
  ~Rep();
  // Runs the graph. Inputs by position (graph inputs that are not
  // initializers, in order) or by name.
  NamedTensors run(const std::vector<Tensor>& inputs, const RunOptions& options = {}) const;
  NamedTensors run(const std::map<std::string, Tensor>& inputs, const RunOptions& options = {}) const;
  // The general form, for models whose inputs or outputs are sequences or
  // optionals (an empty optional is a default-constructed Value).
  NamedValues run_values(const std::vector<Value>& inputs, const RunOptions& options = {}) const;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  const std::vector<NodePlacement>& placement() const;
  // The model's nodes in the order `last_layers` counts and `last_node` names
  // (the file's order, where the file lists producers before their readers),
  // each with its outputs' types and shapes as known at prepare time.
  std::vector<NodeInfo> nodes() const;
  MemoryPlanInfo memory_plan() const;
  ShapeCacheInfo shape_cache() const;
  // Initializers by name (trainable parameters for the training API).
  std::map<std::string, Tensor> parameters() const;
  std::map<std::string, int64_t> opsets() const;
  const std::string& source() const;  // file name or "<bytes>"

  struct Impl;  // opaque to users; core/onnx/rep_impl.hpp inside the core
  explicit Rep(std::unique_ptr<Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

std::shared_ptr<Rep> prepare(const ::onnx::ModelProto& model, const PrepareOptions& options = {},
                             const std::string& source = "<model>");
// The same, consuming the model: its weights are not copied, so the peak
// memory of prepare is about one copy of them instead of two.
std::shared_ptr<Rep> prepare(::onnx::ModelProto&& model, const PrepareOptions& options = {},
                             const std::string& source = "<model>");
std::shared_ptr<Rep> prepare(const std::string& path, const PrepareOptions& options = {});
// As prepare(model), resolving external data relative to `base_dir`.
std::shared_ptr<Rep> prepare_at(const ::onnx::ModelProto& model, const PrepareOptions& options, const std::string& source,
                                const std::string& base_dir);
std::shared_ptr<Rep> prepare_at(::onnx::ModelProto&& model, const PrepareOptions& options, const std::string& source,
                                const std::string& base_dir);
std::shared_ptr<Rep> prepare_bytes(const std::string& bytes, const PrepareOptions& options = {});

// Reads a model file, with a clear error for missing, truncated or non-ONNX files.
::onnx::ModelProto load_model(const std::string& path);
::onnx::ModelProto parse_model(const std::string& bytes, const std::string& source);

// TensorProto <-> Tensor; `base_dir` resolves external data (refused when it
// escapes base_dir).
Tensor from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir = "");
::onnx::TensorProto to_proto(const Tensor& tensor, const std::string& name = "");
Tensor load_tensor_file(const std::string& path);  // .pb (TensorProto) or .npy
// A value of the kind `expected` describes: a TensorProto/.npy, SequenceProto
// or OptionalProto file.
Value load_value_file(const std::string& path, const ValueInfo& expected);
void save_tensor_pb(const Tensor& tensor, const std::string& path, const std::string& name = "");
void save_tensor_npy(const Tensor& tensor, const std::string& path);

}  // namespace onnx
}  // namespace singa
#endif
