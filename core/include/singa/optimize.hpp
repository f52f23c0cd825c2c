// optimize.hpp - the model as prepare() runs it after its graph passes
// (the core's folding and standard-op fusions, then the target device's
// plugin passes; see docs/performance.md).
#ifndef SINGA_OPTIMIZE_HPP
#define SINGA_OPTIMIZE_HPP

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <string>

namespace singa {
namespace onnx {

// The optimised graph as a ModelProto (for `singa info --optimized` and for
// inspection). Fused nodes are ops of singa's own domains (ai.singa.cpu),
// imported so that singa loads the result again; other runtimes do not know
// them. The LayerNorm and GELU fusions are left out where the model imports
// an ai.onnx opset older than the op's (17, 20). With options.optimize false
// the graph comes back as imported (checked, shape-inferred, dims bound).
::onnx::ModelProto optimized_model(const ::onnx::ModelProto& model, const PrepareOptions& options,
                                   const std::string& source = "<model>", const std::string& base_dir = "");

}  // namespace onnx
}  // namespace singa
#endif
