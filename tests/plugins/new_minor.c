/* new_minor.c - a plugin from a newer ABI minor (SINGA_ABI_MINOR + 5) whose
 * structs have grown fields this host has never heard of.
 *
 * It passes definitions larger than the host's, with struct_size telling the
 * truth; the host must read its own prefix and ignore the rest. In the other
 * direction it writes a field of singa_plugin that the host's struct lacks
 * only when the host's struct_size says there is room, as every newer plugin
 * must.
 *
 * com.singa.test::NewMinorOp (opset 1-10, cpu, float): y = 3 * x - 1.
 * device "test_new_device": host memory. */
#define _POSIX_C_SOURCE 200112L
#include "host_memory_device.h"

/* What the kernel and device definitions and singa_plugin look like five
 * minors from now, as far as this test is concerned. */
typedef struct future_kernel_def {
  singa_kernel_def base;
  uint64_t future_flags;
  singa_status* (*future_hook)(void* state, void* extension);
} future_kernel_def;

typedef struct future_device_def {
  singa_device_def base;
  singa_status* (*future_event_create)(void* self, int32_t id, void** event);
  int64_t future_capabilities;
} future_device_def;

typedef struct future_plugin {
  singa_plugin base;
  const char* homepage;
} future_plugin;

static const affine_params defaults = {3.0f, -1.0f};

static singa_status* future_hook(void* state, void* extension) {
  (void)state; (void)extension;
  return g_host->status_new(SINGA_INTERNAL, "new_minor: the host called a hook it cannot know");
}

static singa_status* future_event_create(void* self, int32_t id, void** event) {
  (void)self; (void)id; (void)event;
  return g_host->status_new(SINGA_INTERNAL, "new_minor: the host called a callback it cannot know");
}

SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  future_kernel_def def;
  future_device_def dev;
  singa_status* st = affine_plugin_begin(host, plugin, "test_new_minor", SINGA_ABI_MAJOR, SINGA_ABI_MINOR + 5);
  if (st) return st;
  if (SINGA_HAS_FIELD(plugin, future_plugin, homepage)) ((future_plugin*)plugin)->homepage = "https://example.invalid";

  memset(&def, 0, sizeof def);
  def.base = affine_def("NewMinorOp", 1, 10, &defaults);
  def.base.struct_size = sizeof def;
  def.future_flags = ~(uint64_t)0;
  def.future_hook = future_hook;
  st = host->register_kernel(plugin->handle, &def.base);
  if (st) return st;

  memset(&dev, 0, sizeof dev);
  dev.base = host_memory_device("test_new_device");
  dev.base.struct_size = sizeof dev;
  dev.future_event_create = future_event_create;
  dev.future_capabilities = -1;
  return host->register_device(plugin->handle, &dev.base);
}
