// The OpenCL plugin's one exported symbol. Written out instead of using
// SINGA_PLUGIN because it also sets `shutdown`, to hand cached buffers and
// contexts back before the plugin (and the ICD behind it) is unloaded.
#include "register.hpp"

namespace {

void shutdown() { singa::opencl::release_device_memory(); }

}  // namespace

extern "C" SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  if (singa_status* st = singa::sdk::plugin_preamble(host, plugin, "opencl", "0.1.0",
                                                      "OpenCL device through the ICD loader (caching buffer pool) with "
                                                      "its own float32 kernels"))
    return st;
  if (host == nullptr || plugin == nullptr) return nullptr;
  SINGA_TRY_BEGIN
  if (SINGA_HAS_FIELD(plugin, singa_plugin, shutdown)) plugin->shutdown = shutdown;
  singa::sdk::Registrar reg(host, plugin->handle);
  singa::opencl::register_device(reg);
  singa::opencl::register_elementwise(reg);
  singa::opencl::register_blas(reg);
  singa::opencl::register_conv(reg);
  singa::opencl::register_pool(reg);
  singa::opencl::register_reduce(reg);
  singa::opencl::register_norm(reg);
  singa::opencl::register_shape(reg);
  SINGA_TRY_END
}
