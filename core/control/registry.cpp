// Which nodes the core runs itself (see core_op.hpp).
#include "core_op.hpp"

#include <set>

namespace singa {

namespace {

const std::set<std::string> kValueOps = {
    "SequenceConstruct", "SequenceEmpty",      "SequenceAt", "SequenceInsert",     "SequenceErase",     "SequenceLength",
    "SplitToSequence",   "ConcatFromSequence", "Optional",   "OptionalHasElement", "OptionalGetElement"};

}  // namespace

const std::set<std::pair<std::string, std::string>>& core_op_types() {
  static const std::set<std::pair<std::string, std::string>> ops = [] {
    std::set<std::pair<std::string, std::string>> s{{"", "If"}, {"", "Loop"}, {"", "Scan"}, {"", "SequenceMap"}, {"ai.onnx.ml", "ZipMap"}};
    for (const auto& op : kValueOps) s.insert({"", op});
    return s;
  }();
  return ops;
}

std::unique_ptr<CoreOp> make_core_op(const graph::Graph& g, const graph::Node& node, const ExecConfig& config) {
  const auto& p = node.proto;
  if (p.domain() == "ai.onnx.ml" && p.op_type() == "ZipMap") return control::make_zip_map(g, node);
  if (!p.domain().empty() && p.domain() != "ai.onnx") return nullptr;
  const std::string& op = p.op_type();
  if (op == "If") return control::make_if(g, node, config);
  if (op == "Loop") return control::make_loop(g, node, config);
  if (op == "Scan") return control::make_scan(g, node, config);
  if (op == "SequenceMap") return control::make_sequence_map(g, node, config);
  if (kValueOps.count(op)) return control::make_sequence_op(g, node);
  // Identity of a sequence or optional only moves a handle.
  if (op == "Identity" && !node.inputs.empty() && node.inputs[0] >= 0 &&
      g.values[size_t(node.inputs[0])].kind != graph::TypeKind::kTensor)
    return control::make_sequence_op(g, node);
  return nullptr;
}

}  // namespace singa
