// Keeps the activations between two ExpandDepthwiseProject nodes
// channels-last ([N][H][W][C], as many floats as NCHW) instead of NCHW: each
// node's band kernel computed its result channels-last and transposed it to
// NCHW planes, and the next node's expand stage read those planes back across
// C strides; that store took about 3% of MobileNetV2's time. A value goes
// channels-last when an ExpandDepthwiseProject writes it, it is not a graph
// output, and every reader is an ExpandDepthwiseProject reading it as X
// without a stem stage (a stem reads an image); a node with a skip connection
// adds X in Y's layout, so its X and Y go channels-last together or not at
// all. The values take kChannelsLastLayout (graph_set_layout), which the
// ExpandDepthwiseProject kernel declares for its X and Y; shapes stay the
// logical NCHW ones, with as many floats. A reader may be a node that writes
// only Y's means (Y left out: fuse_conv_reduce_mean.cpp); its skip
// connection then has no Y to match. Runs last.
#include "fuse_passes.hpp"
#include "conv_match.hpp"
#include "../layouts.hpp"

#include <map>

namespace singa {
namespace nn {
namespace passes {
namespace {

bool expand_depthwise_project(const GraphNode& n) {
  return cpu_op(n, "ExpandDepthwiseProject") && n.num_outputs() == 1 && !n.output_name(0).empty() &&
         n.num_inputs() > 0 && !n.input_name(0).empty();
}

// A node that may read its X channels-last: Y, or only Y's means.
bool block_reader(const GraphNode& n) {
  return cpu_op(n, "ExpandDepthwiseProject") && n.num_inputs() > 0 && !n.input_name(0).empty() &&
         (expand_depthwise_project(n) || (n.num_outputs() == 2 && n.output_name(0).empty()));
}

}  // namespace

int use_channels_last(Graph& g) {
  const std::vector<GraphNode> nodes = g.nodes();
  std::map<std::string, bool> last;
  auto is_last = [&](const std::string& v) {
    auto it = last.find(v);
    return it != last.end() && it->second;
  };
  for (const GraphNode& n : nodes) {
    if (!expand_depthwise_project(n)) continue;
    const std::string y = n.output_name(0);
    const auto readers = g.consumers(y);
    bool ok = !g.is_output(y) && !readers.empty();
    for (const GraphNode& r : readers) {
      ok = ok && block_reader(r) && r.attr_int("expand_window", 0) == 0;
      for (size_t k = 1; k < r.num_inputs() && ok; ++k) ok = r.input_name(k) != y;
    }
    last[y] = ok;
  }
  // A skip connection's X and Y together, to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (const GraphNode& n : nodes) {
      if (!expand_depthwise_project(n) || n.attr_int("residual", 0) == 0) continue;
      const std::string x = n.input_name(0), y = n.output_name(0);
      if (is_last(x) != is_last(y)) {
        last[x] = last[y] = false;
        changed = true;
      }
    }
  }
  int marked = 0;
  for (const auto& [v, on] : last)
    if (on) {
      g.set_layout(v, kChannelsLastLayout);
      ++marked;
    }
  return marked;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
