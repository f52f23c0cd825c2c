// graph.hpp - the core's graph IR, built from an onnx::ModelProto after the
// onnx library's checker and shape inference. Internal to libsinga_core.
#ifndef SINGA_CORE_GRAPH_HPP
#define SINGA_CORE_GRAPH_HPP

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace graph {

// What ONNX type a value declares. Tensors are the common case; sequences
// and optionals are run by the core's own ops (core/control/).
enum class TypeKind { kTensor, kSequence, kOptional, kOther };

struct Value {
  std::string name;
  TypeKind kind = TypeKind::kTensor;
  bool optional_of_sequence = false;   // kOptional holding a sequence
  int32_t dtype = 0;                   // element type (of the tensors for sequences); 0 when unknown
  bool rank_known = false;
  Shape dims;                          // -1 where unknown
  std::vector<std::string> dim_params; // symbolic names
  int producer = -1;                   // node index
  std::vector<int> consumers;
  bool is_input = false, is_initializer = false, is_output = false;
  bool is_outer = false;               // a subgraph's reference to an enclosing graph's value
  Tensor constant;                     // initializers
  // How the elements lie in memory: "" plain (row-major in `dims`), else a
  // layout a plugin's graph pass named (singa_layout_ext). `dims` stays the
  // logical shape either way.
  std::string layout;
};

struct Graph;

struct Node {
  ::onnx::NodeProto proto;
  // -1: absent optional input. After the node's own inputs come the values
  // its subgraphs read from this graph's scope (implicit inputs).
  std::vector<int> inputs;
  size_t explicit_inputs = 0;
  std::vector<int> outputs;  // -1: absent optional output
  int64_t opset = 0;
  std::string label;         // "node 'name' (Op)" for messages
  // Graph attributes (If's branches, Loop/Scan bodies), by attribute name.
  std::map<std::string, std::shared_ptr<const Graph>> subgraphs;
};

struct Graph {
  std::vector<Value> values;
  std::unordered_map<std::string, int> index;
  std::vector<Node> nodes;  // topological order
  std::vector<int> inputs, outputs;
  // Values read from enclosing scopes, in the order the enclosing node lists
  // them after its own inputs; the executor takes them after `inputs`.
  std::vector<int> outer;
  std::map<std::string, int64_t> opsets;
  std::string source, base_dir;
  std::vector<std::string> warnings;
};

// Checks, shape-infers (binding `dims`) and converts a model.
Graph build(::onnx::ModelProto model, const std::string& source, const std::string& base_dir,
            const onnx::PrepareOptions& options);

// Shape inference again, once passes have turned shape arithmetic into
// constants (with symbolic dims bound, a Reshape's computed target becomes
// one): fills in the rank and dims of tensor values the first inference left
// unknown. Small initializers go in with their data, large ones with their
// type only. Lenient: where inference fails the values stay as they were.
// Returns how many values it refined.
int refine_shapes(Graph& g);

// Kahn's algorithm over nodes 0..n-1 (`deps[i]`: the nodes node i reads
// from), taking the ready node that comes first, so that an order already
// valid is kept. Nodes on a cycle are left out; `first_stuck` gets the first.
std::vector<int> topological_order(const std::vector<std::set<int>>& deps, int* first_stuck);

// "tensor(float)", "seq(tensor(int64))", "optional(tensor(float))" for messages.
std::string type_string(const Value& v);

// The value's rank and every dimension are known.
bool fully_known(const Value& v);

}  // namespace graph
}  // namespace singa
#endif
