// The CUDA plugin's one exported symbol. Written out instead of using
// SINGA_PLUGIN because this plugin also sets `shutdown`, to hand cached
// device memory and library handles back before it is unloaded.
#include "handles.hpp"
#include "register.hpp"

namespace {

void shutdown() {
  singa::cuda::release_device_memory();
  singa::cuda::cublas_pool().destroy_all();
  singa::cuda::cudnn_pool().destroy_all();
}

}  // namespace

extern "C" SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  if (singa_status* st = singa::sdk::plugin_preamble(host, plugin, "cuda", "0.1.0",
                                                      "CUDA device (caching allocator, streams) with cuBLAS/cuDNN kernels"))
    return st;
  if (host == nullptr || plugin == nullptr) return nullptr;
  SINGA_TRY_BEGIN
  if (SINGA_HAS_FIELD(plugin, singa_plugin, shutdown)) plugin->shutdown = shutdown;
  singa::sdk::Registrar reg(host, plugin->handle);
  singa::cuda::register_device(reg);
  singa::cuda::register_elementwise(reg);
  singa::cuda::register_blas(reg);
  singa::cuda::register_conv(reg);
  singa::cuda::register_pool(reg);
  singa::cuda::register_norm(reg);
  singa::cuda::register_shape(reg);
  singa::cuda::register_unary(reg);
  singa::cuda::register_binary(reg);
  singa::cuda::register_cast(reg);
  singa::cuda::register_reduce(reg);
  singa::cuda::register_movement(reg);
  singa::cuda::register_lrn_dropout(reg);
  singa::cuda::register_conv_transpose(reg);
  singa::cuda::register_conv_grad(reg);
  singa::cuda::register_grad(reg);
  SINGA_TRY_END
}
