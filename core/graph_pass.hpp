// graph_pass.hpp - the host side of plugins' graph passes (singa_graph_pass_ext,
// ABI 1.3): the singa_graph handle, the graph_* calls of the host table, and
// the step of prepare that runs the passes registered for the target device.
// Internal to libsinga_core.
#ifndef SINGA_CORE_GRAPH_PASS_HPP
#define SINGA_CORE_GRAPH_PASS_HPP

#include "graph.hpp"
#include "host.hpp"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

// A graph while one plugin pass runs over it. Node handles stay in step with
// g->nodes (one per node, same order) across edits.
struct singa_graph {
  singa::graph::Graph* g = nullptr;
  std::string device;
  const std::map<std::string, std::string>* options = nullptr;
  std::vector<std::unique_ptr<singa_node>> handles;
  // Handles of replaced nodes, kept (describing an empty node) until the pass
  // ends, so that a plugin holding one reads "" and 0 instead of freed memory.
  std::vector<std::unique_ptr<singa_node>> retired;
  std::deque<DLTensor> views;  // constant views handed out (stable addresses)
};

namespace singa {

// Fills a node handle from the graph (value infos, constants, proto).
void describe_node(singa_node& info, const graph::Graph& g, const graph::Node& node);

// Runs the plugins' passes registered for `device` (and for every device)
// over `g`, highest priority first, skipping those switched off by the named
// option "pass.NAME=0". Adds each pass's rewrite count to `stats` under its
// name. A failing pass is an Error naming it and its plugin.
void run_graph_passes(graph::Graph& g, const std::string& device, const std::map<std::string, std::string>* options,
                      std::map<std::string, int>* stats);

namespace host_graph {
size_t num_nodes(const singa_graph* g);
const singa_node* node(const singa_graph* g, size_t i);
const char* device(const singa_graph* g);
const char* option(const singa_graph* g, const char* key);
const singa_node* producer(const singa_graph* g, const char* value);
size_t num_consumers(const singa_graph* g, const char* value);
const singa_node* consumer(const singa_graph* g, const char* value, size_t i);
int32_t is_output(const singa_graph* g, const char* value);
int32_t value_info(const singa_graph* g, const char* value, singa_value_info* out);
const DLTensor* constant(const singa_graph* g, const char* value);
singa_status* add_constant(singa_graph* g, const char* hint, const DLTensor* value, char* name, size_t cap);
singa_status* replace(singa_graph* g, const singa_node* const* nodes, size_t num_nodes, const singa_node_spec* specs,
                      size_t num_specs);
int32_t has_kernel(const singa_graph* g, const char* domain, const char* op_type, int64_t opset, const char* device);
}  // namespace host_graph

// Whether a kernel for op_type/domain at `opset` is registered for `device`
// ("" = any device), or the core runs the op itself.
bool kernel_registered(const std::string& domain, const std::string& op_type, int64_t opset, const std::string& device);

}  // namespace singa
#endif
