// The body of an inverted residual block (MobileNetV2, EfficientNet-style
// nets): an optional pointwise "expand" Conv, a depthwise Conv and a
// pointwise "project" Conv, whose two intermediate values nothing else reads,
// becomes one ExpandDepthwiseProject node of the ai.singa domain
// (plugins/ops_nn/expand_depthwise_project.cpp), which keeps the expanded
// rows in cache instead of writing them to memory and transposing them
// (plugins/ops_nn/inverted_residual_f32.hpp). It runs after the activation
// fusion, so each Conv's fused activation moves onto the node under the
// stage's prefix (expand_, depthwise_, project_). Where the block has no
// expand stage, a stem Conv of a few channels in front of it takes that place
// (MobileNetV2's first Conv and block). CPU only, float only, and
// only windows the kernel takes: all weights constant, the depthwise window
// 3x3 or 5x5 with stride 1 or 2, explicit pads below the kernel size.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

#include <string>

namespace singa {
namespace passes {
namespace {

// A float 2-D depthwise Conv the fused kernel takes.
bool depthwise(const graph::Graph& g, const graph::Node& n) {
  if (!plain_conv(g, n)) return false;
  const Tensor* w = conv_weights(g, n);
  const int64_t C = w->shape()[0], k = w->shape()[2];
  const auto* group = find_attr(n, "group");
  if (w->shape()[1] != 1 || w->shape()[3] != k || (k != 3 && k != 5) || !group || group->i() != C) return false;
  const auto* strides = find_attr(n, "strides");
  int64_t s = 1;
  if (strides) {
    if (strides->ints_size() != 2 || strides->ints(0) != strides->ints(1)) return false;
    s = strides->ints(0);
  }
  if (s != 1 && s != 2) return false;
  if (const auto* ks = find_attr(n, "kernel_shape"); ks && !ints_all(ks, k, 2)) return false;
  if (const auto* pads = find_attr(n, "pads")) {
    if (pads->ints_size() != 4) return false;
    for (int64_t p : pads->ints())
      if (p < 0 || p >= k) return false;
  }
  return true;
}

// A network's stem in front of a block without an expand stage (MobileNetV2's
// 3 -> 32 3x3/2 Conv before its first block): a float 2-D Conv of one group
// over at most 4 channels whose Me outputs are a multiple of 32, strides 1 or
// 2, which the kernel runs row by row into the block's bands
// (plugins/ops_nn/conv_thin_f32.hpp's conv_thin_rows_channels_last).
bool stem(const graph::Graph& g, const graph::Node& n, int64_t Me) {
  if (!plain_conv(g, n)) return false;
  const Tensor* w = conv_weights(g, n);
  const auto& ws = w->shape();
  if (ws.size() != 4 || ws[0] != Me || Me % 32 != 0 || ws[1] < 1 || ws[1] > 4 || (ws[2] == 1 && ws[3] == 1))
    return false;
  if (const auto* group = find_attr(n, "group"); group && group->i() != 1) return false;
  if (const auto* strides = find_attr(n, "strides");
      strides && !ints_all(strides, 1, 2) && !ints_all(strides, 2, 2))
    return false;
  if (const auto* pads = find_attr(n, "pads"); pads && pads->ints_size() != 4) return false;
  return has_channels(g, n.inputs[0], ws[1]);
}

// A Conv's window attributes onto the fused node, their names prefixed.
void copy_window(const graph::Node& conv, const std::string& prefix, ::onnx::NodeProto& p) {
  for (const auto& a : conv.proto.attribute())
    if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "pads" || a.name() == "dilations") {
      auto* copy = p.add_attribute();
      *copy = a;
      copy->set_name(prefix + a.name());
    }
}

}  // namespace

int fuse_inverted_residuals(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& dw = g.nodes[i];
    if (dead[i] || !depthwise(g, dw) || !float_value(g, dw.inputs[0]) || dw.outputs[0] < 0) continue;
    const int64_t Me = conv_weights(g, dw)->shape()[0];
    if (!has_channels(g, dw.inputs[0], Me)) continue;
    // The project Conv: the depthwise result's only reader.
    const int mid = dw.outputs[0];
    if (!single_use(g, mid)) continue;
    const size_t pi = size_t(g.values[size_t(mid)].consumers[0]);
    graph::Node& project = g.nodes[pi];
    if (dead[pi] || !pointwise_conv(g, project) || project.inputs[0] != mid || conv_weights(g, project)->shape()[1] != Me ||
        project.outputs[0] < 0)
      continue;
    // The expand Conv, when the depthwise input comes from one that nothing
    // else reads.
    const int e = dw.inputs[0];
    const int ep = g.values[size_t(e)].producer;
    graph::Node* expand = nullptr;
    if (ep >= 0 && !dead[size_t(ep)] && single_use(g, e) && pointwise_conv(g, g.nodes[size_t(ep)]) &&
        conv_weights(g, g.nodes[size_t(ep)])->shape()[0] == Me) {
      graph::Node& cand = g.nodes[size_t(ep)];
      if (float_value(g, cand.inputs[0]) && has_channels(g, cand.inputs[0], conv_weights(g, cand)->shape()[1]))
        expand = &cand;
    }
    // Else a stem there takes the expand stage's place.
    bool with_stem = false;
    if (!expand && ep >= 0 && !dead[size_t(ep)] && single_use(g, e) && stem(g, g.nodes[size_t(ep)], Me)) {
      expand = &g.nodes[size_t(ep)];
      with_stem = true;
    }
    ::onnx::NodeProto p;
    p.set_op_type("ExpandDepthwiseProject");
    p.set_domain(kFusedDomain);
    p.set_name(project.proto.name().empty() ? dw.proto.name() : project.proto.name());
    auto input = [&](const graph::Node* n, size_t slot) {
      const bool has = n && int(slot) < n->proto.input_size() && !n->proto.input(int(slot)).empty();
      p.add_input(has ? n->proto.input(int(slot)) : std::string());
      return has && slot < n->inputs.size() ? n->inputs[slot] : -1;
    };
    std::vector<int> ins;
    ins.push_back(expand ? input(expand, 0) : input(&dw, 0));
    ins.push_back(input(expand, 1));
    ins.push_back(input(expand, 2));
    ins.push_back(input(&dw, 1));
    ins.push_back(input(&dw, 2));
    ins.push_back(input(&project, 1));
    ins.push_back(input(&project, 2));
    // The skip connection: an Add of the block's input and its result (in
    // either order, same shape) that alone reads the result.
    int out = project.outputs[0];
    bool with_skip = false;
    graph::Node* skip = sole_reader(g, out, "Add", 2);
    if (skip && (skip->inputs[0] == out ? skip->inputs[1] : skip->inputs[0]) == ins[0] && skip->outputs.size() == 1 &&
        skip->outputs[0] >= 0) {
      if (same_4d_shape(g, ins[0], out)) {
        with_skip = true;
        add_int_attr(p, "residual", 1);
        out = skip->outputs[0];
        g.values[size_t(out)].producer = int(pi);
        dead[index_of(g, *skip)] = true;
      }
    }
    project.outputs[0] = out;
    p.add_output(g.values[size_t(out)].name);
    copy_window(dw, "", p);
    if (with_stem) {
      add_int_attr(p, "expand_window", 1);
      copy_window(*expand, "expand_", p);
    }
    if (expand) move_activation(*expand, p, "expand_");
    move_activation(dw, p, "depthwise_");
    move_activation(project, p, "project_");
    const std::string stages = std::string(expand ? "Conv+Conv+Conv" : "Conv+Conv") + (with_skip ? "+Add" : "");
    project.label = "node '" + p.name() + "' (ExpandDepthwiseProject of " + stages + ")";
    project.proto = std::move(p);
    project.inputs = ins;
    project.explicit_inputs = ins.size();
    project.opset = 1;
    dead[i] = true;
    if (expand) dead[index_of(g, *expand)] = true;
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
