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

#include <map>
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
  int matmul_add = 0;        // MatMul + Add -> Gemm
  int layer_norms = 0;       // LayerNormalization's arithmetic -> one LayerNormalization-17
  int gelus = 0;             // GELU's arithmetic (Erf form) -> one Gelu-20
  std::map<std::string, int> plugin_passes;  // rewrites by plugin graph pass (core/graph_pass.hpp)
  int total() const {
    int plugin = 0;
    for (const auto& p : plugin_passes) plugin += p.second;
    return plugin + folded_constants + removed_dead + conv_bn + matmul_add + layer_norms + gelus;
  }
};

// The core's passes are device neutral: they rewrite into standard ONNX ops
// only. The device-specific fusions (MatMul scales and epilogues, attention,
// the Conv family, layouts) are the plugins' graph passes, which prepare runs
// after these (core/graph_pass.hpp).
struct PassOptions {
  // The device the graph is prepared for: the LayerNorm and GELU fusions
  // make standard ops newer than many models' opset, and run only where
  // that device has a kernel for them (kernel_registered).
  std::string device = "cpu";
  bool fold_constants = true;
  bool remove_dead = true;
  bool fuse_conv_bn = true;
  bool fuse_matmul_add = true;
  bool fuse_layer_norm = true;
  bool fuse_gelu = true;
  // A graph that will be written back as a model (optimized_model) keeps
  // the opsets the model imports: a fused op newer than the model's
  // ai.onnx version would not load again, so that fusion is skipped.
  bool within_model_opset = false;
  // Folded results larger than this stay computed at run time: a folded
  // ConstantOfShape/Tile/Expand would otherwise sit in memory for the Rep's life.
  size_t max_folded_bytes = size_t(64) << 20;
  // DequantizeLinear of constants stays unfolded for the device's quantized
  // passes (SINGA_PASS_PRIORITY_QUANTIZED); run_graph_passes folds the rest.
  bool keep_dequantize = false;
  PassStats* stats = nullptr;  // filled when given
};

// Runs the passes in a fixed order; nodes and values stay in topological
// order with producer/consumer links consistent, unused values dropped.
void optimize(graph::Graph& g, const PassOptions& options);

// The single passes (each re-links the graph before returning).
int fold_constants(graph::Graph& g, const PassOptions& options, int* shapes_folded);
int remove_dead_nodes(graph::Graph& g);
int fuse_conv_batchnorm(graph::Graph& g);
int fuse_matmul_add(graph::Graph& g);
// The standard ops these make: LayerNormalization-17 and Gelu-20, marked
// with that opset whatever the model imports.
constexpr int64_t kLayerNormOpset = 17;
constexpr int64_t kGeluOpset = 20;
int fuse_layer_norm(graph::Graph& g);
int fuse_gelu(graph::Graph& g);

}  // namespace passes
}  // namespace singa
#endif
