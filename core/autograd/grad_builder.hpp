// grad_builder.hpp - the host side of an op's gradient hooks (ABI 1.3): the
// singa_grad_builder handle behind the grad_* calls of the host table, and
// the one place autograd asks a forward kernel for its backward (a backward
// kernel, singa_gradient_def, or a builder, singa_gradient_ext). Internal to
// libsinga_core.
#ifndef SINGA_CORE_AUTOGRAD_GRAD_BUILDER_HPP
#define SINGA_CORE_AUTOGRAD_GRAD_BUILDER_HPP

#include "op_call.hpp"

#include <singa/singa_abi.h>

#include <string>
#include <unordered_map>
#include <vector>

// One backward being built by a plugin's builder. Values are eager tensors
// named "x<i>" (forward input i), "y<k>" (output k), "dy<k>" (the gradient
// of output k) and whatever names the builder gives the nodes it emits.
struct singa_grad_builder {
  std::string label;  // "op 'Conv' (node 'conv1')": the prefix of every error
  std::unordered_map<std::string, singa::Tensor> values;
  std::vector<std::string> inputs, outputs, output_grads;
  std::vector<bool> need;
  std::vector<std::string> input_grads;  // named by grad_set_input_grad
};

namespace singa {
namespace host_grad {
const char* input_name(singa_grad_builder* b, size_t i);
const char* output_name(singa_grad_builder* b, size_t i);
const char* output_grad_name(singa_grad_builder* b, size_t i);
int32_t input_needed(singa_grad_builder* b, size_t i);
int32_t value_info(singa_grad_builder* b, const char* value, singa_value_info* out);
singa_status* emit(singa_grad_builder* b, const singa_node_spec* spec);
singa_status* set_input_grad(singa_grad_builder* b, size_t i, const char* value);
}  // namespace host_grad

namespace autograd {

// A forward op's backward, as its kernel offers it.
struct GradientHooks {
  KernelInstance forward;                          // the kernel the forward ran
  const singa_gradient_def* backward = nullptr;    // its backward kernel, or
  const singa_gradient_ext* builder = nullptr;     // a builder (maybe another kernel's of the op)
  bool any() const { return backward || builder; }
};
GradientHooks gradient_hooks(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs);
// The builder of op_type/domain at `opset` (0: any) on any loaded kernel, or null.
const singa_gradient_ext* find_builder(const std::string& domain, const std::string& op_type, int64_t opset,
                                       const KernelEntry* skip = nullptr);
// Whether some kernel of the op at `opset` (0: any) has a gradient hook.
bool has_gradient_hook(const std::string& domain, const std::string& op_type, int64_t opset);

// Runs the hooks: x, y and gy are the forward inputs, outputs and output
// gradients (undefined where absent); returns the gradients of the inputs
// with need[i] set (undefined where the hook gave none). `label` names the op
// and node in errors.
std::vector<Tensor> run_gradient(const GradientHooks& hooks, const ::onnx::NodeProto& node, int64_t opset,
                                 const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                 const std::vector<Tensor>& gy, const std::vector<bool>& need,
                                 const std::string& label);

}  // namespace autograd
}  // namespace singa
#endif
