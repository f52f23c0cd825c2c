// Dead-node removal: nodes none of whose outputs reach a graph output. Nodes
// with graph attributes and other domains' nodes stay (they may have effects
// this pass cannot see).
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {

int remove_dead_nodes(graph::Graph& g) {
  std::vector<int> readers(g.values.size(), 0);
  for (const auto& n : g.nodes)
    for (int v : n.inputs)
      if (v >= 0) ++readers[size_t(v)];
  std::vector<bool> dead(g.nodes.size(), false);
  int removed = 0;
  // Reverse topological order: a node's readers are decided before it.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const graph::Node& n = g.nodes[i];
    if (!plain_onnx_node(n)) continue;
    bool live = false;
    for (int v : n.outputs)
      live = live || (v >= 0 && (readers[size_t(v)] > 0 || g.values[size_t(v)].is_output));
    if (live) continue;
    dead[i] = true;
    ++removed;
    for (int v : n.inputs)
      if (v >= 0) --readers[size_t(v)];
  }
  if (removed) compact(g, dead);
  return removed;
}

}  // namespace passes
}  // namespace singa
