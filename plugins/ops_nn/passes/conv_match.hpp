// conv_match.hpp - tests on the graph (sdk::Graph, ABI 1.3) shared by the
// ops_nn pack's graph passes: which Convs its fused kernels take, and the
// names of the CPU domain's fused ops they produce.
#ifndef SINGA_OPS_NN_PASSES_CONV_MATCH_HPP
#define SINGA_OPS_NN_PASSES_CONV_MATCH_HPP

#include <cpu_domain.hpp>
#include <singa/graph_pass.hpp>

#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace passes {

using sdk::Graph;
using sdk::GraphNode;
using sdk::NewNode;

// The domain of the CPU pack's fused ops. A standard Conv never carries the
// fused attributes; the op that does is FusedConv (or ConvAdd, ConvMeanGemm,
// ExpandDepthwiseProject), which only this pack's kernels run.
using ops::kCpuDomain;

// A node of the standard domain of type `op`.
bool standard_op(const GraphNode& n, const char* op);
// A node of the CPU domain of type `op`.
bool cpu_op(const GraphNode& n, const char* op);
// A Conv the passes may extend: a standard Conv or an ai.singa.cpu FusedConv.
bool conv_like(const GraphNode& n);

// The value's element type is float.
bool float_value(const Graph& g, const std::string& v);
// The value's static shape (empty when the rank is unknown).
std::vector<int64_t> shape_of(const Graph& g, const std::string& v);
// The value has rank 4 and all its dims known.
bool known_4d(const Graph& g, const std::string& v);

// The float constant at input `slot` of `n` (an absent Tensor otherwise).
sdk::Tensor float_constant(const Graph& g, const GraphNode& n, size_t slot);
// The Conv's weight shape, when the weights are a float constant of rank 4 (else empty).
std::vector<int64_t> conv_weight_shape(const Graph& g, const GraphNode& n);

// An INTS attribute absent, or holding `count` values all `want`.
bool ints_all(const GraphNode& n, const char* name, int64_t want, size_t count);

// A conv_like float Conv with one output, constant weights of rank 4, a
// constant bias if any, no auto_pad and no dilation: the common ground of
// the fusable Convs.
bool plain_conv(const Graph& g, const GraphNode& n);
// A plain_conv with a 1x1 kernel, no padding, stride 1 and one group.
bool pointwise_conv(const Graph& g, const GraphNode& n);
// A plain 3x3 stride-1 Conv of one group with at most 32 outputs on a plane
// of at least 64x64 pixels, no fused pool and no summand, that the NCHW Winograd kernel (winograd_f32.hpp)
// takes: U-Net's 16- and 32-channel layers on large planes, where oneDNN's
// blocked code ran at a third of the Winograd kernel's speed. It stays off
// the blocked layout (blocked_layout.cpp), which would send it to oneDNN.
bool winograd_thin_conv(const Graph& g, const GraphNode& n);
// The value is [N, c, H, W] with c known.
bool has_channels(const Graph& g, const std::string& v, int64_t c);
// Two values of one 4-D shape, known but for a batch unknown on both (an
// Add of them broadcasts nothing).
bool same_4d_shape(const Graph& g, const std::string& a, const std::string& b);

// The only reader of `value` when it is not a graph output (else an invalid node).
GraphNode sole_reader(const Graph& g, const std::string& value);

// Whether the node carries a fused activation (activation attribute).
bool has_activation(const GraphNode& n);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
