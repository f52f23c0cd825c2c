// Constant folding: a node whose inputs are all initializers is run once,
// through the same kernels the executor uses, and its outputs become
// initializers. Shape and Size of values whose shape is statically known fold
// the same way, which then lets the Gather/Concat/Reshape chains exporters
// build around them fold too.
#include "graph_edit.hpp"
#include "passes.hpp"

#include "../executor.hpp"

#include <set>

namespace singa {
namespace passes {
namespace {

// Ops whose result must not be frozen: random draws differ per run.
bool nondeterministic(const std::string& op) {
  static const std::set<std::string> ops{"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                         "Multinomial",  "Bernoulli",     "Dropout"};
  return ops.count(op) > 0;
}

bool static_shape(const graph::Value& v) { return v.kind == graph::TypeKind::kTensor && graph::fully_known(v); }

// Shape (with opset 15's start/end) or Size of a statically shaped input.
bool fold_shape(graph::Graph& g, const graph::Node& n, Tensor& out) {
  const std::string& op = n.proto.op_type();
  if ((op != "Shape" && op != "Size") || n.inputs.size() != 1 || n.inputs[0] < 0) return false;
  const graph::Value& in = g.values[size_t(n.inputs[0])];
  if (!static_shape(in)) return false;
  if (op == "Size") {
    int64_t total = 1;
    for (int64_t d : in.dims) total *= d;
    out = Tensor::from_vector<int64_t>({}, SINGA_ONNX_INT64, {total});
    return true;
  }
  const int64_t rank = int64_t(in.dims.size());
  auto clamp = [&](int64_t i) {
    if (i < 0) i += rank;
    return std::max<int64_t>(0, std::min(i, rank));
  };
  int64_t start = clamp(int_attr(n, "start", 0)), end = clamp(int_attr(n, "end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(in.dims[size_t(i)]);
  out = Tensor::from_vector<int64_t>({int64_t(dims.size())}, SINGA_ONNX_INT64, dims);
  return true;
}

// Runs one node on the CPU with its (constant) inputs; empty on any failure,
// which leaves the node to run (and report its error) at run time.
std::vector<Tensor> evaluate(const graph::Graph& g, const graph::Node& n, Device* cpu, size_t max_bytes) {
  graph::Graph mini;
  mini.source = g.source;
  mini.base_dir = g.base_dir;
  mini.opsets = g.opsets;
  graph::Node node;
  node.proto = n.proto;
  node.opset = n.opset;
  node.label = n.label;
  node.explicit_inputs = n.explicit_inputs;
  auto copy_value = [&](int v) {
    graph::Value c = g.values[size_t(v)];
    c.producer = -1;
    c.consumers.clear();
    c.is_input = c.is_output = c.is_outer = false;
    mini.values.push_back(std::move(c));
    int id = int(mini.values.size()) - 1;
    mini.index[mini.values.back().name] = id;
    return id;
  };
  for (int v : n.inputs) node.inputs.push_back(v < 0 ? -1 : copy_value(v));
  for (int v : n.outputs) {
    int id = v < 0 ? -1 : copy_value(v);
    node.outputs.push_back(id);
    if (id >= 0) {
      mini.values[size_t(id)].is_output = true;
      mini.values[size_t(id)].is_initializer = false;
      mini.outputs.push_back(id);
    }
  }
  mini.nodes.push_back(std::move(node));
  relink(mini);
  try {
    Executor ex(std::move(mini), ExecConfig{cpu, 0, false, max_bytes});
    std::vector<Value> outs = ex.run_outputs({});
    std::vector<Tensor> result;
    for (auto& o : outs) {
      if (!o.is_tensor()) return {};
      result.push_back(o.tensor().to_host());
    }
    return result;
  } catch (const std::exception&) {
    return {};
  }
}

void make_initializer(graph::Value& v, Tensor t) {
  v.is_initializer = true;
  v.producer = -1;
  v.dtype = t.dtype();
  v.rank_known = true;
  v.dims = t.shape();
  v.dim_params.assign(v.dims.size(), "");
  v.constant = std::move(t);
}

}  // namespace

int fold_constants(graph::Graph& g, const PassOptions& options, int* shapes_folded) {
  Device* cpu = Runtime::instance().cpu();
  std::vector<bool> dead(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    if (!plain_onnx_node(n) || nondeterministic(n.proto.op_type())) continue;
    if (options.keep_dequantize && n.proto.op_type() == "DequantizeLinear") continue;
    bool tensors_out = !n.outputs.empty();
    for (int v : n.outputs)
      tensors_out = tensors_out && (v < 0 || g.values[size_t(v)].kind == graph::TypeKind::kTensor);
    if (!tensors_out) continue;
    Tensor shape;
    if (fold_shape(g, n, shape)) {
      make_initializer(g.values[size_t(n.outputs[0])], std::move(shape));
      dead[i] = true;
      ++folded;
      if (shapes_folded) ++*shapes_folded;
      continue;
    }
    bool constant_in = cpu != nullptr;
    for (int v : n.inputs)
      constant_in = constant_in && (v < 0 || (g.values[size_t(v)].is_initializer && g.values[size_t(v)].kind == graph::TypeKind::kTensor));
    if (!constant_in) continue;
    std::vector<Tensor> outs = evaluate(g, n, cpu, options.max_folded_bytes);
    if (outs.size() != n.outputs.size()) continue;
    size_t bytes = 0;
    for (const auto& t : outs) bytes += t.defined() ? t.nbytes() : 0;
    if (bytes > options.max_folded_bytes) continue;
    bool all = true;
    for (size_t k = 0; k < outs.size(); ++k) all = all && (n.outputs[k] < 0 || outs[k].defined());
    if (!all) continue;
    for (size_t k = 0; k < outs.size(); ++k)
      if (n.outputs[k] >= 0) make_initializer(g.values[size_t(n.outputs[k])], std::move(outs[k]));
    dead[i] = true;
    ++folded;
  }
  if (folded) compact(g, dead);
  return folded;
}

}  // namespace passes
}  // namespace singa
