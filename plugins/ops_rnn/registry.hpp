// registry.hpp - each op's source file registers its own kernels.
#ifndef SINGA_OPS_RNN_REGISTRY_HPP
#define SINGA_OPS_RNN_REGISTRY_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace ops {
namespace rnn {

// The element types the BLAS-backed cells implement.
constexpr uint64_t kRnnTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE);

void register_rnn(sdk::Registrar& reg);
void register_gru(sdk::Registrar& reg);
void register_lstm(sdk::Registrar& reg);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
