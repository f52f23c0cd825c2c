// graph_edit.hpp - small edits on the graph IR shared by the passes.
#ifndef SINGA_CORE_PASSES_GRAPH_EDIT_HPP
#define SINGA_CORE_PASSES_GRAPH_EDIT_HPP

#include "../graph.hpp"

#include <string>

namespace singa {
namespace passes {

// Recomputes every value's producer and consumers from the nodes.
void relink(graph::Graph& g);

// Drops nodes marked `dead` (by index) and values nothing refers to any more,
// renumbering the rest; then relinks.
void compact(graph::Graph& g, const std::vector<bool>& dead);

// Adds an initializer holding `t` under a name not used in the graph
// (derived from `hint`); returns its index.
int add_initializer(graph::Graph& g, const std::string& hint, Tensor t);

// A node the passes may rewrite: default ONNX domain, no graph attributes.
bool plain_onnx_node(const graph::Node& n);
// A node the passes may rewrite of type `op` with `arity` inputs (0: any number).
bool plain_op(const graph::Node& n, const char* op, size_t arity = 0);

// The value's only reader is one node and it is not a graph output.
bool single_use(const graph::Graph& g, int value);

// That only reader, when it is a plain ONNX node of type `op` with `arity`
// inputs (0: any number); else null. For walking a fused pattern's chain.
graph::Node* sole_reader(graph::Graph& g, int value, const char* op, size_t arity = 0);

// The position of `n` (a node of `g`) in g.nodes.
size_t index_of(const graph::Graph& g, const graph::Node& n);

// A float initializer (host tensor) at input slot `slot` of node `n`, or null.
const Tensor* float_constant(const graph::Graph& g, const graph::Node& n, size_t slot);

// Attribute lookup on a node's proto; null when absent.
const ::onnx::AttributeProto* find_attr(const graph::Node& n, const std::string& name);

// An INT attribute's value, `dflt` when absent.
int64_t int_attr(const graph::Node& n, const std::string& name, int64_t dflt);

// Attributes a pass adds to a node's proto.
void add_int_attr(::onnx::NodeProto& p, const std::string& name, int64_t v);
void add_float_attr(::onnx::NodeProto& p, const std::string& name, float v);

// Node `i` takes over `value`, the output of a node it absorbs, as its first
// output (the proto's output name and the value's producer follow).
void adopt_output(graph::Graph& g, size_t i, int value);

// The node's name, or its first output's where it has none (for labels).
std::string node_name(const graph::Graph& g, const graph::Node& n);

// Node `i` absorbs node `reader`, the one node reading its first output:
// its label becomes "node 'NAME' (fused)", it takes over the reader's first
// output (adopt_output), and the reader is marked dead.
void absorb_reader(graph::Graph& g, size_t i, size_t reader, const std::string& fused, std::vector<bool>& dead);

}  // namespace passes
}  // namespace singa
#endif
