#include "cl_runtime.hpp"

#include "programs.hpp"
#include "runtime_option.hpp"

#include <cstdlib>
#include <cstring>

namespace singa {
namespace opencl {

std::string cl_error_name(cl_int err) {
  const char* name = nullptr;
  switch (err) {
#define SINGA_CL_ERR(x) case x: name = #x; break;
    SINGA_CL_ERR(CL_DEVICE_NOT_FOUND)
    SINGA_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    SINGA_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    SINGA_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    SINGA_CL_ERR(CL_OUT_OF_RESOURCES)
    SINGA_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    SINGA_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    SINGA_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    SINGA_CL_ERR(CL_INVALID_VALUE)
    SINGA_CL_ERR(CL_INVALID_DEVICE_TYPE)
    SINGA_CL_ERR(CL_INVALID_PLATFORM)
    SINGA_CL_ERR(CL_INVALID_DEVICE)
    SINGA_CL_ERR(CL_INVALID_CONTEXT)
    SINGA_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    SINGA_CL_ERR(CL_INVALID_MEM_OBJECT)
    SINGA_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    SINGA_CL_ERR(CL_INVALID_PROGRAM)
    SINGA_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    SINGA_CL_ERR(CL_INVALID_KERNEL_NAME)
    SINGA_CL_ERR(CL_INVALID_KERNEL)
    SINGA_CL_ERR(CL_INVALID_ARG_INDEX)
    SINGA_CL_ERR(CL_INVALID_ARG_VALUE)
    SINGA_CL_ERR(CL_INVALID_ARG_SIZE)
    SINGA_CL_ERR(CL_INVALID_KERNEL_ARGS)
    SINGA_CL_ERR(CL_INVALID_WORK_DIMENSION)
    SINGA_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    SINGA_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    SINGA_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    SINGA_CL_ERR(CL_INVALID_BUFFER_SIZE)
    SINGA_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    SINGA_CL_ERR(CL_INVALID_OPERATION)
#undef SINGA_CL_ERR
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;  // the ICD loader found no platform
    default: break;
  }
  return std::string(name ? name : "OpenCL error") + " (" + std::to_string(err) + ")";
}

singa_code cl_code(cl_int err) {
  switch (err) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: return SINGA_OUT_OF_MEMORY;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
    case -1001: return SINGA_UNAVAILABLE;
    default: return SINGA_INTERNAL;
  }
}

void check_cl(cl_int err, const std::string& what) {
  if (err != CL_SUCCESS) throw sdk::Error(cl_code(err), "opencl: " + what + " failed: " + cl_error_name(err));
}

DeviceEnv::DeviceEnv() = default;

DeviceEnv::~DeviceEnv() {
  programs.reset();
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

PluginSingleton<Runtime>& runtime_holder() {
  static PluginSingleton<Runtime> holder([] { return new Runtime; });
  return holder;
}

Runtime& Runtime::instance() { return runtime_holder().get(); }

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, &s[0], nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, &s[0], nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace

void Runtime::discover() {
  if (discovered_) return;
  discovered_ = true;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    reason_ = "no OpenCL platform: the ICD loader found no installable client driver (" +
              (err != CL_SUCCESS ? cl_error_name(err) : std::string("0 platforms")) +
              "; install one, e.g. pocl-opencl-icd, or check /etc/OpenCL/vendors)";
    return;
  }
  std::vector<cl_platform_id> ps(np);
  check_cl(clGetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
  std::string names;
  for (cl_platform_id p : ps) {
    names += (names.empty() ? "" : ", ") + platform_string(p, CL_PLATFORM_NAME);
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : ds) {
      cl_bool available = CL_FALSE, compiler = CL_FALSE;
      clGetDeviceInfo(d, CL_DEVICE_AVAILABLE, sizeof(available), &available, nullptr);
      clGetDeviceInfo(d, CL_DEVICE_COMPILER_AVAILABLE, sizeof(compiler), &compiler, nullptr);
      // Kernels are built from source at run time: a device without a
      // compiler cannot run them.
      if (available && compiler) found_.emplace_back(p, d);
    }
  }
  if (found_.empty())
    reason_ = "no OpenCL device: platform(s) " + names + " offer no available device with a compiler";
}

int Runtime::count() {
  std::lock_guard<std::mutex> lock(mu_);
  discover();
  return int(found_.size());
}

const std::string& Runtime::reason() {
  std::lock_guard<std::mutex> lock(mu_);
  discover();
  return reason_;
}

DeviceEnv& Runtime::env(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  discover();
  auto it = envs_.find(id);
  if (it != envs_.end()) return *it->second;
  if (found_.empty()) throw sdk::Error(SINGA_UNAVAILABLE, "opencl: " + reason_);
  if (id < 0 || size_t(id) >= found_.size())
    throw sdk::Error(SINGA_INVALID_ARGUMENT, "opencl: device id " + std::to_string(id) + " does not exist (" +
                                                 std::to_string(found_.size()) + " device(s))");
  auto e = std::make_unique<DeviceEnv>();
  e->platform = found_[size_t(id)].first;
  e->device = found_[size_t(id)].second;
  e->name = platform_string(e->platform, CL_PLATFORM_NAME) + ": " + device_string(e->device, CL_DEVICE_NAME);
  clGetDeviceInfo(e->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(e->max_work_group), &e->max_work_group, nullptr);
  clGetDeviceInfo(e->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(e->global_mem), &e->global_mem, nullptr);
  clGetDeviceInfo(e->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(e->local_mem), &e->local_mem, nullptr);
  cl_device_type type = 0;
  clGetDeviceInfo(e->device, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
  // The runtime option opencl.gpu_kernels=1 runs the GPU variants on a CPU
  // device (to test them there).
  e->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0 && !ops::runtime_flag("opencl.gpu_kernels", false);
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, cl_context_properties(e->platform), 0};
  e->context = clCreateContext(props, 1, &e->device, nullptr, nullptr, &err);
  check_cl(err, "clCreateContext for " + e->name);
  e->queue = clCreateCommandQueue(e->context, e->device, 0, &err);
  check_cl(err, "clCreateCommandQueue for " + e->name);
  e->programs = std::make_unique<ProgramCache>(e->context, e->device);
  return *(envs_[id] = std::move(e));
}

void Runtime::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : envs_) clFinish(entry.second->queue);
  envs_.clear();
}

}  // namespace opencl
}  // namespace singa
