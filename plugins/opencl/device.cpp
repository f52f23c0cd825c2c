// The "opencl" device: cl_mem buffers from the caching pool, blocking copies
// and fills on the device's in-order queue (the ABI makes NULL-stream calls
// synchronous), and memory info. The DLTensor data pointer of an opencl
// tensor is its cl_mem; byte_offset says where the tensor starts inside it.
#include "allocator.hpp"
#include "register.hpp"

#include <vector>

namespace singa {
namespace opencl {

namespace {

singa_status* status(singa_code code, const std::string& msg) { return sdk::host().status_new(code, msg.c_str()); }

singa_status* device_count(void*, int32_t* count) {
  *count = 0;
  SINGA_TRY_BEGIN
  Runtime& rt = Runtime::instance();
  int n = rt.count();
  if (n <= 0) return status(SINGA_UNAVAILABLE, "opencl: " + rt.reason());
  *count = n;
  SINGA_TRY_END
}

singa_status* device_alloc(void*, int32_t id, size_t bytes, size_t /*alignment: buffers are aligned by OpenCL*/,
                           void** out) {
  SINGA_TRY_BEGIN
  *out = nullptr;
  *out = buffer_pool().alloc(id, bytes);
  SINGA_TRY_END
}

void device_free(void*, int32_t id, void* ptr) {
  try {
    if (!buffer_pool().free(id, static_cast<cl_mem>(ptr)))
      sdk::host().log(SINGA_LOG_WARNING, ("opencl: free of a buffer device " + std::to_string(id) +
                                          " did not allocate (ignored)").c_str());
  } catch (const std::exception& e) {
    sdk::host().log(SINGA_LOG_WARNING, (std::string("opencl: free failed: ") + e.what()).c_str());
  }
}

// The device whose queue handles a buffer: its owner when known.
int queue_of(cl_mem mem, int fallback) {
  int id = buffer_pool().owner(mem);
  return id >= 0 ? id : fallback;
}

singa_status* device_copy(void*, int32_t id, void* dst, size_t dst_off, const void* src, size_t src_off, size_t bytes,
                          singa_copy_kind kind, void*) {
  SINGA_TRY_BEGIN
  if (bytes == 0) return nullptr;
  if (!dst || !src) return status(SINGA_INVALID_ARGUMENT, "opencl: copy with a null pointer");
  const std::string size = std::to_string(bytes) + " bytes";
  switch (kind) {
    case SINGA_COPY_HOST_TO_DEVICE: {
      cl_mem d = static_cast<cl_mem>(dst);
      DeviceEnv& env = Runtime::instance().env(queue_of(d, id));
      check_cl(clEnqueueWriteBuffer(env.queue, d, CL_TRUE, dst_off, bytes, static_cast<const char*>(src) + src_off, 0,
                                    nullptr, nullptr),
               "host-to-device copy of " + size);
      return nullptr;
    }
    case SINGA_COPY_DEVICE_TO_HOST: {
      cl_mem s = static_cast<cl_mem>(const_cast<void*>(src));
      DeviceEnv& env = Runtime::instance().env(queue_of(s, id));
      check_cl(clEnqueueReadBuffer(env.queue, s, CL_TRUE, src_off, bytes, static_cast<char*>(dst) + dst_off, 0, nullptr,
                                   nullptr),
               "device-to-host copy of " + size);
      return nullptr;
    }
    case SINGA_COPY_DEVICE_TO_DEVICE: {
      cl_mem s = static_cast<cl_mem>(const_cast<void*>(src)), d = static_cast<cl_mem>(dst);
      const int sid = queue_of(s, id), did = queue_of(d, id);
      if (sid == did) {
        DeviceEnv& env = Runtime::instance().env(did);
        check_cl(clEnqueueCopyBuffer(env.queue, s, d, src_off, dst_off, bytes, 0, nullptr, nullptr),
                 "device-to-device copy of " + size);
        check_cl(clFinish(env.queue), "device-to-device copy of " + size + " (finishing)");
        return nullptr;
      }
      // Buffers of two contexts: through the host.
      std::vector<char> staging(bytes);
      check_cl(clEnqueueReadBuffer(Runtime::instance().env(sid).queue, s, CL_TRUE, src_off, bytes, staging.data(), 0,
                                   nullptr, nullptr),
               "device-to-device copy of " + size + " (reading device " + std::to_string(sid) + ")");
      check_cl(clEnqueueWriteBuffer(Runtime::instance().env(did).queue, d, CL_TRUE, dst_off, bytes, staging.data(), 0,
                                    nullptr, nullptr),
               "device-to-device copy of " + size + " (writing device " + std::to_string(did) + ")");
      return nullptr;
    }
    default: return status(SINGA_INVALID_ARGUMENT, "opencl: unknown copy kind " + std::to_string(int(kind)));
  }
  SINGA_TRY_END
}

singa_status* device_memset(void*, int32_t id, void* ptr, size_t off, int value, size_t bytes, void*) {
  SINGA_TRY_BEGIN
  if (bytes == 0) return nullptr;
  if (!ptr) return status(SINGA_INVALID_ARGUMENT, "opencl: memset of a null pointer");
  cl_mem m = static_cast<cl_mem>(ptr);
  DeviceEnv& env = Runtime::instance().env(queue_of(m, id));
  const cl_uchar pattern = cl_uchar(value);
  check_cl(clEnqueueFillBuffer(env.queue, m, &pattern, 1, off, bytes, 0, nullptr, nullptr),
           "memset of " + std::to_string(bytes) + " bytes");
  check_cl(clFinish(env.queue), "memset (finishing)");
  SINGA_TRY_END
}

singa_status* device_synchronize(void*, int32_t id, void*) {
  SINGA_TRY_BEGIN
  check_cl(clFinish(Runtime::instance().env(id).queue), "clFinish");
  SINGA_TRY_END
}

singa_status* device_memory_info(void*, int32_t id, size_t* free_bytes, size_t* total_bytes) {
  SINGA_TRY_BEGIN
  // OpenCL has no query for free memory: the total less what this process
  // holds in live buffers (cached ones are free for its tensors).
  DeviceEnv& env = Runtime::instance().env(id);
  const size_t total = size_t(env.global_mem), live = buffer_pool().live_bytes(id);
  if (free_bytes) *free_bytes = total > live ? total - live : 0;
  if (total_bytes) *total_bytes = total;
  SINGA_TRY_END
}

}  // namespace

void register_device(sdk::Registrar& reg) {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "opencl";
  d.dl_device_type = kDLOpenCL;
  d.score = 100;
  d.device_count = device_count;
  d.alloc = device_alloc;
  d.free = device_free;
  d.copy = device_copy;
  d.memset = device_memset;
  d.synchronize = device_synchronize;
  d.memory_info = device_memory_info;
  reg.device(d);
}

void release_device_memory() {
  if (BufferPool* pool = buffer_pool_holder().if_created()) pool->release_cache();
  if (Runtime* rt = runtime_holder().if_created()) rt->shutdown();
  buffer_pool_holder().destroy();
  runtime_holder().destroy();
}

}  // namespace opencl
}  // namespace singa
