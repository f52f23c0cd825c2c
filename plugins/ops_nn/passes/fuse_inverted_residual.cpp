// The body of an inverted residual block (MobileNetV2, EfficientNet-style
// nets): an optional pointwise "expand" Conv, a depthwise Conv and a
// pointwise "project" Conv, whose two intermediate values nothing else reads,
// becomes one ai.singa.cpu ExpandDepthwiseProject node
// (expand_depthwise_project.cpp), which keeps the expanded rows in cache
// instead of writing them to memory and transposing them
// (inverted_residual_f32.hpp). It runs after the activation fusion, so each
// Conv's fused activation moves onto the node under the stage's prefix
// (expand_, depthwise_, project_). Where the block has no expand stage, a
// stem Conv of a few channels in front of it takes that place (MobileNetV2's
// first Conv and block). A block whose depthwise result goes elsewhere (an
// EfficientNet block's squeeze-and-excitation reads it before the project
// Conv) fuses its 1x1 expand and depthwise Convs alone: a node without W2
// whose output is the depthwise result, which keeps the expanded tensor in
// cache all the same; a GlobalAveragePool of that result (the SE's squeeze)
// becomes the node's second output, summed while the rows are in cache.
// Where the whole squeeze-and-excitation sits between the depthwise and
// project Convs (its pool, two 1x1 Convs and ChannelGate, as
// fuse_squeeze_excite.cpp leaves it), all of it joins the node
// (inputs S1, SB1, S2, SB2; expand_depthwise_project.cpp), with or
// without an expand stage or stem.
// Float only, and only windows the kernel takes: all
// weights constant, the depthwise window 3x3, 5x5 or 7x7 with stride 1 or 2,
// explicit pads below the kernel size.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {
namespace {

// A Conv stage without a fused MaxPool or mean (those run in FusedConv only).
bool stage_conv(const Graph& g, const GraphNode& n) {
  return plain_conv(g, n) && !n.has_attr("pool_kernel_shape") && !n.has_attr("global_average_pool");
}

// A float 2-D depthwise Conv the fused kernel takes.
bool depthwise(const Graph& g, const GraphNode& n) {
  if (!stage_conv(g, n)) return false;
  const auto w = conv_weight_shape(g, n);
  const int64_t C = w[0], k = w[2];
  if (w[1] != 1 || w[3] != k || (k != 3 && k != 5 && k != 7) || n.attr_int("group", 1) != C || !n.has_attr("group"))
    return false;
  int64_t s = 1;
  if (n.has_attr("strides")) {
    const auto st = n.attr_ints("strides");
    if (st.size() != 2 || st[0] != st[1]) return false;
    s = st[0];
  }
  if (s != 1 && s != 2) return false;
  if (n.has_attr("kernel_shape") && !ints_all(n, "kernel_shape", k, 2)) return false;
  if (n.has_attr("pads")) {
    const auto pads = n.attr_ints("pads");
    if (pads.size() != 4) return false;
    for (int64_t p : pads)
      if (p < 0 || p >= k) return false;
  }
  return true;
}

// A network's stem in front of a block without an expand stage (MobileNetV2's
// 3 -> 32 3x3/2 Conv before its first block, a keyword spotting CNN's
// 1 -> 172 10x4/2 one): a float 2-D Conv of one group over at most 4
// channels, strides 1 or 2, which the kernel runs row by row into the
// block's bands (conv_thin_f32.hpp's conv_thin_rows_channels_last; Me
// outputs that are not groups of 32 run padded to them).
bool stem(const Graph& g, const GraphNode& n, int64_t Me) {
  if (!stage_conv(g, n)) return false;
  const auto ws = conv_weight_shape(g, n);
  if (ws[0] != Me || ws[1] < 1 || ws[1] > 4 || (ws[2] == 1 && ws[3] == 1)) return false;
  if (n.attr_int("group", 1) != 1) return false;
  if (n.has_attr("strides") && !ints_all(n, "strides", 1, 2) && !ints_all(n, "strides", 2, 2)) return false;
  if (n.has_attr("pads") && n.attr_ints("pads").size() != 4) return false;
  return has_channels(g, n.input_name(0), ws[1]);
}

// A Conv's window attributes onto the fused node, their names prefixed.
void copy_window(const GraphNode& conv, const std::string& prefix, std::vector<sdk::Attr>& out) {
  for (const char* a : {"kernel_shape", "strides", "pads", "dilations"})
    if (conv.has_attr(a)) out.push_back(sdk::Attr(prefix + a, conv.attr_ints(a)));
}

// A Conv's fused activation onto the fused node under the stage's prefix.
void move_activation(const GraphNode& conv, const std::string& prefix, std::vector<sdk::Attr>& out) {
  if (!conv.has_attr("activation")) return;
  out.push_back(sdk::Attr(prefix + "activation", conv.attr_string("activation", "")));
  for (const char* a : {"activation_alpha", "activation_beta", "activation_min", "activation_max"})
    if (conv.has_attr(a)) out.push_back(sdk::Attr(prefix + a, conv.attr_float(a, 0.f)));
}

// A squeeze-and-excitation between the depthwise Conv (its result `mid`, Me
// channels) and a project Conv, as the SE pass leaves it:
//   mid -> GlobalAveragePool -> 1x1 Conv [-> act] -> 1x1 Conv [-> act]
//   ChannelGate(mid, that) [act] -> the project Conv
// every value read once but mid (by the pool and the gate), one gate
// activation (on the second Conv or on the ChannelGate).
struct SqueezeExciteMatch {
  std::vector<GraphNode> nodes;  // pool, squeeze, excite, gate, project
  bool found = false;
};

SqueezeExciteMatch squeeze_excite_after(const Graph& g, const std::string& mid, int64_t Me) {
  SqueezeExciteMatch m;
  const auto readers = g.consumers(mid);
  if (readers.size() != 2 || g.is_output(mid)) return m;
  const bool pool_first = standard_op(readers[0], "GlobalAveragePool");
  const GraphNode pool = readers[pool_first ? 0 : 1], gate = readers[pool_first ? 1 : 0];
  if (!standard_op(pool, "GlobalAveragePool") || pool.num_inputs() != 1 || pool.num_outputs() != 1 ||
      pool.output_name(0).empty() || !cpu_op(gate, "ChannelGate") || gate.num_inputs() != 2 ||
      gate.num_outputs() != 1 || gate.input_name(0) != mid || gate.output_name(0).empty())
    return m;
  const GraphNode squeeze = sole_reader(g, pool.output_name(0));
  if (!squeeze.valid() || !stage_conv(g, squeeze) || !pointwise_conv(g, squeeze) ||
      squeeze.input_name(0) != pool.output_name(0))
    return m;
  const int64_t R = conv_weight_shape(g, squeeze)[0];
  if (conv_weight_shape(g, squeeze)[1] != Me) return m;
  const GraphNode excite = sole_reader(g, squeeze.output_name(0));
  if (!excite.valid() || !stage_conv(g, excite) || !pointwise_conv(g, excite) ||
      excite.input_name(0) != squeeze.output_name(0) || conv_weight_shape(g, excite)[0] != Me ||
      conv_weight_shape(g, excite)[1] != R || !(sole_reader(g, excite.output_name(0)) == gate) ||
      gate.input_name(1) != excite.output_name(0) || (has_activation(excite) && has_activation(gate)))
    return m;
  const GraphNode project = sole_reader(g, gate.output_name(0));
  if (!project.valid() || !stage_conv(g, project) || !pointwise_conv(g, project) ||
      project.input_name(0) != gate.output_name(0) || conv_weight_shape(g, project)[1] != Me)
    return m;
  m.nodes = {pool, squeeze, excite, gate, project};
  m.found = true;
  return m;
}

}  // namespace

