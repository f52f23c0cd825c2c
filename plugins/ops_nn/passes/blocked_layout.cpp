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
//
// Values also go through a MaxPool (blocks out from blocks or NCHW in,
// pool.cpp) and a channel Concat of inputs whose channels are multiples of 16
// on a plane under kMaxConcatPlane (every input and the output together,
// plugins/ops_tensor/concat_split.cpp): GoogLeNet's Inception branches read
// a Concat or a MaxPool and end in one, so without these every branch
// reordered its input and output.
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

// A reader of `v`, a MaxPool's or Concat's output, that reads_nchw_faster
// yet cannot write blocks itself (its outputs are not a multiple of 16)
// while other nodes read `v` too: it reads the blocks rather than sending
// the whole chain of Concats back to NCHW for its one small output
// (GoogLeNet's 512 -> 24 reducers beside three blocked readers). Where a
// Conv writes `v` it keeps NCHW: RegNetY's 48 -> 104 1x1 on 56x56 ran
// 0.34 ms on blocks against 0.20 on NCHW at 2 threads.
bool odd_shared_reader(const Graph& g, const GraphNode& c, const std::string& v) {
  const GraphNode p = g.producer(v);
  if (!standard_op(p, "MaxPool") && !standard_op(p, "Concat")) return false;
  const auto w = conv_weight_shape(g, c);
  return !w.empty() && w[0] % 16 != 0 && g.consumers(v).size() > 1;
}

// The dims of a 4-D value with its channels a known multiple of 16.
bool blocked_shape(const Graph& g, const std::string& v) {
  const auto s = shape_of(g, v);
  return s.size() == 4 && s[1] > 0 && s[1] % 16 == 0 && float_value(g, v);
}

// A standard MaxPool whose kernel reads and writes blocks: a float 4-D X and
// no Indices (any window, stride, padding, dilation or ceil_mode).
bool blockable_pool(const Graph& g, const GraphNode& n) {
  return standard_op(n, "MaxPool") && n.num_inputs() == 1 && !n.output_name(0).empty() &&
         n.num_outputs() == 1 && blocked_shape(g, n.input_name(0));
}

// The most inputs the blocked Concat kernel declares (concat_split.cpp).
constexpr size_t kMaxConcatInputs = 64;
// A Concat passes blocks on only on planes of fewer pixels: at 2 threads
// oneDNN's blocked bands on GoogLeNet's 28x28 Inception blocks ran 0.03-0.15
// ms slower per node than their NCHW paths (per-node minima), 14x14 even,
// 7x7 faster; at 1 thread every size gained.
constexpr int64_t kMaxConcatPlane = 512;

// A standard Concat along the channels of 4-D float values, each with a
// multiple of 16 channels: in blocks each input image is one contiguous run
// of the output's image.
bool blockable_concat(const Graph& g, const GraphNode& n) {
  if (!standard_op(n, "Concat") || n.num_inputs() == 0 || n.num_inputs() > kMaxConcatInputs ||
      n.num_outputs() != 1 || n.output_name(0).empty() || !blocked_shape(g, n.output_name(0)))
    return false;
  const int64_t axis = n.attr_int("axis", 1);
  const auto y = shape_of(g, n.output_name(0));
  if ((axis != 1 && axis != -3) || y[2] <= 0 || y[3] <= 0 || y[2] * y[3] >= kMaxConcatPlane) return false;
  for (size_t k = 0; k < n.num_inputs(); ++k)
    if (n.input_name(k).empty() || !blocked_shape(g, n.input_name(k))) return false;
  return true;
}

// True where every reader of `v` is a ConvAdd taking it as Z whose X and
// output stay NCHW. A value whose producer reads NCHW then only crosses
// into blocks and straight back: the producer reorders into blocks and each
// ConvAdd reorders its X in and its Y out around oneDNN, where on NCHW both
// take their direct kernels (RegNet's strided 1x1 shortcuts, whose grouped
// 3x3 neighbours keep the rest of the stage NCHW: RegNetX's 56x56
// shortcut 0.42 -> 0.24 ms and its sum 0.23 -> 0.12 ms at 1 thread).
template <class Blocked>
bool only_summand_of_plain_sums(const Graph& g, const std::string& v, const Blocked& is_blocked) {
  const std::vector<GraphNode> readers = g.consumers(v);
  if (readers.empty()) return false;
  for (const GraphNode& c : readers) {
    if (!cpu_op(c, "ConvAdd") || c.num_inputs() != 4 || c.input_name(3) != v || c.input_name(0) == v ||
        is_blocked(c.input_name(0)) || is_blocked(c.output_name(0)))
      return false;
  }
  return true;
}

}  // namespace

int use_blocked_layout(Graph& g) {
  // Candidates by their producer and channels, then pruned to a fixed point:
  // a ConvAdd's Z and output are blocked together or not at all.
  const std::vector<GraphNode> nodes = g.nodes();
  std::set<const singa_node*> node_ok, passes_ok;  // Convs; MaxPools and Concats
  std::map<std::string, bool> blocked;  // by value name; absent = false
  auto is_blocked = [&](const std::string& v) {
    auto it = blocked.find(v);
    return it != blocked.end() && it->second;
  };
  // Option cpu.blocked_concat_pool=0 keeps MaxPools and Concats plain and
  // odd_shared_reader off (the regions end at them, as before).
  const bool through = g.option("cpu.blocked_concat_pool", "1") != "0";
  for (const GraphNode& n : nodes) {
    if (through && (blockable_pool(g, n) || blockable_concat(g, n))) {
      const std::string y = n.output_name(0);
      passes_ok.insert(n.raw());
      blocked[y] = !g.is_output(y) && !g.consumers(y).empty();
      continue;
    }
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
        // A MaxPool or Concat passes blocks on: its output goes blocked too.
        if (passes_ok.count(c.raw())) {
          if (!is_blocked(c.output_name(0))) ok = false;
          if (!ok) break;
          continue;
        }
        if (!node_ok.count(c.raw()) || (reads_nchw_faster(g, c) && !is_blocked(c.output_name(0)) &&
                                         !(through && odd_shared_reader(g, c, v)))) {
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
      if (passes_ok.count(p.raw())) {
        // A Concat writes blocks from blocks only. A MaxPool on NCHW starts
        // the region where several nodes read its output (GoogLeNet's pools
        // between Inception stages): its one conversion replaces a reorder
        // per reader. A sole Conv reader reorders its own bands as cheaply.
        const bool pool = standard_op(p, "MaxPool");
        if (ok && !is_blocked(p.input_name(0)) && (!pool || g.consumers(v).size() < 2)) ok = false;
        for (size_t k = 1; k < p.num_inputs() && ok; ++k) ok = is_blocked(p.input_name(k));
      } else {
        if (ok && conv_add && !is_blocked(p.input_name(3))) ok = false;
        if (ok && !conv_add && pointwise_conv(g, p) && !is_blocked(p.input_name(0))) ok = false;
        if (ok && !is_blocked(p.input_name(0)) && only_summand_of_plain_sums(g, v, is_blocked)) ok = false;
      }
      if (!ok) {
        on = false;
        changed = true;
      }
    }
  }
  // A standard Conv on either side of a blocked value becomes a FusedConv,
  // whose kernel declares the layout; then the values take it.
  int marked = 0;
  for (const GraphNode& n : nodes)
    marked += passes_ok.count(n.raw()) && is_blocked(n.output_name(0)) ? 1 : 0;
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
