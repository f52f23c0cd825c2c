// If: runs one of two prepared branches; both see the enclosing scope.
#include "body.hpp"

namespace singa {
namespace control {

namespace {

class IfOp : public CoreOp {
 public:
  IfOp(const graph::Graph& g, const graph::Node& node, const ExecConfig& config)
      : where_(g.source + ": " + node.label),
        then_(node, "then_branch", config, where_),
        else_(node, "else_branch", config, where_) {
    size_t outs = node.outputs.size();
    if (then_.num_outputs() != outs || else_.num_outputs() != outs)
      throw Error(SINGA_INVALID_ARGUMENT, where_ + ": the node has " + std::to_string(outs) + " outputs but its branches produce " +
                                              std::to_string(then_.num_outputs()) + " and " + std::to_string(else_.num_outputs()));
  }

  void run(CoreCall& c) const override {
    if (!c.inputs.at(0)) throw Error(SINGA_INVALID_ARGUMENT, where_ + ": 'cond' is missing");
    bool cond = scalar_int(tensor_of(*c.inputs[0], "cond", where_), "cond", where_) != 0;
    std::vector<Value> outs = (cond ? then_ : else_).run({}, implicit_values(c));
    for (size_t k = 0; k < outs.size() && k < c.outputs.size(); ++k) c.outputs[k] = std::move(outs[k]);
  }

 private:
  std::string where_;
  Body then_, else_;
};

}  // namespace

std::unique_ptr<CoreOp> make_if(const graph::Graph& g, const graph::Node& node, const ExecConfig& config) {
  return std::make_unique<IfOp>(g, node, config);
}

}  // namespace control
}  // namespace singa
