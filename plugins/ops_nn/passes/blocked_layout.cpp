// Keeps activations in oneDNN's 16-channel blocked layout (nChw16c) between
// the Convs that oneDNN runs, instead of NCHW: each of those reordered its
// input into blocks and its output back (16x16 transposes), about a tenth of
// ResNet-18's time at 2 threads. A value goes blocked when a float 2-D Conv
// of one group writes it (a ConvAdd too, a fused MaxPool allowed) with a
// multiple of 16 channels, it is not a graph output, and every reader is such
// a Conv reading it as X (other than a stride-1 1x1 Conv on a plane of 64
// pixels or more whose output is NCHW, whose direct kernel reads NCHW), or a
// ConvAdd reading it as Z (the kernel adds Z in Y's layout, or a blocked Z
// to a blocked result before it moves to an NCHW Y: the last sum of a
// residual chain that GlobalAveragePool reads, which otherwise took the
// whole chain back to NCHW through ResNet-50's layer4).
//
// The layout is the value's (kBlocked16Layout, set with graph_set_layout):
// every Conv on either side becomes an ai.singa.cpu FusedConv (or stays a
// ConvAdd), whose kernel declares the layout and does the reorder into and
// out of blocks itself, so no reorder node is needed and the host checks
// that no other kernel reads a blocked value. Shapes stay the logical NCHW
// ones and a blocked value (C a multiple of 16) has as many floats as the
// plain one, so shape inference and the memory plan are unchanged. Runs last.
#include "fuse_passes.hpp"
#include "conv_match.hpp"
#include "../layouts.hpp"

#include <map>
#include <set>

namespace singa {
namespace nn {
namespace passes {
namespace {

// A Conv or ConvAdd the CPU kernel may run on blocked activations.
bool blockable(const Graph& g, const GraphNode& n) {
  const bool conv_add = cpu_op(n, "ConvAdd");
  if (conv_add) {
    if (n.num_inputs() != 4 || n.input_name(3).empty() || !float_value(g, n.input_name(0)) ||
        conv_weight_shape(g, n).empty())
      return false;
  } else if (!plain_conv(g, n)) {
    return false;
  }
  if (n.has_attr("global_average_pool")) return false;  // its own kernel, on NCHW (fuse_conv_mean.cpp)
  if (winograd_thin_conv(g, n)) return false;  // the NCHW Winograd kernel (conv_match.hpp)
  return n.attr_int("group", 1) == 1 && n.num_outputs() == 1 && !n.output_name(0).empty();
}

// A stride-1 1x1 Conv on a plane of at least 64 pixels: where its own output
// is NCHW, its direct kernel on NCHW (pointwise_direct_f32.hpp) beat oneDNN's
// 1x1 code on blocks with its output reorder (SqueezeNet's first squeeze and
// expand1x1 layers at 2 threads: 0.025 -> 0.017 and 0.027 -> 0.018 ms). From
// blocks to blocks oneDNN's 1x1 code does no reorder and wins (ResNet-50's
// bottlenecks, whose 1x1 layers had read and written NCHW around blocked 3x3
// layers: the whole net ran about 10% faster all blocked).
bool reads_nchw_faster(const Graph& g, const GraphNode& n) {
  if (cpu_op(n, "ConvAdd") || !pointwise_conv(g, n)) return false;
  const auto x = shape_of(g, n.input_name(0));
  return x.size() == 4 && x[2] * x[3] >= 64;
}

}  // namespace

int use_blocked_layout(Graph& g) {
  // Candidates by their producer and channels, then pruned to a fixed point:
  // a ConvAdd's Z and output are blocked together or not at all.
  const std::vector<GraphNode> nodes = g.nodes();
  std::set<const singa_node*> node_ok;
  std::map<std::string, bool> blocked;  // by value name; absent = false
  auto is_blocked = [&](const std::string& v) {
    auto it = blocked.find(v);
    return it != blocked.end() && it->second;
  };
  for (const GraphNode& n : nodes) {
    if (!blockable(g, n)) continue;
    node_ok.insert(n.raw());
    const std::string y = n.output_name(0);
    blocked[y] = !g.is_output(y) && !g.consumers(y).empty() && shape_of(g, y).size() == 4 &&
                 conv_weight_shape(g, n)[0] % 16 == 0;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [v, on] : blocked) {
      if (!on) continue;
      bool ok = true;
      for (const GraphNode& c : g.consumers(v)) {
        if (!node_ok.count(c.raw()) || (reads_nchw_faster(g, c) && !is_blocked(c.output_name(0)))) {
          ok = false;
          break;
        }
        for (size_t k = 0; k < c.num_inputs() && ok; ++k) {
          if (c.input_name(k) != v) continue;
          ok = k == 0 || (k == 3 && cpu_op(c, "ConvAdd"));
        }
        if (!ok) break;
      }
      // A ConvAdd writes blocks only where its Z is blocked as well. A 1x1
      // Conv reading NCHW runs as one product on NCHW (conv_nchw_f32.hpp),
      // faster than oneDNN's with a reorder of its input: it writes blocks
      // only from blocks.
      const GraphNode p = g.producer(v);
      const bool conv_add = cpu_op(p, "ConvAdd");
      if (ok && conv_add && !is_blocked(p.input_name(3))) ok = false;
      if (ok && !conv_add && pointwise_conv(g, p) && !is_blocked(p.input_name(0))) ok = false;
      if (!ok) {
        on = false;
        changed = true;
      }
    }
  }
  // A standard Conv on either side of a blocked value becomes a FusedConv,
  // whose kernel declares the layout; then the values take it.
  int marked = 0;
  for (const GraphNode& n : nodes) {
    if (!node_ok.count(n.raw())) continue;
    const bool in = is_blocked(n.input_name(0)), out = is_blocked(n.output_name(0));
    if (!in && !out) continue;
    marked += out ? 1 : 0;
    if (n.domain() == kCpuDomain) continue;
    NewNode f(kCpuDomain, "FusedConv");
    f.name = n.name();
    f.opset = 1;
    f.inputs = n.input_names();
    f.outputs = n.output_names();
    f.attrs_from = n.raw();
    g.replace({n}, {f});
  }
  for (const auto& [v, on] : blocked)
    if (on) g.set_layout(v, kBlocked16Layout);
  return marked;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
