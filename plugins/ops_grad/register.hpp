// register.hpp - each source file of the ops_grad pack registers its kernels.
// The pack holds the backward kernels of the autograd rules (core/autograd),
// domain "ai.singa.grad", opset 1. Each takes the forward node's attributes.
#ifndef SINGA_OPS_GRAD_REGISTER_HPP
#define SINGA_OPS_GRAD_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace grad {

constexpr const char* kDomain = "ai.singa.grad";
constexpr uint64_t kGradTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE);

void register_activation_grads(sdk::Registrar& reg);
void register_conv_grad(sdk::Registrar& reg);
void register_conv_relu_pool_grad(sdk::Registrar& reg);
void register_pool_grads(sdk::Registrar& reg);
void register_batch_norm_grad(sdk::Registrar& reg);
void register_loss_grads(sdk::Registrar& reg);
void register_index_grads(sdk::Registrar& reg);

}  // namespace grad
}  // namespace singa
#endif
