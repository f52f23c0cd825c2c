// Conv (with its fused activation, if any) followed by a MaxPool that alone
// reads its output: the MaxPool's window moves onto the Conv as attributes
// that only singa's CPU Conv kernel reads (pool_kernel_shape, pool_strides,
// pool_pads, pool_ceil_mode), and the Conv writes the pooled result. Where
// oneDNN runs the convolution, each part pools its rows while they are still
// in oneDNN's 16-channel blocks, and only the pooled rows (a quarter of the
// conv output for 2x2 or 3x3 stride-2 windows) go back to NCHW
// (plugins/ops_nn/conv_dnnl.cpp); elsewhere the kernel convolves into a
// buffer and runs MaxPool's own 2-D loop. Runs after the activation fusion
// (a Relu/LeakyRelu between them is already inside the Conv); CPU only;
// float 2-D Convs and MaxPools without Indices, dilation or auto_pad.
#include "conv_patterns.hpp"
#include "graph_edit.hpp"
#include "passes.hpp"

namespace singa {
namespace passes {
namespace {

bool plain_max_pool(const graph::Node& n) {
  if (!plain_op(n, "MaxPool", 1) || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const auto* k = find_attr(n, "kernel_shape");
  if (!k || k->ints_size() != 2) return false;
  const auto* auto_pad = find_attr(n, "auto_pad");
  if (auto_pad && auto_pad->s() != "NOTSET" && !auto_pad->s().empty()) return false;
  const auto* order = find_attr(n, "storage_order");
  if (order && order->i() != 0) return false;
  const auto* pads = find_attr(n, "pads");
  const auto* strides = find_attr(n, "strides");
  return ints_all(find_attr(n, "dilations"), 1, 2) && (!pads || pads->ints_size() == 4) &&
         (!strides || strides->ints_size() == 2);
}

void copy_as(const graph::Node& from, const char* name, ::onnx::NodeProto& to, const std::string& as) {
  if (const auto* a = find_attr(from, name)) add_renamed_attr(to, *a, as);
}

}  // namespace

int fuse_conv_pools(graph::Graph& g) {
  std::vector<bool> dead(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    graph::Node& conv = g.nodes[i];
    if (dead[i] || !plain_conv(g, conv) || find_attr(conv, "pool_kernel_shape")) continue;
    const auto& out = g.values[size_t(conv.outputs[0])];
    if (!out.rank_known || out.dims.size() != 4) continue;
    graph::Node* pool = sole_reader(g, conv.outputs[0], "MaxPool", 1);
    if (!pool || !plain_max_pool(*pool)) continue;
    ::onnx::NodeProto& p = conv.proto;
    copy_as(*pool, "kernel_shape", p, "pool_kernel_shape");
    copy_as(*pool, "strides", p, "pool_strides");
    copy_as(*pool, "pads", p, "pool_pads");
    copy_as(*pool, "ceil_mode", p, "pool_ceil_mode");
    absorb_reader(g, i, index_of(g, *pool), "Conv+MaxPool", dead);
    ++fused;
  }
  if (fused) compact(g, dead);
  return fused;
}

}  // namespace passes
}  // namespace singa
