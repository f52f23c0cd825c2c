/* old_minor.c - a plugin from an older ABI minor, before `infer`, `gradient`
 * and `cpu_inputs_mask` were appended to singa_kernel_def and before the
 * optional callbacks were appended to singa_device_def.
 *
 * Its definitions declare the shorter struct_size. The bytes past it are
 * filled with values that must never be used (a plugin's stack holds anything
 * there), so a host that reads beyond struct_size gets caught by the tests:
 * they expect those fields to take their defaults (NULL / 0).
 *
 * com.singa.test::OldMinorOp (opset 1-10, cpu, float): y = x + 1.
 * device "test_old_device": host memory, no optional callbacks. */
#define _POSIX_C_SOURCE 200112L
#include "host_memory_device.h"

static const affine_params defaults = {1.0f, 1.0f};

static singa_status* poison_infer(void* user, const singa_node* node, const singa_value_info* in, size_t num_inputs,
                                  singa_value_info* out, size_t num_outputs) {
  (void)user; (void)node; (void)in; (void)num_inputs; (void)out; (void)num_outputs;
  return g_host->status_new(SINGA_INTERNAL, "old_minor: the host called `infer`, which lies past struct_size");
}

static singa_status* poison_backward(void* state, singa_kernel_context* ctx) {
  (void)state; (void)ctx;
  return g_host->status_new(SINGA_INTERNAL, "old_minor: the host used `gradient`, which lies past struct_size");
}

static const singa_gradient_def poison_gradient = {sizeof(singa_gradient_def), poison_backward};

static singa_status* poison_stream_create(void* self, int32_t id, void** stream) {
  (void)self; (void)id; (void)stream;
  return g_host->status_new(SINGA_INTERNAL, "old_minor: the host called `stream_create`, which lies past struct_size");
}

static void poison_parallel_for(void* self, int64_t n, int64_t grain, singa_parallel_fn fn, void* user) {
  /* Does no work, so results computed through it would be wrong. */
  (void)self; (void)n; (void)grain; (void)fn; (void)user;
}

static int32_t poison_num_threads(void* self) {
  (void)self;
  return -12345;
}

SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  singa_kernel_def def;
  singa_device_def dev;
  singa_status* st = affine_plugin_begin(host, plugin, "test_old_minor", SINGA_ABI_MAJOR, SINGA_ABI_MINOR);
  if (st) return st;

  def = affine_def("OldMinorOp", 1, 10, &defaults);
  def.struct_size = offsetof(singa_kernel_def, infer);
  def.infer = poison_infer;
  def.gradient = &poison_gradient;
  def.cpu_inputs_mask = ~(uint64_t)0;
  st = host->register_kernel(plugin->handle, &def);
  if (st) return st;

  dev = host_memory_device("test_old_device");
  dev.struct_size = offsetof(singa_device_def, stream_create);
  dev.stream_create = poison_stream_create;
  dev.parallel_for = poison_parallel_for;
  dev.num_threads = poison_num_threads;
  return host->register_device(plugin->handle, &dev);
}
