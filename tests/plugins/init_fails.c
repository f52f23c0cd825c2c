/* init_fails.c - a plugin whose initialisation fails after it has already
 * registered a kernel (as a device plugin does when its driver is missing):
 * the host must report the plugin's message and drop the kernel. */
#include "affine_kernel.h"

static const affine_params defaults = {1.0f, 0.0f};

SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  singa_kernel_def def;
  singa_status* st = affine_plugin_begin(host, plugin, "test_init_fails", SINGA_ABI_MAJOR, SINGA_ABI_MINOR);
  if (st) return st;
  def = affine_def("InitFailsOp", 1, 10, &defaults);
  st = host->register_kernel(plugin->handle, &def);
  if (st) return st;
  return host->status_new(SINGA_UNAVAILABLE, "test_init_fails: the accelerator driver is missing");
}