int fuse_inverted_residuals(Graph& g) {
  int fused = 0;
  for (GraphNode dw : g.nodes()) {
    if (!dw.alive() || !depthwise(g, dw) || !float_value(g, dw.input_name(0))) continue;
    const int64_t Me = conv_weight_shape(g, dw)[0];
    if (!has_channels(g, dw.input_name(0), Me)) continue;
    // The project Conv: the depthwise result's only reader.
    const std::string mid = dw.output_name(0);
    GraphNode project = sole_reader(g, mid);
    bool with_project = project.valid() && stage_conv(g, project) && pointwise_conv(g, project) &&
                              project.input_name(0) == mid && conv_weight_shape(g, project)[1] == Me;
    // Or a squeeze-and-excitation, then the project Conv.
    const SqueezeExciteMatch se = with_project ? SqueezeExciteMatch() : squeeze_excite_after(g, mid, Me);
    if (se.found) {
      project = se.nodes[4];
      with_project = true;
    }
    // The expand Conv, when the depthwise input comes from one that nothing
    // else reads; else a stem there takes the expand stage's place.
    const std::string e = dw.input_name(0);
    GraphNode ep = g.producer(e);
    GraphNode expand(nullptr, g.raw());
    bool with_stem = false;
    if (ep.valid() && sole_reader(g, e).valid()) {
      if (stage_conv(g, ep) && pointwise_conv(g, ep) && conv_weight_shape(g, ep)[0] == Me &&
          float_value(g, ep.input_name(0)) && has_channels(g, ep.input_name(0), conv_weight_shape(g, ep)[1])) {
        expand = ep;
      } else if (stem(g, ep, Me)) {
        expand = ep;
        with_stem = true;
      }
    }
    // Without a project stage only a 1x1 expand stage makes the node worth
    // it (a depthwise Conv alone runs as fast as a Conv).
    if (!with_project && (!expand.valid() || with_stem)) continue;
    NewNode f(kCpuDomain, "ExpandDepthwiseProject");
    f.name = !with_project || project.name().empty() ? dw.name() : project.name();
    f.opset = 1;
    auto input = [](const GraphNode& n, size_t slot) {
      return n.valid() && slot < n.num_inputs() ? n.input_name(slot) : std::string();
    };
    const std::string x = expand.valid() ? input(expand, 0) : input(dw, 0);
    f.inputs = {x, input(expand, 1), input(expand, 2), input(dw, 1), input(dw, 2)};
    if (with_project) {
      f.inputs.push_back(input(project, 1));
      f.inputs.push_back(input(project, 2));
    }
    if (se.found)
      for (const GraphNode& c : {se.nodes[1], se.nodes[2]}) {
        f.inputs.push_back(input(c, 1));
        f.inputs.push_back(input(c, 2));
      }
    std::vector<GraphNode> replaced{dw};
    if (with_project) replaced.push_back(project);
    if (se.found) replaced.insert(replaced.end(), se.nodes.begin(), se.nodes.begin() + 4);
    if (expand.valid()) replaced.push_back(expand);
    // The skip connection: an Add of the block's input and its result (in
    // either order, same shape) that alone reads the result.
    std::string out = with_project ? project.output_name(0) : mid;
    GraphNode skip = sole_reader(g, out);
    if (with_project && skip.valid() && standard_op(skip, "Add") && skip.num_inputs() == 2 && skip.num_outputs() == 1 &&
        !skip.output_name(0).empty() && (skip.input_name(0) == out ? skip.input_name(1) : skip.input_name(0)) == x &&
        same_4d_shape(g, x, out)) {
      f.attrs.push_back(sdk::Attr("residual", 1));
      out = skip.output_name(0);
      replaced.push_back(skip);
    }
    f.outputs = {out};
    if (!with_project)
      for (const GraphNode& r : g.consumers(mid))
        if (standard_op(r, "GlobalAveragePool") && r.num_inputs() == 1 && r.num_outputs() == 1 &&
            !r.output_name(0).empty() && shape_of(g, mid).size() == 4) {
          f.outputs.push_back(r.output_name(0));
          replaced.push_back(r);
          break;
        }
    copy_window(dw, "", f.attrs);
    if (with_stem) {
      f.attrs.push_back(sdk::Attr("expand_window", 1));
      copy_window(expand, "expand_", f.attrs);
    }
    if (expand.valid()) move_activation(expand, "expand_", f.attrs);
    move_activation(dw, "depthwise_", f.attrs);
    if (with_project) move_activation(project, "project_", f.attrs);
    if (se.found) {
      move_activation(se.nodes[1], "squeeze_", f.attrs);
      move_activation(se.nodes[2], "gate_", f.attrs);
      move_activation(se.nodes[3], "gate_", f.attrs);
    }
    g.replace(replaced, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
