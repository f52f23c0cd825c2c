// tape.hpp - what apply() records, and the backward rules that read it.
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
  std::vector<Tensor> output_data;                    // saved for rules that read outputs
  bool needs_grad = false;                            // some input requires a gradient
};

// What a backward rule sees. `gy[k]` is the gradient of output k (undefined
// when nothing downstream needed it); the rule fills `gx[i]` for the inputs
// with `need[i]` set.
struct GradContext {
  const TapeNode& node;
  const std::vector<Tensor>& x;   // input values (undefined when absent)
  const std::vector<Tensor>& y;   // output values
  const std::vector<Tensor>& gy;
  std::vector<bool> need;
  std::vector<Tensor>& gx;
  const ::onnx::AttributeProto* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  float attr_float(const std::string& name, float def) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
};

using GradRule = std::function<void(GradContext&)>;
void register_rule(const std::string& domain, const std::string& op_type, GradRule rule);
const GradRule* find_rule(const std::string& domain, const std::string& op_type);

// Helpers for rules: eager calls on plain tensors (nothing recorded).
// `attrs` are copied from `like` when given, then `extra` added.
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {},
                        size_t outputs = 1, const std::string& domain = "");
Tensor run1(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}, const std::string& domain = "");
// Elementwise arithmetic on plain tensors for the rules (broadcasting as the ops do).
namespace eager {
inline Tensor neg(const Tensor& a) { return run1("Neg", {a}); }
inline Tensor add(const Tensor& a, const Tensor& b) { return run1("Add", {a, b}); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return run1("Sub", {a, b}); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return run1("Mul", {a, b}); }
inline Tensor div(const Tensor& a, const Tensor& b) { return run1("Div", {a, b}); }
}  // namespace eager
// Runs a grad-domain op carrying over the forward node's attributes.
std::vector<Tensor> run_grad(const std::string& op, const ::onnx::NodeProto& forward, const std::vector<Tensor>& in,
                             const std::vector<bool>& want, const Attrs& extra = {});
// Sums `g` over the axes that broadcasting expanded, giving `shape`.
Tensor reduce_to(const Tensor& g, const Shape& shape);
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
