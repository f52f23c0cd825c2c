// singa_cuda.so, the file the core loads: a shim that links only the CUDA
// runtime. cuBLAS, cuBLASLt and cuDNN cost about 200 MiB of resident memory
// and a tenth of a second as soon as they are mapped, which every CPU-only run
// on a machine with CUDA installed would pay. So the kernels live in
// libsinga_cuda_kernels.so beside this file, loaded only when a GPU is
// present (or SINGA_CUDA_KERNELS=1 asks for them, e.g. to see with
// `singa info --device cuda` where a model would run). Without them the shim
// registers the `cuda` device alone, which reports why it is unavailable.
#include "probe.hpp"
#include "runtime_option.hpp"

#include <singa/kernel.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using InitFn = singa_status* (*)(const singa_host_api*, singa_plugin*);

std::string g_reason;                    // why the device is unavailable
void* g_kernels = nullptr;               // the kernel library, when loaded
void (*g_kernels_shutdown)(void) = nullptr;

singa_status* unavailable() { return singa::sdk::host().status_new(SINGA_UNAVAILABLE, g_reason.c_str()); }
singa_status* count_none(void*, int32_t* count) {
  *count = 0;
  return unavailable();
}
singa_status* alloc_none(void*, int32_t, size_t, size_t, void** out) {
  *out = nullptr;
  return unavailable();
}
void free_none(void*, int32_t, void*) {}
singa_status* copy_none(void*, int32_t, void*, size_t, const void*, size_t, size_t, singa_copy_kind, void*) {
  return unavailable();
}
singa_status* memset_none(void*, int32_t, void*, size_t, int, size_t, void*) { return unavailable(); }

void shutdown() {
  if (g_kernels_shutdown) g_kernels_shutdown();
  g_kernels_shutdown = nullptr;
  if (g_kernels) dlclose(g_kernels);
  g_kernels = nullptr;
}

std::string own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_folder), &info) || !info.dli_fname) return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The runtime option cuda.kernels=1 loads the kernels without a GPU (to
// check that they load); read after plugin_preamble set the host.
bool kernels_forced() { return singa::ops::runtime_flag("cuda.kernels", false); }

}  // namespace

extern "C" SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) {
  if (singa_status* st = singa::sdk::plugin_preamble(
          host, plugin, "cuda", "0.1.0", "CUDA device; its cuBLAS/cuDNN kernels load when a GPU is present"))
    return st;
  if (host == nullptr || plugin == nullptr) return nullptr;
  std::string why;
  if (singa::cuda::probe_devices(why) > 0 || kernels_forced()) {
    const std::string path = own_folder() + "/libsinga_cuda_kernels.so";
    g_kernels = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!g_kernels) return host->status_new(SINGA_NOT_FOUND, ("cannot load " + path + ": " + dlerror()).c_str());
    auto init = reinterpret_cast<InitFn>(dlsym(g_kernels, "singa_plugin_init"));
    singa_status* st = init ? init(host, plugin)
                            : host->status_new(SINGA_NOT_FOUND, (path + " exports no singa_plugin_init").c_str());
    if (st) {  // a refused plugin is unloaded without shutdown: undo the load here
      dlclose(g_kernels);
      g_kernels = nullptr;
      return st;
    }
    if (SINGA_HAS_FIELD(plugin, singa_plugin, shutdown)) {
      g_kernels_shutdown = plugin->shutdown;
      plugin->shutdown = shutdown;
    }
    return nullptr;
  }
  g_reason = why;
  SINGA_TRY_BEGIN
  singa::sdk::Registrar reg(host, plugin->handle);
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "cuda";
  d.dl_device_type = kDLCUDA;
  d.score = 100;
  d.device_count = count_none;
  d.alloc = alloc_none;
  d.free = free_none;
  d.copy = copy_none;
  d.memset = memset_none;
  reg.device(d);
  SINGA_TRY_END
}
