// The ops_grad pack: backward kernels for the autograd tape.
#include "register.hpp"

SINGA_PLUGIN("ops_grad", "0.1.0", "backward kernels for training: conv, pooling, normalisation, activations, losses (CPU)") {
  using namespace singa::grad;
  register_activation_grads(reg);
  register_conv_grad(reg);
  register_conv_relu_pool_grad(reg);
  register_pool_grads(reg);
  register_batch_norm_grad(reg);
  register_loss_grads(reg);
  register_index_grads(reg);
}
