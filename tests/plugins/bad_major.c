/* bad_major.c - a plugin built for the next ABI major. It registers a kernel
 * before returning success, so the tests can check that the host drops what
 * a plugin of another major registered instead of trusting its layout. */
#include "affine_kernel.h"

static const affine_params defaults = {1.0f, 0.0f};

SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  singa_kernel_def def;
  g_host = host;
  /* Skips affine_plugin_begin's host check on purpose: a plugin of another
   * major may not check at all, and the host must not rely on it. */
  plugin->abi_major = SINGA_ABI_MAJOR + 1;
  plugin->abi_minor = 0;
  plugin->name = "test_bad_major";
  plugin->version = "0.0.1";
  plugin->description = "singa test plugin built for the next ABI major";
  def = affine_def("BadMajorOp", 1, 10, &defaults);
  return host->register_kernel(plugin->handle, &def);
}
