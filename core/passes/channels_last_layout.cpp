// Keeps the activations between two ExpandDepthwiseProject nodes
// channels-last ([N][H][W][C], as many floats as NCHW) instead of NCHW: each
// node's band kernel computed its result channels-last and transposed it to
// NCHW planes (16x16 register transposes), and the next node's expand stage
// read those planes back across C strides; that store took about 3% of
// MobileNetV2's time. A value goes channels-last when an
// ExpandDepthwiseProject writes it, it is not a graph output, and every
// reader is an ExpandDepthwiseProject reading it as X without a stem stage
// (a stem reads an image); a node with a skip connection adds X in Y's
// layout, so its X and Y go channels-last together or not at all. The nodes
// get the attributes channels_last_input / channels_last_output, which only
// singa's CPU kernel reads (plugins/ops_nn/expand_depthwise_project.cpp);
// shapes stay the logical NCHW ones, so shape inference and the memory plan
// are unchanged. Runs last; CPU only.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

#include <vector>

namespace singa {
namespace passes {

namespace {

bool expand_depthwise_project(const graph::Node& n) {
  return n.proto.op_type() == "ExpandDepthwiseProject" && n.proto.domain() == kFusedDomain && n.outputs.size() == 1 &&
         n.outputs[0] >= 0 && !n.inputs.empty() && n.inputs[0] >= 0;
}

}  // namespace

int use_channels_last(graph::Graph& g) {
  std::vector<bool> last(g.values.size(), false);
  for (const graph::Node& n : g.nodes) {
    if (!expand_depthwise_project(n)) continue;
    const auto& v = g.values[size_t(n.outputs[0])];
    bool ok = !v.is_output && !v.consumers.empty();
    for (int c : v.consumers) {
      const graph::Node& r = g.nodes[size_t(c)];
      ok = ok && expand_depthwise_project(r) && int_attr(r, "expand_window", 0) == 0;
      for (size_t k = 1; k < r.inputs.size() && ok; ++k) ok = r.inputs[k] != n.outputs[0];
    }
    last[size_t(n.outputs[0])] = ok;
  }
  // A skip connection's X and Y together, to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (const graph::Node& n : g.nodes) {
      if (!expand_depthwise_project(n) || int_attr(n, "residual", 0) == 0) continue;
      const size_t x = size_t(n.inputs[0]), y = size_t(n.outputs[0]);
      if (last[x] != last[y]) {
        last[x] = last[y] = false;
        changed = true;
      }
    }
  }
  int marked = 0;
  for (graph::Node& n : g.nodes) {
    if (!expand_depthwise_project(n)) continue;
    if (last[size_t(n.inputs[0])]) add_int_attr(n.proto, "channels_last_input", 1);
    if (last[size_t(n.outputs[0])]) {
      add_int_attr(n.proto, "channels_last_output", 1);
      ++marked;
    }
  }
  return marked;
}

}  // namespace passes
}  // namespace singa
