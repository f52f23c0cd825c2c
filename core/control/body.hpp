// body.hpp - a subgraph (If branch, Loop/Scan/SequenceMap body) prepared as
// its own executor once, at prepare time, and run per call or iteration.
#ifndef SINGA_CORE_CONTROL_BODY_HPP
#define SINGA_CORE_CONTROL_BODY_HPP

#include "../executor.hpp"
#include "core_op.hpp"

#include <memory>
#include <string>
#include <vector>

namespace singa {
namespace control {

class Body {
 public:
  Body(const graph::Node& node, const std::string& attr, const ExecConfig& config, const std::string& where) {
    auto it = node.subgraphs.find(attr);
    if (it == node.subgraphs.end()) throw Error(SINGA_INVALID_ARGUMENT, where + ": graph attribute '" + attr + "' is missing");
    exec_ = std::make_unique<Executor>(*it->second, config);
  }
  const graph::Graph& graph() const { return exec_->graph(); }
  size_t num_inputs() const { return graph().inputs.size(); }
  size_t num_outputs() const { return graph().outputs.size(); }
  // Runs with the body's own inputs followed by the node's implicit inputs.
  std::vector<Value> run(std::vector<Value> inputs, const std::vector<Value>& implicit) const {
    inputs.insert(inputs.end(), implicit.begin(), implicit.end());
    return exec_->run_outputs(inputs);
  }

 private:
  std::unique_ptr<Executor> exec_;
};

// What the node hands its subgraphs from the enclosing scope.
inline std::vector<Value> implicit_values(const CoreCall& c) {
  std::vector<Value> out;
  for (size_t k = c.node.explicit_inputs; k < c.inputs.size(); ++k) out.push_back(c.inputs[k] ? *c.inputs[k] : Value());
  return out;
}

inline const Tensor& tensor_of(const Value& v, const std::string& what, const std::string& where) {
  if (!v.is_tensor()) throw Error(SINGA_INVALID_ARGUMENT, where + ": " + what + " must be a tensor, got " + v.describe());
  return v.tensor();
}

inline Tensor scalar_tensor_i64(int64_t x) { return Tensor::from_vector<int64_t>({}, SINGA_ONNX_INT64, {x}); }
inline Tensor scalar_tensor_bool(bool x) {
  Tensor t({}, SINGA_ONNX_BOOL);
  *t.data<bool>() = x;
  return t;
}

// A stack of per-iteration tensors; an empty one takes its type (and the
// known trailing dims) from the value the graph declares.
inline Tensor stack_or_empty(const std::vector<Tensor>& parts, int64_t axis, const graph::Value& declared, const std::string& where) {
  if (!parts.empty()) return concat(parts, axis, true, where);
  Shape shape{0};
  if (declared.rank_known && !declared.dims.empty()) {
    for (size_t d = 1; d < declared.dims.size(); ++d) shape.push_back(declared.dims[d] < 0 ? 0 : declared.dims[d]);
  }
  return Tensor(shape, declared.dtype ? declared.dtype : SINGA_ONNX_FLOAT);
}

}  // namespace control
}  // namespace singa
#endif
