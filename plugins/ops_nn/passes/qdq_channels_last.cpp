// use_qdq_channels_last (pass cpu.qdq_layout): keeps the 8-bit values that
// only QdqConv, QdqRequantize and QdqAdd write and read channels-last
// ("ai.singa.cpu.nhwc"), as oneDNN's int8 kernels read and write them, so
// the QdqConvs skip their NCHW <-> NHWC conversions; an elementwise node's
// inputs and output change together or not at all.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

#include "../layouts.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

// A QdqConv whose output oneDNN writes itself: no weight zero point input
// (fuse_qdq_conv.cpp leaves it out when every channel fits int8 as it is).
bool direct_qdq_conv(const GraphNode& n) {
  return cpu_op(n, "QdqConv") && (n.num_inputs() <= 5 || n.input_name(5).empty());
}

// The inputs of an 8-bit node that carry data (not scales or zero points).
std::vector<size_t> data_inputs(const GraphNode& n) {
  if (cpu_op(n, "QdqAdd")) return {0, 3};
  if (cpu_op(n, "QdqRequantize") || direct_qdq_conv(n)) return {0};
  return {};
}

}  // namespace

int use_qdq_channels_last(Graph& g) {
  const std::vector<GraphNode> nodes = g.nodes();
  std::map<std::string, bool> last;
  auto is_last = [&](const std::string& v) {
    auto it = last.find(v);
    return it != last.end() && it->second;
  };
  for (const GraphNode& n : nodes) {
    if (!n.alive() || data_inputs(n).empty() || n.num_outputs() != 1 || n.output_name(0).empty()) continue;
    const std::string y = n.output_name(0);
    const auto readers = g.consumers(y);
    bool ok = !g.is_output(y) && !readers.empty() && known_4d(g, y);
    for (const GraphNode& r : readers) {
      const std::vector<size_t> d = data_inputs(r);
      ok = ok && !d.empty();
      for (size_t k = 0; k < r.num_inputs() && ok; ++k)
        ok = r.input_name(k) != y || std::find(d.begin(), d.end(), k) != d.end();
    }
    last[y] = ok;
  }
  // The elementwise nodes keep one layout from inputs to output, to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (const GraphNode& n : nodes) {
      if (!n.alive() || !(cpu_op(n, "QdqAdd") || cpu_op(n, "QdqRequantize"))) continue;
      bool all = is_last(n.output_name(0));
      for (size_t k : data_inputs(n)) all = all && is_last(n.input_name(k));
      if (all) continue;
      for (const std::string& v : {n.output_name(0), n.input_name(0), n.input_name(cpu_op(n, "QdqAdd") ? 3 : 0)})
        if (is_last(v)) last[v] = false, changed = true;
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
