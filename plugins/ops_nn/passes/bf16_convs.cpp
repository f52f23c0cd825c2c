// The pass cpu.bf16_convs: 2-D Convs of one group become ai.singa.cpu
// Bf16Conv (conv_bf16.hpp). Float ones (Conv, FusedConv with its activation,
// ConvAdd with its summand) only when `cpu.precision=bf16` and the CPU has
// bfloat16 dot products; bfloat16 ones whenever the CPU has them. It runs
// after the Conv fusions, which it keeps (their activation and summand ride
// in the bfloat16 primitive), and before the layout passes, so its nodes read
// and write plain NCHW, except between two of its nodes (channels-last
// there, below). A Conv with a fused MaxPool or mean stays in float32; so do
// grouped and depthwise Convs, whose few products per weight gain little
// from AMX.
#include "conv_match.hpp"
#include "../conv_bf16.hpp"
#include "../layouts.hpp"

#include <bf16_compute.hpp>
#include <value_dtype.hpp>

namespace singa {
namespace nn {

int register_bf16_conv_pass(sdk::Registrar& reg);

namespace passes {
namespace {

// Of type t and rank 4 (its dims may be symbolic: the kernel plans per run shape).
bool known_type(const Graph& g, const std::string& v, int32_t t) { return ops::value_dtype(g, v) == t && shape_of(g, v).size() == 4; }

// A constant of a float type the kernel reads.
bool float_or_bf16_constant(const Graph& g, const std::string& v, size_t rank) {
  const sdk::Tensor c = g.constant(v);
  return c.present() && (c.dtype() == SINGA_ONNX_FLOAT || c.dtype() == SINGA_ONNX_BFLOAT16) &&
         (rank == 0 || c.ndim() == int(rank));
}

bool takes(const Graph& g, const GraphNode& n, bool float_on, bool bf16_cpu) {
  const bool conv = standard_op(n, "Conv"), fused = cpu_op(n, "FusedConv"), sum = cpu_op(n, "ConvAdd");
  if (!(conv || fused || sum) || n.num_outputs() != 1 || n.num_inputs() < 2) return false;
  if (fused && (n.has_attr("pool_kernel_shape") || n.has_attr("global_average_pool"))) return false;
  const std::string x = n.input_name(0), y = n.output_name(0);
  const int32_t t = ops::value_dtype(g, x);
  if (!((t == SINGA_ONNX_FLOAT && float_on) || (t == SINGA_ONNX_BFLOAT16 && bf16_cpu))) return false;
  // Y's shape the kernel works out itself (shape inference may not know a bfloat16 Conv).
  const int32_t ty = ops::value_dtype(g, y);
  if (!known_type(g, x, t) || (ty != t && ty != 0) || n.attr_int("group", 1) != 1) return false;
  if (!float_or_bf16_constant(g, n.input_name(1), 4)) return false;
  if (n.num_inputs() > 2 && !n.input_name(2).empty() && !float_or_bf16_constant(g, n.input_name(2), 1)) return false;
  if (sum && (n.num_inputs() < 4 || !known_type(g, n.input_name(3), t))) return false;
  if (!sum && n.num_inputs() > 3) return false;
  return true;
}

// A Bf16Conv's output that only Bf16Convs read, as X or Z, stays
// channels-last between them: oneDNN's bfloat16 convolutions read and write
// that layout, and NCHW would cost a transposition out and one back in.
// Read only as X, it is stored in bfloat16 too (conv_bf16.hpp).
void keep_channels_last(Graph& g) {
  for (GraphNode n : g.nodes()) {
    if (!cpu_op(n, ops::kBf16ConvOp)) continue;
    const std::string y = n.output_name(0);
    if (y.empty() || g.is_output(y)) continue;
    const std::vector<GraphNode> readers = g.consumers(y);
    bool all = !readers.empty(), only_x = true;
    for (const GraphNode& r : readers) {
      if (!cpu_op(r, ops::kBf16ConvOp)) all = false;
      for (size_t i = 0; all && i < r.num_inputs(); ++i) {
        if (r.input_name(i) != y) continue;
        if (i != 0 && i != 3) all = false;
        if (i != 0) only_x = false;
      }
    }
    if (all) g.set_layout(y, only_x && ops::value_dtype(g, y) == SINGA_ONNX_FLOAT ? kChannelsLastBf16Layout : kChannelsLastLayout);
  }
}

int use_bf16_convs(Graph& g) {
  const bool float_on = ops::bf16_compute_on(g);
  const bool bf16_cpu = float_on || ops::cpu_has_bf16();
  if (!bf16_cpu) return 0;
  const int rewrites =
      ops::retype_nodes(g, ops::kBf16ConvOp, [&](const GraphNode& n) { return takes(g, n, float_on, bf16_cpu); });
  if (rewrites) keep_channels_last(g);
  return rewrites;
}

}  // namespace
}  // namespace passes

// Between the Conv fusions (cpu.conv_adds at 940) and the layouts
// (cpu.blocked_layout at 930): register_passes.cpp's order.
int register_bf16_conv_pass(sdk::Registrar& reg) {
  return sdk::register_graph_pass(reg, "cpu.bf16_convs", "cpu", 935, passes::use_bf16_convs) ? 1 : 0;
}

}  // namespace nn
}  // namespace singa
