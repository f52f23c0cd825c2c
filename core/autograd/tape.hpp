// tape.hpp - what apply() records, which backward() reads.
// Internal to libsinga_core (the frontend reads the same records).
#ifndef SINGA_CORE_AUTOGRAD_TAPE_HPP
#define SINGA_CORE_AUTOGRAD_TAPE_HPP

#include "op_call.hpp"

#include <singa/autograd.hpp>

#include <onnx/onnx_pb.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace singa {
namespace autograd {

struct Variable::State {
  Tensor data, grad;
  bool requires_grad = false;
  std::string name;
  std::shared_ptr<TapeNode> creator;
  int index = 0;
};

struct TapeNode {
  ::onnx::NodeProto proto;  // op_type, domain, attributes; output names mark wanted outputs
  int64_t opset = 0;
  std::vector<Variable> inputs;                       // held: the tape keeps its inputs alive
  std::vector<std::weak_ptr<Variable::State>> outputs; // not held: no cycles
  std::vector<Tensor> output_data;                    // saved for gradients that read outputs
  bool needs_grad = false;                            // some input requires a gradient
};

// Eager calls on plain tensors (nothing recorded).
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {},
                        size_t outputs = 1, const std::string& domain = "");
Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}, const std::string& domain = "");
void add_attrs(::onnx::NodeProto& node, const Attrs& attrs);
// apply() for a prepared node (op_type, domain, attributes; output names ""
// for outputs not wanted) at `opset`.
std::vector<Variable> apply_node(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Variable>& inputs);
// A node of `domain` with the attributes and wanted outputs of `source` and
// nothing else (names stripped, so that instances are shared).
::onnx::NodeProto bare_node(const ::onnx::NodeProto& source);

}  // namespace autograd
}  // namespace singa
#endif
