// cl_runtime.hpp - the OpenCL side of the plugin: platform/device discovery
// through the ICD loader, one context and one in-order command queue per
// device id, and the error vocabulary every other file uses.
//
// Nothing here touches OpenCL before the core asks for it, so the plugin loads
// on machines without an ICD or a device; the device then reports why it is
// unavailable.
#ifndef SINGA_OPENCL_CL_RUNTIME_HPP
#define SINGA_OPENCL_CL_RUNTIME_HPP

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "plugin_singleton.hpp"
#include <CL/cl.h>

#include <singa/kernel.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace singa {
namespace opencl {

// "CL_OUT_OF_RESOURCES (-5)" and friends.
std::string cl_error_name(cl_int err);
// The singa code a failed OpenCL call maps to.
singa_code cl_code(cl_int err);
// Throws sdk::Error "opencl: <what> failed: <name>" unless err is CL_SUCCESS.
void check_cl(cl_int err, const std::string& what);

class ProgramCache;

// One usable OpenCL device: its context, its queue (in order, so that a
// buffer freed to the pool and handed out again is only touched after every
// command queued before the free) and its built programs. OpenCL API calls
// are thread-safe; the queue serialises the device's work.
struct DeviceEnv {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string name;            // "PoCL: pthread-skylake..."
  size_t max_work_group = 1;   // CL_DEVICE_MAX_WORK_GROUP_SIZE
  cl_ulong global_mem = 0;     // CL_DEVICE_GLOBAL_MEM_SIZE
  cl_ulong local_mem = 0;      // CL_DEVICE_LOCAL_MEM_SIZE
  bool is_cpu = false;         // CL_DEVICE_TYPE_CPU (PoCL's pthread device): picks kernel variants
  std::unique_ptr<ProgramCache> programs;

  DeviceEnv();
  ~DeviceEnv();
};

// The devices the ICD loader offers, found once. count() is 0 with reason()
// set when there is no platform, no device or the loader fails.
class Runtime {
 public:
  static Runtime& instance();

  int count();
  const std::string& reason();
  // The device's environment, created at first use. Throws sdk::Error
  // (UNAVAILABLE / INVALID_ARGUMENT) for an id that does not exist.
  DeviceEnv& env(int id);
  // Waits for every queue and drops the contexts (plugin shutdown).
  void shutdown();

 private:
  void discover();

  std::mutex mu_;
  bool discovered_ = false;
  std::string reason_;
  std::vector<std::pair<cl_platform_id, cl_device_id>> found_;
  std::map<int, std::unique_ptr<DeviceEnv>> envs_;
};

// Runtime::instance()'s holder: the plugin's shutdown deletes it.
PluginSingleton<Runtime>& runtime_holder();

}  // namespace opencl
}  // namespace singa

#endif
