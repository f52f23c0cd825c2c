// Loop: a trip count and/or a condition drive the body; loop-carried values
// (tensors, sequences or optionals) pass from one iteration to the next and
// scan outputs are stacked along a new first axis.
#include "body.hpp"

#include <limits>

namespace singa {
namespace control {

namespace {

class LoopOp : public CoreOp {
 public:
  LoopOp(const graph::Graph& g, const graph::Node& node, const ExecConfig& config)
      : where_(g.source + ": " + node.label), body_(node, "body", config, where_) {
    if (node.explicit_inputs < 2) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": Loop takes at least 2 inputs (M, cond)");
    carried_ = node.explicit_inputs - 2;
    if (body_.num_inputs() != carried_ + 2)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body takes " + std::to_string(body_.num_inputs()) + " inputs, expected " +
                                              std::to_string(carried_ + 2) + " (iteration, condition and " + std::to_string(carried_) +
                                              " loop-carried values)");
    if (body_.num_outputs() < carried_ + 1)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the body produces " + std::to_string(body_.num_outputs()) + " outputs, expected at least " +
                                              std::to_string(carried_ + 1));
    scans_ = body_.num_outputs() - 1 - carried_;
    if (node.outputs.size() != carried_ + scans_)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the node has " + std::to_string(node.outputs.size()) + " outputs, the body gives " +
                                              std::to_string(carried_) + " loop-carried values and " + std::to_string(scans_) + " scan outputs");
  }

  void run(CoreCall& c) const override {
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (c.inputs[0] && !c.inputs[0]->is_none()) trips = scalar_int(tensor_of(*c.inputs[0], "M", where_), "M", where_);
    bool cond = true;
    if (c.inputs[1] && !c.inputs[1]->is_none()) cond = scalar_int(tensor_of(*c.inputs[1], "cond", where_), "cond", where_) != 0;
    std::vector<Value> carried;
    for (size_t k = 0; k < carried_; ++k) carried.push_back(c.inputs[2 + k] ? *c.inputs[2 + k] : Value());
    std::vector<std::vector<Tensor>> scanned(scans_);
    std::vector<Value> implicit = implicit_values(c);
    const auto& bg = body_.graph();
    for (int64_t i = 0; i < trips && cond; ++i) {
      std::vector<Value> ins{scalar_tensor_i64(i), scalar_tensor_bool(cond)};
      ins.insert(ins.end(), carried.begin(), carried.end());
      std::vector<Value> outs = body_.run(std::move(ins), implicit);
      cond = scalar_int(tensor_of(outs[0], "the body's condition output", where_), "condition", where_) != 0;
      for (size_t k = 0; k < carried_; ++k) carried[k] = std::move(outs[1 + k]);
      for (size_t k = 0; k < scans_; ++k) {
        scanned[k].push_back(tensor_of(outs[1 + carried_ + k], "scan output " + std::to_string(k), where_));
        if (c.max_tensor_bytes && scanned[k].size() * scanned[k].back().nbytes() > c.max_tensor_bytes)
          throw Error(SINGA_OUT_OF_MEMORY, where_ + ": scan output " + std::to_string(k) + " grows beyond the memory limit");
      }
    }
    for (size_t k = 0; k < carried_; ++k) c.outputs[k] = std::move(carried[k]);
    for (size_t k = 0; k < scans_; ++k)
      c.outputs[carried_ + k] = stack_or_empty(scanned[k], 0, bg.values[size_t(bg.outputs[1 + carried_ + k])], where_);
  }

 private:
  std::string where_;
  Body body_;
  size_t carried_ = 0, scans_ = 0;
};

}  // namespace

std::unique_ptr<CoreOp> make_loop(const graph::Graph& g, const graph::Node& node, const ExecConfig& config) {
  return std::make_unique<LoopOp>(g, node, config);
}

}  // namespace control
}  // namespace singa
