// graph.hpp - the core's graph IR, built from an onnx::ModelProto after the
// onnx library's checker and shape inference. Internal to libsinga_core.
#ifndef SINGA_CORE_GRAPH_HPP
#define SINGA_CORE_GRAPH_HPP

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>
#include <singa/tensor.hpp>

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace graph {

struct Value {
  std::string name;
  int32_t dtype = 0;                   // 0 when unknown
  bool rank_known = false;
  Shape dims;                          // -1 where unknown
  std::vector<std::string> dim_params; // symbolic names
  int producer = -1;                   // node index
  std::vector<int> consumers;
  bool is_input = false, is_initializer = false, is_output = false;
  Tensor constant;                     // initializers
};

struct Node {
  ::onnx::NodeProto proto;
  std::vector<int> inputs;   // -1: absent optional input
  std::vector<int> outputs;  // -1: absent optional output
  int64_t opset = 0;
  std::string label;         // "node 'name' (Op)" for messages
};

struct Graph {
  std::vector<Value> values;
  std::unordered_map<std::string, int> index;
  std::vector<Node> nodes;  // topological order
  std::vector<int> inputs, outputs;
  std::map<std::string, int64_t> opsets;
  std::string source, base_dir;
  std::vector<std::string> warnings;
};

// Checks, shape-infers (binding `dims`) and converts a model.
Graph build(::onnx::ModelProto model, const std::string& source, const std::string& base_dir,
            const onnx::PrepareOptions& options);

}  // namespace graph
}  // namespace singa
#endif
