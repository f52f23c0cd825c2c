// host.hpp - the core's side of the C ABI: the concrete types behind the
// opaque handles of singa_abi.h. Internal to libsinga_core.
#ifndef SINGA_CORE_HOST_HPP
#define SINGA_CORE_HOST_HPP

#include <singa/runtime.hpp>
#include <singa/tensor.hpp>
#include <singa/singa_abi.h>

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

struct singa_status {
  singa_code code;
  std::string message;
};

// A plugin being initialised: what it registers waits here until init has
// returned successfully with a matching ABI major.
struct singa_plugin_handle {
  std::string path;
  std::vector<singa_device_def> devices;
  std::vector<std::unique_ptr<singa::KernelEntry>> kernels;
  std::string error;  // first registration error
};

// A node as plugins see it at create/infer time.
struct singa_node {
  const onnx::NodeProto* proto = nullptr;
  int64_t opset = 0;
  std::vector<singa_value_info> inputs, outputs;
  std::vector<bool> input_present;
  std::vector<bool> output_present;
  // Layouts of the inputs and outputs ("" plain) on the handles the executor
  // creates kernels with; a graph pass's handles read them from the graph.
  std::vector<std::string> input_layouts, output_layouts;
  std::vector<const singa::Tensor*> constants;  // host tensors or null
  // DLTensor views of constants and tensor attributes, built on demand.
  mutable std::vector<DLTensor> constant_views;
  mutable std::map<std::string, std::pair<singa::Tensor, DLTensor>> attr_tensors;
  // Attributes the kernel read (by name) and those it asked for as one type
  // while the model holds another ("strides": "ints"). A name only ever
  // asked for as the wrong type is an error after create (check_attribute_reads).
  mutable std::set<std::string> attrs_read;
  mutable std::map<std::string, std::string> attrs_mistyped;
  // The prepare's named options (null: none).
  const std::map<std::string, std::string>* options = nullptr;
  // Set on the handles a graph pass sees (core/graph_pass.cpp).
  const singa_graph* graph = nullptr;
  size_t index = 0;  // the node's position in that graph
};

namespace singa {

// One compute call: inputs as DLTensors, outputs allocated on request.
struct KernelCall {
  const std::string* node_name = nullptr;
  Device* device = nullptr;  // where outputs go
  int32_t device_id = 0;
  Device* pool = nullptr;    // device whose parallel_for serves the call
  void* stream = nullptr;
  std::vector<Tensor> inputs;
  std::vector<DLTensor> input_views;
  std::vector<Tensor> outputs;
  std::vector<DLTensor> output_views;
  std::vector<Tensor> workspaces;
  bool inplace_allowed = false;  // input 0 may be overwritten
  size_t max_tensor_bytes = 0;
  // The run's arena and, per output, its planned offset (-1: none) and room;
  // an output that fits goes there (core/memory_plan.hpp).
  const std::shared_ptr<Storage>* arena = nullptr;
  const std::vector<std::pair<int64_t, size_t>>* planned = nullptr;
};

// The host table handed to plugins (static storage).
const singa_host_api* host_api();
singa_status* make_status(singa_code code, const std::string& message);
// Turns a status from a plugin into an Error (freeing it), prefixed by `context`.
void throw_status(singa_status* status, const std::string& context);

// After a kernel's create: an attribute the kernel asked for only as a type the
// model does not give it (Conv's strides as floats) is an error naming it,
// never a silently applied default. ONNX's checker finds these for the models
// it covers; this covers every model and every kernel, in or out of tree.
void check_attribute_reads(const singa_node& node, const std::string& context);
std::string take_status_message(singa_status* status);

}  // namespace singa

struct singa_kernel_context {
  singa::KernelCall call;
};

#endif
