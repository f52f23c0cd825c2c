// registry.hpp - each source file of the ops_signal pack registers its own kernels.
#ifndef SINGA_OPS_SIGNAL_REGISTRY_HPP
#define SINGA_OPS_SIGNAL_REGISTRY_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace signal {

void register_dft(sdk::Registrar& reg);      // DFT
void register_stft(sdk::Registrar& reg);     // STFT
void register_windows(sdk::Registrar& reg);  // HannWindow HammingWindow BlackmanWindow
void register_mel(sdk::Registrar& reg);      // MelWeightMatrix

}  // namespace signal
}  // namespace ops
}  // namespace singa
#endif
