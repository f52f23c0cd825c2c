// An inference BatchNormalization, with or without the activation after it,
// whose result only an AveragePool over whole windows (no padding, no
// ceil_mode, no dilation) or a GlobalAveragePool reads: one ai.singa.cpu
// FusedBatchNorm carrying the activation's attributes plus
// pool_kernel_shape and pool_strides, which normalizes each plane in cache
// and writes only the pooled result (batch_norm.cpp). DenseNet's
// transitions, BatchNorm -> Relu -> (1x1 Conv and 2x2/2 AveragePool swapped
// by pool_before_conv.cpp), wrote and re-read the full-size activation; its
// final BatchNorm -> Relu -> GlobalAveragePool too. Float 4-D values whose
// spatial dims are known.
#include "fuse_batch_norm_pool.hpp"
#include "conv_match.hpp"

#include <activation_match.hpp>

namespace singa {
namespace nn {
namespace passes {
namespace {

bool inference_batch_norm(const GraphNode& n) {
  return standard_op(n, "BatchNormalization") && n.num_outputs() == 1 && n.attr_int("training_mode", 0) == 0 &&
         n.attr_int("spatial", 1) == 1;
}

// The pool's window and strides when it averages whole windows of the 2-D
// value x; false otherwise.
bool whole_window_pool(const Graph& g, const GraphNode& n, const std::vector<int64_t>& xs, std::vector<int64_t>& k,
                       std::vector<int64_t>& s) {
  if (n.num_inputs() != 1 || n.num_outputs() != 1 || n.output_name(0).empty()) return false;
  if (standard_op(n, "GlobalAveragePool")) {
    k = {xs[2], xs[3]};
    s = {1, 1};
    return true;
  }
  if (!standard_op(n, "AveragePool") || n.attr_ints("kernel_shape").size() != 2) return false;
  const std::string auto_pad = n.attr_string("auto_pad", "");
  if ((!auto_pad.empty() && auto_pad != "NOTSET" && auto_pad != "VALID") || n.attr_int("ceil_mode", 0) != 0 ||
      !ints_all(n, "pads", 0, 4) || !ints_all(n, "dilations", 1, 2))
    return false;
  k = n.attr_ints("kernel_shape");
  s = n.has_attr("strides") ? n.attr_ints("strides") : std::vector<int64_t>{1, 1};
  if (s.size() != 2 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || k[0] > xs[2] || k[1] > xs[3]) return false;
  // The fused kernel's output shape must be what the graph expects.
  const auto zs = shape_of(g, n.output_name(0));
  return zs.size() == 4 && zs[2] == (xs[2] - k[0]) / s[0] + 1 && zs[3] == (xs[3] - k[1]) / s[1] + 1;
}

}  // namespace

int fuse_batch_norm_pools(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes()) {
    if (!n.alive()) continue;
    const bool plain = inference_batch_norm(n);
    if (!(plain || cpu_op(n, "FusedBatchNorm")) || n.num_outputs() != 1 || n.has_attr("pool_kernel_shape")) continue;
    const std::string x = n.input_name(0);
    const auto xs = shape_of(g, x);
    if (!float_value(g, x) || xs.size() != 4 || xs[1] <= 0 || xs[2] <= 0 || xs[3] <= 0) continue;
    std::vector<GraphNode> old = {n};
    std::vector<sdk::Attr> attrs;
    std::string y = n.output_name(0);
    std::vector<GraphNode> act;
    if (plain && ops::match_activation(g, y, act, attrs)) {
      old.insert(old.end(), act.begin(), act.end());
      y = act.back().output_name(0);
    }
    GraphNode pool = sole_reader(g, y);
    std::vector<int64_t> k, s;
    if (!pool.valid() || !whole_window_pool(g, pool, xs, k, s)) continue;
    old.push_back(pool);
    NewNode f(kCpuDomain, "FusedBatchNorm");
    f.name = n.name();
    f.opset = 1;
    f.inputs = n.input_names();
    f.outputs = {pool.output_name(0)};
    f.attrs_from = n.raw();
    f.attrs = std::move(attrs);
    f.attrs.push_back(sdk::Attr("pool_kernel_shape", k));
    f.attrs.push_back(sdk::Attr("pool_strides", s));
    g.replace(old, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
