// A pointwise Conv (with its fused activation, if any) whose output only a
// ReduceMean over the two spatial axes reads: the head of nets exported with
// torch's x.mean([2, 3]) instead of AdaptiveAvgPool2d (MnasNet, the keyword
// spotting CNN). Such a ReduceMean is a GlobalAveragePool (keepdims = 1), or a
// GlobalAveragePool then Flatten (keepdims = 0), so the head takes the fused
// kernels that fuse_conv_mean.cpp and fuse_conv_mean_gemm.cpp give the
// pooled form: keepdims = 1 becomes a FusedConv with global_average_pool = 1,
// and keepdims = 0 read only by a classifier Gemm becomes one ConvMeanGemm
// (the [N, M, H, W] product never stored, the Gemm's weights brought in while
// the Conv runs). The pass is done here, not by rewriting the ReduceMean into
// two standard nodes, because the value between them would have no known
// shape for the later passes.
//
// Where the Conv is the project stage of an ExpandDepthwiseProject (a net
// whose last inverted residual block feeds the head, as the keyword spotting
// CNN's does; fuse_inverted_residual.cpp runs first), the ReduceMean joins
// that node instead: its second output becomes the ReduceMean's value
// (attribute mean_keepdims as keepdims) and Y is left out, so the block's
// result is summed band by band and never stored. A classifier Gemm after a
// keepdims = 0 mean stays as it is.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

#include <algorithm>

namespace singa {
namespace nn {
namespace passes {
namespace {

// The ReduceMean reads `x` (rank 4) and averages exactly axes 2 and 3 (in any
// order, negative or not), from the attribute (opset < 18) or a constant
// second input (opset 18).
bool spatial_mean(const Graph& g, const GraphNode& r, const std::string& x) {
  if (!standard_op(r, "ReduceMean") || r.num_outputs() != 1 || r.output_name(0).empty() || r.num_inputs() < 1 ||
      r.input_name(0) != x)
    return false;
  std::vector<int64_t> axes;
  if (r.num_inputs() >= 2 && !r.input_name(1).empty()) {
    sdk::Tensor a = g.constant(r.input_name(1));
    if (!a.present() || a.dtype() != SINGA_ONNX_INT64 || a.ndim() != 1) return false;
    axes.assign(a.data<int64_t>(), a.data<int64_t>() + a.numel());
  } else {
    axes = r.attr_ints("axes");
  }
  // No axes means every axis (or none with noop_with_empty_axes): not this case.
  if (axes.size() != 2) return false;
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes[0] == 2 && axes[1] == 3;
}

// Inverted residual blocks whose result only a spatial ReduceMean reads.
int fuse_block_reduce_means(Graph& g) {
  int fused = 0;
  for (GraphNode b : g.nodes()) {
    if (!b.alive() || !cpu_op(b, "ExpandDepthwiseProject") || b.num_outputs() != 1 || b.output_name(0).empty() ||
        b.num_inputs() < 6 || b.input_name(5).empty())  // W2: a project stage
      continue;
    const std::string y = b.output_name(0);
    GraphNode mean = sole_reader(g, y);
    if (!mean.valid() || !spatial_mean(g, mean, y)) continue;
    NewNode f(kCpuDomain, "ExpandDepthwiseProject");
    f.name = b.name();
    f.opset = 1;
    f.inputs = b.input_names();
    f.attrs_from = b.raw();
    f.attrs.push_back(sdk::Attr("mean_keepdims", int64_t(mean.attr_int("keepdims", 1) != 0 ? 1 : 0)));
    f.outputs = {std::string(), mean.output_name(0)};
    g.replace({b, mean}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace

int fuse_conv_reduce_means(Graph& g) {
  int fused = fuse_block_reduce_means(g);
  for (GraphNode conv : g.nodes()) {
    if (!conv.alive() || !pointwise_conv(g, conv) || conv.has_attr("pool_kernel_shape") ||
        conv.has_attr("global_average_pool") || conv.num_outputs() != 1)
      continue;
    const std::string y = conv.output_name(0);
    const auto ys = shape_of(g, y);
    if (ys.size() != 4 || ys[1] <= 0) continue;
    GraphNode mean = sole_reader(g, y);
    if (!mean.valid() || !spatial_mean(g, mean, y)) continue;
    NewNode f(kCpuDomain, "FusedConv");
    f.name = conv.name();
    f.opset = 1;
    f.inputs = conv.input_names();
    f.attrs_from = conv.raw();
    f.attrs.push_back(sdk::Attr("global_average_pool", 1));
    if (mean.attr_int("keepdims", 1) != 0) {
      f.outputs = {mean.output_name(0)};
      g.replace({conv, mean}, {f});
      ++fused;
      continue;
    }
    GraphNode gemm = sole_reader(g, mean.output_name(0));
    if (!gemm.valid() || !classifier_gemm(g, gemm, mean.output_name(0), ys[1])) continue;
    f.op_type = "ConvMeanGemm";
    f.inputs.resize(3);
    for (size_t k = 1; k < gemm.num_inputs(); ++k)
      if (!gemm.input_name(k).empty()) f.inputs.push_back(gemm.input_name(k));
    f.outputs = {gemm.output_name(0)};
    f.attrs.push_back(sdk::Attr("transB", gemm.attr_int("transB", 0)));
    g.replace({conv, mean, gemm}, {f});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
