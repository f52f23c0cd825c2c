// op_call.hpp - runs one registered kernel eagerly, outside any graph: the
// path by which the autograd tape, the layers and the backward rules reach
// the same plugin kernels that imported graphs run. Internal to libsinga_core.
#ifndef SINGA_CORE_AUTOGRAD_OP_CALL_HPP
#define SINGA_CORE_AUTOGRAD_OP_CALL_HPP

#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace singa {
namespace autograd {

// Runs `node` (op_type, domain and attributes; its output list says how many
// outputs are wanted, "" marking ones not wanted) at `opset` of its domain on
// the CPU device. Absent optional inputs are undefined Tensors. Kernel
// instances are created once per (op, opset, attributes, input types and
// ranks, wanted outputs) and reused by later calls. Throws an Error naming
// the op when no kernel fits or the kernel fails.
std::vector<Tensor> call_op(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs);

// The kernel instance call_op runs for these arguments (created on first
// use, then shared): its definition carries the op's gradient hooks.
struct KernelInstance {
  const KernelEntry* kernel = nullptr;
  void* state = nullptr;
  const std::string* label = nullptr;  // "op 'Conv' (opset 17)"
};
KernelInstance kernel_for(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs);

// Runs `instance`'s backward kernel (singa_gradient_def) on `inputs` (the
// forward inputs, outputs and output gradients); returns its `num_outputs`
// outputs, undefined where it produced none.
std::vector<Tensor> call_backward(const KernelInstance& instance, const std::vector<Tensor>& inputs,
                                  size_t num_outputs);

// The opset eager ops of the default domain run at.
constexpr int64_t kEagerOpset = 17;
// The opset of the "ai.singa.grad" domain (the backward kernels).
constexpr int64_t kGradOpset = 1;
extern const char* const kGradDomain;
// The domain of the training path's fused forward ops ("ai.singa", opset 1:
// ConvReluMaxPool, made by layer::Sequential, written back as plain ONNX
// nodes by to_onnx).
extern const char* const kFusedDomain;

}  // namespace autograd
}  // namespace singa
#endif
