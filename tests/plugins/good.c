/* good.c - the reference test plugin: plain C, current ABI, one kernel.
 * com.singa.test::TestScale (opset 1-10, cpu, float): y = alpha * x + beta,
 * alpha defaults to 2 and beta to 0 so that a model without attributes
 * still shows that this kernel ran. */
#include "affine_kernel.h"

static const affine_params defaults = {2.0f, 0.0f};

SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  singa_kernel_def def;
  singa_status* st = affine_plugin_begin(host, plugin, "test_good", SINGA_ABI_MAJOR, SINGA_ABI_MINOR);
  if (st) return st;
  def = affine_def("TestScale", 1, 10, &defaults);
  return host->register_kernel(plugin->handle, &def);
}
