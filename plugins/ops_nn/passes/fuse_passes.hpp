// fuse_passes.hpp - the ops_nn pack's graph passes (ABI 1.3 graph-pass
// extension): after the core's device-neutral passes, they rewrite Conv
// groups of a graph prepared for the CPU into ops of the ai.singa.cpu domain
// that this pack's kernels run (FusedConv, ConvAdd, ConvMeanGemm,
// ExpandDepthwiseProject), then choose their layouts. Each returns its
// number of rewrites; each is switched off by the option pass.NAME=0 under
// the name register_graph_passes gives it.
#ifndef SINGA_OPS_NN_PASSES_FUSE_PASSES_HPP
#define SINGA_OPS_NN_PASSES_FUSE_PASSES_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace nn {
namespace passes {

// Pass names, as the option pass.NAME=0 spells them.
constexpr const char* kConvActivations = "cpu.conv_activations";

int fuse_qdq_convs(sdk::Graph& g);          // Conv of DequantizeLinear'd 8-bit operands [+ Relu] (QdqConv)
int fuse_qdq_elementwise(sdk::Graph& g);    // Q(Relu?(DQ(x))), Q(Relu?(DQ(a) + DQ(b))) (QdqRequantize, QdqAdd)
int use_qdq_channels_last(sdk::Graph& g);   // channels-last between those 8-bit nodes
int fuse_dynq_convs(sdk::Graph& g);         // ConvInteger -> Cast -> Mul [-> Add] [-> Relu] (QdqConv, float out)
int fuse_glus(sdk::Graph& g);               // Split -> Sigmoid -> Mul over the halves (Glu)
int fuse_conv_activations(sdk::Graph& g);   // Conv/ConvAdd + activation (activation_match.hpp)
int fuse_squeeze_excites(sdk::Graph& g);    // Mul by a per-channel [Hard]Sigmoid gate
int fuse_inverted_residuals(sdk::Graph& g); // [expand ->] depthwise -> project [+ skip Add]
int fuse_conv_pools(sdk::Graph& g);         // Conv + MaxPool
int fuse_conv_means(sdk::Graph& g);         // pointwise Conv + GlobalAveragePool
int fuse_conv_mean_gemms(sdk::Graph& g);    // ... + Flatten + Gemm
int fuse_conv_reduce_means(sdk::Graph& g);  // pointwise Conv + ReduceMean over H, W [+ Gemm]
// The Gemm reads `a` ([N, M]) and computes what ConvMeanGemm's classifier does (fuse_conv_mean_gemm.cpp).
bool classifier_gemm(const sdk::Graph& g, const sdk::GraphNode& gemm, const std::string& a, int64_t M);
int fuse_conv_adds(sdk::Graph& g);          // Conv + residual Add [+ activation]
int use_blocked_layout(sdk::Graph& g);      // 16-channel blocks between Convs
int use_channels_last(sdk::Graph& g);       // channels-last between ExpandDepthwiseProjects

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
