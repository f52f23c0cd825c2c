// cpu_domain.hpp - the domain of the CPU packs' fused ops. The packs' graph
// passes (plugins/ops_nn/passes, plugins/ops_math/passes) rewrite node groups
// into ops of this domain (FusedConv, ConvAdd, FusedGemm, ...), which carry
// the attributes only these packs' kernels read; a standard ONNX op never
// carries them.
#ifndef SINGA_PLUGINS_COMMON_CPU_DOMAIN_HPP
#define SINGA_PLUGINS_COMMON_CPU_DOMAIN_HPP

namespace singa {
namespace ops {

constexpr const char* kCpuDomain = "ai.singa.cpu";

}  // namespace ops
}  // namespace singa
#endif
