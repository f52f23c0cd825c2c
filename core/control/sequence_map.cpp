// SequenceMap: runs the body once per element of the input sequence; further
// inputs are sequences of the same length (taken element-wise) or tensors
// (given whole to every call). Each body output collects into a sequence.
#include "body.hpp"

namespace singa {
namespace control {

namespace {

class SequenceMapOp : public CoreOp {
 public:
  SequenceMapOp(const graph::Graph& g, const graph::Node& node, const ExecConfig& config)
      : where_(g.source + ": " + node.label), body_(node, "body", config, where_) {
    if (body_.num_inputs() != node.explicit_inputs)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body takes " + std::to_string(body_.num_inputs()) + " inputs, the node gives " +
                                              std::to_string(node.explicit_inputs));
    if (body_.num_outputs() != node.outputs.size())
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body produces " + std::to_string(body_.num_outputs()) + " outputs, the node has " +
                                              std::to_string(node.outputs.size()));
    for (int v : node.outputs) out_dtypes_.push_back(v >= 0 ? g.values[size_t(v)].dtype : 0);
  }

  void run(CoreCall& c) const override {
    size_t explicit_in = c.node.explicit_inputs;
    if (!c.inputs[0] || !c.inputs[0]->is_sequence())
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": input 0 must be a sequence");
    size_t len = c.inputs[0]->elements().size();
    for (size_t j = 1; j < explicit_in; ++j) {
      if (!c.inputs[j]) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": input " + std::to_string(j) + " is missing");
      if (c.inputs[j]->is_sequence() && c.inputs[j]->elements().size() != len)
        throw Error(SINGA_INVALID_ARGUMENT, where_ + ": input " + std::to_string(j) + " has " + std::to_string(c.inputs[j]->elements().size()) +
                                                " elements, input 0 has " + std::to_string(len));
    }
    std::vector<Value> implicit = implicit_values(c);
    std::vector<std::vector<Tensor>> outs(c.outputs.size());
    for (size_t i = 0; i < len; ++i) {
      std::vector<Value> ins;
      for (size_t j = 0; j < explicit_in; ++j) ins.push_back(c.inputs[j]->is_sequence() ? c.inputs[j]->elements()[i] : *c.inputs[j]);
      std::vector<Value> got = body_.run(std::move(ins), implicit);
      for (size_t k = 0; k < outs.size(); ++k) outs[k].push_back(tensor_of(got[k], "body output " + std::to_string(k), where_));
    }
    for (size_t k = 0; k < outs.size(); ++k) c.outputs[k] = Value::sequence(std::move(outs[k]), out_dtypes_[k]);
  }

 private:
  std::string where_;
  Body body_;
  std::vector<int32_t> out_dtypes_;
};

}  // namespace

std::unique_ptr<CoreOp> make_sequence_map(const graph::Graph& g, const graph::Node& node, const ExecConfig& config) {
  return std::make_unique<SequenceMapOp>(g, node, config);
}

}  // namespace control
}  // namespace singa
