// registry.hpp - each source file of the ops_ml pack registers its own kernels.
#ifndef SINGA_OPS_ML_REGISTRY_HPP
#define SINGA_OPS_ML_REGISTRY_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace ml {

constexpr const char* kDomain = "ai.onnx.ml";
// The highest ai.onnx.ml opset the pack knows (onnx 1.12 defines 1..3).
constexpr int kLastOpset = 3;

// The feature types the ML estimators accept as X.
constexpr uint64_t kFeatureTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE) |
                                   sdk::bit(SINGA_ONNX_INT64) | sdk::bit(SINGA_ONNX_INT32);

void register_tree_ensembles(sdk::Registrar& reg);
void register_linear(sdk::Registrar& reg);
void register_svm(sdk::Registrar& reg);
void register_scaling(sdk::Registrar& reg);
void register_encoding(sdk::Registrar& reg);
void register_label_encoder(sdk::Registrar& reg);
void register_tree_ensemble5(sdk::Registrar& reg);

}  // namespace ml
}  // namespace ops
}  // namespace singa
#endif
