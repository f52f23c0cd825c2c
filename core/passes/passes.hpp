// passes.hpp - inference graph passes run at prepare time, after the checker
// and shape inference and before kernels are chosen. Internal to
// libsinga_core; the public switch is PrepareOptions::optimize.
//
// Every pass leaves nodes it does not understand alone: nodes of other domains
// and nodes with graph attributes (If/Loop/Scan) are never rewritten, folded
// or removed, and values of non-tensor kinds are never folded.
#ifndef SINGA_CORE_PASSES_PASSES_HPP
#define SINGA_CORE_PASSES_PASSES_HPP

#include "../graph.hpp"

#include <string>

namespace singa {
namespace passes {

// How many rewrites each pass made (the tests check that a pass fired).
struct PassStats {
  int folded_constants = 0;  // nodes replaced by initializers (Shape/Size included)
  int folded_shapes = 0;     // of those, Shape/Size of statically known shapes
  int removed_dead = 0;      // nodes whose outputs nobody reads
  int conv_bn = 0;           // BatchNormalization folded into the Conv before it
  int refined_shapes = 0;    // values whose shape inference could complete after folding (not a change of the graph)
  int matmul_add = 0;        // MatMul + Add -> Gemm (or a batched MatMul with a bias row, on the CPU)
  int activations = 0;       // Relu/LeakyRelu/Clip fused into Conv or Gemm
  int layer_norms = 0;       // LayerNormalization's arithmetic -> one node
  int gelus = 0;             // GELU's arithmetic (Erf form) -> one Gelu node
  int inverted_residuals = 0;  // [1x1 Conv ->] depthwise Conv -> 1x1 Conv -> one ExpandDepthwiseProject node
  int conv_pools = 0;          // MaxPool folded into the Conv before it
  int conv_means = 0;          // GlobalAveragePool folded into the pointwise Conv before it
  int conv_mean_gemms = 0;     // such a Conv, a Flatten and a Gemm -> one ConvMeanGemm node (a classifier head)
  int matmul_scales = 0;       // Div/Mul by a constant scalar -> the MatMul's alpha
  int transposed_b = 0;        // Transpose of B's last two axes -> the MatMul's transB
  int conv_adds = 0;           // Conv + Add of a same-shape tensor -> one ConvAdd node
  int attentions = 0;          // MatMul -> Softmax -> MatMul over head views -> one Attention node
  int matmul_epilogues = 0;    // Gelu or a residual Add after a MatMul with a constant B -> the MatMul
  int blocked_values = 0;      // Conv outputs kept in 16-channel blocks for the Convs that read them
  int channels_last_values = 0;  // ExpandDepthwiseProject outputs kept channels-last for the ones that read them
  int total() const {
    return folded_constants + removed_dead + conv_bn + matmul_add + activations + layer_norms + gelus +
           inverted_residuals + conv_pools + conv_means + conv_mean_gemms + matmul_scales + transposed_b + conv_adds +
           attentions + matmul_epilogues + blocked_values + channels_last_values;
  }
};

struct PassOptions {
  // The device the graph is prepared for. Activation fusion adds attributes
  // only the CPU kernels read, so it runs only for "cpu".
  std::string device = "cpu";
  bool fold_constants = true;
  bool remove_dead = true;
  bool fuse_conv_bn = true;
  bool fuse_matmul_add = true;
  bool fuse_activations = true;
  bool fuse_layer_norm = true;  // CPU only, like the activations
  bool fuse_gelu = true;        // CPU only
  bool fuse_inverted_residuals = true;  // CPU only, after the activations
  bool fuse_conv_pools = true;          // CPU only, after the activations
  bool fuse_conv_means = true;          // CPU only, after the activations
  bool fuse_conv_mean_gemms = true;     // CPU only, after the conv means
  bool fuse_matmul_scales = true;       // CPU only, after MatMul+Add
  bool fuse_transposed_b = true;        // CPU only
  bool fuse_conv_adds = true;           // CPU only, after the inverted residuals
  bool fuse_attention = true;           // CPU only, after the MatMul scales and transposed Bs
  bool fuse_matmul_epilogues = true;    // CPU only, after MatMul+Add and the GELU fusion
  bool blocked_layout = true;           // CPU only, last
  bool channels_last_layout = true;     // CPU only, last
  // Folded results larger than this stay computed at run time: a folded
  // ConstantOfShape/Tile/Expand would otherwise sit in memory for the Rep's life.
  size_t max_folded_bytes = size_t(64) << 20;
  PassStats* stats = nullptr;  // filled when given
};

// Runs the passes in a fixed order; nodes and values stay in topological
// order with producer/consumer links consistent, unused values dropped.
void optimize(graph::Graph& g, const PassOptions& options);

// The single passes (each re-links the graph before returning).
int fold_constants(graph::Graph& g, const PassOptions& options, int* shapes_folded);
int remove_dead_nodes(graph::Graph& g);
int fuse_conv_batchnorm(graph::Graph& g);
// `batched_bias`: also fuse MatMul [..., M, K] x [K, N] + bias row for the
// CPU's MatMul kernel, which takes the row as a third input.
int fuse_matmul_add(graph::Graph& g, bool batched_bias);
int fuse_activations(graph::Graph& g);
int fuse_layer_norm(graph::Graph& g);
int fuse_gelu(graph::Graph& g);
int fuse_inverted_residuals(graph::Graph& g);
int fuse_conv_pools(graph::Graph& g);
int fuse_conv_means(graph::Graph& g);
int fuse_conv_mean_gemms(graph::Graph& g);
int fuse_matmul_scales(graph::Graph& g);
int fuse_transpose_matmuls(graph::Graph& g);
int fuse_conv_adds(graph::Graph& g);
int fuse_attention(graph::Graph& g);
int fuse_matmul_epilogues(graph::Graph& g);
// Marks Conv outputs to stay in 16-channel blocks; returns how many.
int use_blocked_layout(graph::Graph& g);
// Marks ExpandDepthwiseProject outputs that only such nodes read to stay
// channels-last (channels_last_layout.cpp); returns how many.
int use_channels_last(graph::Graph& g);

}  // namespace passes
}  // namespace singa
#endif
