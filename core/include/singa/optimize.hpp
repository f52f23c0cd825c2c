// optimize.hpp - the model as prepare() runs it after its graph passes
// (constant and shape folding, dead-node removal, Conv+BatchNormalization,
// MatMul+Add -> Gemm, Conv/Gemm + activation, LayerNorm and GELU fusion; see
// docs/performance.md).
#ifndef SINGA_OPTIMIZE_HPP
#define SINGA_OPTIMIZE_HPP

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <string>

namespace singa {
namespace onnx {

// The optimised graph as a ModelProto (for `singa info --optimized` and for
// inspection). Fused Conv/Gemm nodes carry singa's `activation` attributes,
// which other runtimes do not read, and fused LayerNormalization (opset 17)
// and Gelu (opset 20) nodes may be newer than the opset the model imports:
// the result is for reading, not for running elsewhere. With options.optimize false the graph comes back as
// imported (checked, shape-inferred, dims bound).
::onnx::ModelProto optimized_model(const ::onnx::ModelProto& model, const PrepareOptions& options,
                                   const std::string& source = "<model>", const std::string& base_dir = "");

}  // namespace onnx
}  // namespace singa
#endif
