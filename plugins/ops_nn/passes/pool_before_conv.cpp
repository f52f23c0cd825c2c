// A 1x1 Conv (stride 1, no padding, any group count, with or without bias)
// whose output only an AveragePool without padding reads, directly or through
// a Pad that pads nothing (torchvision's DenseNet transitions export one):
// the pool runs first and the Conv then works on the pooled plane. Both are
// affine per pixel and the pool's window weights sum to one, so
// avg(W x + b) = W avg(x) + b exactly; a 2x2/2 pool leaves the Conv a
// quarter of its multiply-adds (DenseNet-121's three transitions: 12 of
// 100 ms at one thread). A pool with padding (the padded zeros would become
// the bias after the swap) or ceil_mode (overhanging windows) is left alone,
// as is a swap whose pooling of the wider side costs more than it saves.
#include "pool_before_conv.hpp"
#include "conv_match.hpp"

namespace singa {
namespace nn {
namespace passes {
namespace {

// A Pad whose pads input is a constant of zeros: it copies its input.
bool pads_nothing(const Graph& g, const GraphNode& n) {
  if (!standard_op(n, "Pad") || n.num_outputs() != 1 || n.output_name(0).empty()) return false;
  std::vector<int64_t> pads;
  if (n.has_attr("pads")) {
    pads = n.attr_ints("pads");  // Pad-1 and Pad-2 carry them as an attribute
  } else {
    if (n.num_inputs() < 2 || n.input_name(1).empty()) return false;
    sdk::Tensor t = g.constant(n.input_name(1));
    if (!t.present() || t.dtype() != SINGA_ONNX_INT64) return false;
    pads = t.to_int_vector();
  }
  for (int64_t p : pads)
    if (p != 0) return false;
  return true;
}

// A 2-D AveragePool over whole windows only: no padding, no ceil_mode, no
// dilation.
bool unpadded_average_pool(const GraphNode& n) {
  if (!standard_op(n, "AveragePool") || n.num_inputs() != 1 || n.num_outputs() != 1 || n.output_name(0).empty())
    return false;
  if (n.attr_ints("kernel_shape").size() != 2) return false;
  const std::string auto_pad = n.attr_string("auto_pad", "");
  if (!auto_pad.empty() && auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  return n.attr_int("ceil_mode", 0) == 0 && ints_all(n, "pads", 0, 4) && ints_all(n, "dilations", 1, 2) &&
         (!n.has_attr("strides") || n.attr_ints("strides").size() == 2);
}

// A standard 1x1 Conv of stride 1 without padding (groups allowed).
bool one_by_one_conv(const Graph& g, const GraphNode& n) {
  if (!standard_op(n, "Conv") || !plain_conv(g, n)) return false;
  const auto w = conv_weight_shape(g, n);
  return w[2] == 1 && w[3] == 1 && ints_all(n, "strides", 1, 2) && ints_all(n, "pads", 0, 4) &&
         ints_all(n, "kernel_shape", 1, 2);
}

// [N, C, H, W] with C, H and W known (the batch may be symbolic).
bool known_chw(const std::vector<int64_t>& s) { return s.size() == 4 && s[1] > 0 && s[2] > 0 && s[3] > 0; }

}  // namespace

int pool_before_convs(Graph& g) {
  int swapped = 0;
  for (GraphNode conv : g.nodes()) {
    if (!conv.alive() || !one_by_one_conv(g, conv)) continue;
    const std::string x = conv.input_name(0), y = conv.output_name(0);
    const auto xs = shape_of(g, x);
    if (!known_chw(xs)) continue;
    GraphNode next = sole_reader(g, y), pad(nullptr, g.raw());
    if (next.valid() && pads_nothing(g, next)) {
      pad = next;
      next = sole_reader(g, pad.output_name(0));
    }
    if (!next.valid() || !unpadded_average_pool(next)) continue;
    const std::string z = next.output_name(0);
    const auto zs = shape_of(g, z);
    if (!known_chw(zs) || zs[2] * zs[3] >= xs[2] * xs[3]) continue;
    // Pooling the Conv's input instead of its output changes the pool's
    // adds from Cout to Cin channels; the Conv saves Cout*Cin/group MACs per
    // pixel dropped.
    const auto w = conv_weight_shape(g, conv);
    const auto k = next.attr_ints("kernel_shape");
    const int64_t cin = xs[1], cout = w[0], cin_per_group = w[1];
    const int64_t saved = cout * cin_per_group * (xs[2] * xs[3] - zs[2] * zs[3]);
    const int64_t added = (cin - cout) * k[0] * k[1] * zs[2] * zs[3];
    if (saved <= added) continue;

    NewNode p("", "AveragePool");
    p.name = next.name();
    p.inputs = {x};
    p.outputs = {z + "/pooled_conv_input"};
    p.attrs_from = next.raw();
    NewNode c("", "Conv");
    c.name = conv.name();
    c.inputs = conv.input_names();
    c.inputs[0] = p.outputs[0];
    c.outputs = {z};
    c.attrs_from = conv.raw();
    std::vector<GraphNode> old = {conv};
    if (pad.valid()) old.push_back(pad);
    old.push_back(next);
    g.replace(old, {p, c});
    ++swapped;
  }
  return swapped;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
