// register.hpp - each source file registers what it implements.
#ifndef SINGA_CUDA_REGISTER_HPP
#define SINGA_CUDA_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace cuda {

void register_device(sdk::Registrar& reg);
void register_elementwise(sdk::Registrar& reg);
void register_blas(sdk::Registrar& reg);
void register_conv(sdk::Registrar& reg);
void register_pool(sdk::Registrar& reg);
void register_norm(sdk::Registrar& reg);
void register_shape(sdk::Registrar& reg);
void register_unary(sdk::Registrar& reg);
void register_binary(sdk::Registrar& reg);
void register_cast(sdk::Registrar& reg);
void register_reduce(sdk::Registrar& reg);
void register_movement(sdk::Registrar& reg);
void register_lrn_dropout(sdk::Registrar& reg);
void register_conv_transpose(sdk::Registrar& reg);
void register_conv_grad(sdk::Registrar& reg);
void register_grad(sdk::Registrar& reg);

// Plugin shutdown: cached device memory and idle library handles go back.
void release_device_memory();

}  // namespace cuda
}  // namespace singa

#endif
