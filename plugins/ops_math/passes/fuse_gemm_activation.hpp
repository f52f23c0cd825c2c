// fuse_gemm_activation.hpp - the ops_math pack's graph pass (ABI 1.3 graph-pass
// extension) for graphs prepared on the CPU: Gemm + activation -> FusedGemm.
// Switched off by the option pass.cpu.gemm_activations=0.
#ifndef SINGA_OPS_MATH_PASSES_FUSE_GEMM_ACTIVATION_HPP
#define SINGA_OPS_MATH_PASSES_FUSE_GEMM_ACTIVATION_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace sdk {
class Graph;  // singa/graph_pass.hpp, which only the pass's source includes
}  // namespace sdk
namespace ops {
namespace math {

constexpr const char* kGemmActivationsPass = "cpu.gemm_activations";

// Returns the number of Gemm + activation pairs fused.
int fuse_gemm_activations(sdk::Graph& g);

// Registers the pass for the "cpu" device (SINGA_PLUGIN's body).
void register_gemm_passes(sdk::Registrar& reg);

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
