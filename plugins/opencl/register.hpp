// register.hpp - each source file registers what it implements.
#ifndef SINGA_OPENCL_REGISTER_HPP
#define SINGA_OPENCL_REGISTER_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace opencl {

void register_device(sdk::Registrar& reg);
void register_elementwise(sdk::Registrar& reg);
void register_blas(sdk::Registrar& reg);
void register_conv(sdk::Registrar& reg);
void register_pool(sdk::Registrar& reg);
void register_reduce(sdk::Registrar& reg);
void register_norm(sdk::Registrar& reg);
void register_shape(sdk::Registrar& reg);

// Plugin shutdown: cached buffers go back, queues drain, contexts go.
void release_device_memory();

}  // namespace opencl
}  // namespace singa

#endif
