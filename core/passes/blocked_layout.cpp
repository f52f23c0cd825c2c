// Keeps activations in oneDNN's 16-channel blocked layout (nChw16c) between
// the Convs that oneDNN runs, instead of NCHW: each of those reordered its
// input into blocks and its output back (16x16 transposes), about a tenth of
// ResNet-18's time at 2 threads. A value goes blocked when a float 2-D Conv
// of one group writes it (a ConvAdd too, a fused MaxPool allowed) with a
// multiple of 16 channels, it is not a graph output, and every reader is such
// a Conv reading it as X (other than a stride-1 1x1 Conv on a plane of 64
// pixels or more, whose direct kernel reads NCHW), or a ConvAdd reading it as
// Z whose own output is blocked (the kernel adds Z in Y's layout). The Convs
// get the attributes blocked_input / blocked_output, which only singa's CPU Conv kernel reads
// (plugins/ops_nn/conv.cpp); shapes stay the logical NCHW ones (the blocked
// tensor has the same number of floats), so shape inference and the memory
// plan are unchanged. Runs last; CPU only.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

#include <vector>

namespace singa {
namespace passes {

namespace {

// A Conv or ConvAdd the CPU kernel may run on blocked activations.
bool blockable(const graph::Graph& g, const graph::Node& n) {
  const bool conv_add = is_conv_add(n);
  if (!conv_add && !plain_conv(g, n)) return false;
  if (find_attr(n, "global_average_pool")) return false;  // its own kernel, on NCHW (fuse_conv_mean.cpp)
  if (conv_add && (n.inputs.size() != 4 || n.inputs[3] < 0 || !float_value(g, n.inputs[0]) || !conv_weights(g, n)))
    return false;
  return int_attr(n, "group", 1) == 1 && n.outputs.size() == 1 && n.outputs[0] >= 0;
}

// A stride-1 1x1 Conv on a plane of at least 64 pixels: its direct kernel on
// NCHW (plugins/ops_nn/pointwise_direct_f32.hpp) beat oneDNN's 1x1 code on
// blocks with its output reorder (SqueezeNet's first squeeze and expand1x1
// layers at 2 threads: 0.025 -> 0.017 and 0.027 -> 0.018 ms).
bool reads_nchw_faster(const graph::Graph& g, const graph::Node& n) {
  if (is_conv_add(n) || !pointwise_conv(g, n)) return false;
  const auto& x = g.values[size_t(n.inputs[0])];
  return x.rank_known && x.dims.size() == 4 && x.dims[2] * x.dims[3] >= 64;
}

}  // namespace

int use_blocked_layout(graph::Graph& g) {
  // Candidates by their producer and channels, then pruned to a fixed point:
  // a ConvAdd's Z and output are blocked together or not at all.
  std::vector<bool> blocked(g.values.size(), false);
  std::vector<bool> node_ok(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    if (!blockable(g, n)) continue;
    node_ok[i] = true;
    const int y = n.outputs[0];
    const auto& v = g.values[size_t(y)];
    blocked[size_t(y)] = !v.is_output && !v.consumers.empty() && v.rank_known && v.dims.size() == 4 &&
                         conv_weights(g, n)->shape()[0] % 16 == 0;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < g.values.size(); ++v) {
      if (!blocked[v]) continue;
      bool ok = true;
      for (int c : g.values[v].consumers) {
        const graph::Node& n = g.nodes[size_t(c)];
        if (!node_ok[size_t(c)] || reads_nchw_faster(g, n)) {
          ok = false;
          break;
        }
        for (size_t k = 0; k < n.inputs.size() && ok; ++k) {
          if (n.inputs[k] != int(v)) continue;
          ok = k == 0 || (k == 3 && is_conv_add(n) && blocked[size_t(n.outputs[0])]);
        }
        if (!ok) break;
      }
      // A ConvAdd writes blocks only where its Z is blocked as well. A 1x1
      // Conv reading NCHW runs as one product on NCHW (conv_nchw_f32.hpp),
      // faster than oneDNN's with a reorder of its input (SqueezeNet's
      // squeeze layers 1.3-2.5x slower): it writes blocks only from blocks.
      const graph::Node& p = g.nodes[size_t(g.values[v].producer)];
      if (ok && is_conv_add(p) && !blocked[size_t(p.inputs[3])]) ok = false;
      if (ok && !is_conv_add(p) && pointwise_conv(g, p) && !blocked[size_t(p.inputs[0])]) ok = false;
      if (!ok) {
        blocked[v] = false;
        changed = true;
      }
    }
  }
  int marked = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!node_ok[i]) continue;
    graph::Node& n = g.nodes[i];
    const bool in = blocked[size_t(n.inputs[0])], out = blocked[size_t(n.outputs[0])];
    if (in) add_int_attr(n.proto, "blocked_input", 1);
    if (out) add_int_attr(n.proto, "blocked_output", 1);
    marked += out ? 1 : 0;
  }
  return marked;
}

}  // namespace passes
}  // namespace singa
