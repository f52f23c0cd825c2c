// The "cuda" device: memory from the caching pool, copies and memsets on the
// caller's stream (synchronous on the NULL stream, as the ABI asks), streams,
// events (ABI 1.4) and memory info. Nothing here touches CUDA until the core calls in, so the
// plugin loads on machines without a GPU or a driver; device_count then says
// why the device is unavailable.
#include "allocator.hpp"
#include "cuda_util.hpp"
#include "probe.hpp"
#include "register.hpp"
#include "runtime_option.hpp"

#include <cstdlib>
#include <cstring>

namespace singa {
namespace cuda {

namespace {

CachingAllocator& allocator() {
  static auto* a = [] {
    return new CachingAllocator(ops::runtime_flag("cuda.cache", true));  // runtime option, read at first use
  }();
  return *a;
}

singa_status* status(singa_code code, const std::string& msg) { return sdk::host().status_new(code, msg.c_str()); }
singa_status* status(cudaError_t err, const std::string& what) { return status(cuda_code(err), cuda_message(err, what)); }

// Finishes an operation queued on `stream`: the ABI makes NULL-stream calls synchronous.
singa_status* finish(cudaStream_t stream, const std::string& what) {
  if (stream) return nullptr;
  cudaError_t err = cudaStreamSynchronize(nullptr);
  return err == cudaSuccess ? nullptr : status(err, what + " (synchronising)");
}

singa_status* device_count(void*, int32_t* count) {
  std::string why;
  *count = probe_devices(why);
  return *count > 0 ? nullptr : status(SINGA_UNAVAILABLE, why);
}

singa_status* device_alloc(void*, int32_t id, size_t bytes, size_t alignment, void** out) {
  SINGA_TRY_BEGIN
  *out = nullptr;
  *out = allocator().alloc(id, bytes, alignment);
  SINGA_TRY_END
}

void device_free(void*, int32_t id, void* ptr) {
  try {
    if (!allocator().free(id, ptr))
      sdk::host().log(SINGA_LOG_WARNING, ("cuda: free of a pointer this device did not allocate on device " +
                                          std::to_string(id) + " (ignored)").c_str());
  } catch (const std::exception& e) {
    sdk::host().log(SINGA_LOG_WARNING, (std::string("cuda: free failed: ") + e.what()).c_str());
  }
}

cudaMemcpyKind memcpy_kind(singa_copy_kind kind) {
  switch (kind) {
    case SINGA_COPY_HOST_TO_DEVICE: return cudaMemcpyHostToDevice;
    case SINGA_COPY_DEVICE_TO_HOST: return cudaMemcpyDeviceToHost;
    // With unified addressing the runtime finds both devices of a
    // device-to-device copy (the core copies between ids of this device too).
    default: return cudaMemcpyDefault;
  }
}

const char* kind_name(singa_copy_kind kind) {
  switch (kind) {
    case SINGA_COPY_HOST_TO_DEVICE: return "host-to-device";
    case SINGA_COPY_DEVICE_TO_HOST: return "device-to-host";
    case SINGA_COPY_DEVICE_TO_DEVICE: return "device-to-device";
    default: return "unknown";
  }
}

singa_status* device_copy(void*, int32_t id, void* dst, size_t dst_off, const void* src, size_t src_off, size_t bytes,
                          singa_copy_kind kind, void* stream) {
  SINGA_TRY_BEGIN
  if (bytes == 0) return nullptr;
  if (kind != SINGA_COPY_HOST_TO_DEVICE && kind != SINGA_COPY_DEVICE_TO_HOST && kind != SINGA_COPY_DEVICE_TO_DEVICE)
    return status(SINGA_INVALID_ARGUMENT, "cuda: unknown copy kind " + std::to_string(int(kind)));
  if (!dst || !src) return status(SINGA_INVALID_ARGUMENT, "cuda: copy with a null pointer");
  DeviceGuard guard(id);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  std::string what = std::string("cudaMemcpyAsync ") + kind_name(kind) + " of " + std::to_string(bytes) + " bytes";
  cudaError_t err = cudaMemcpyAsync(static_cast<char*>(dst) + dst_off, static_cast<const char*>(src) + src_off, bytes,
                                    memcpy_kind(kind), s);
  if (err != cudaSuccess) return status(err, what);
  return finish(s, what);
  SINGA_TRY_END
}

singa_status* device_memset(void*, int32_t id, void* ptr, size_t off, int value, size_t bytes, void* stream) {
  SINGA_TRY_BEGIN
  if (bytes == 0) return nullptr;
  if (!ptr) return status(SINGA_INVALID_ARGUMENT, "cuda: memset of a null pointer");
  DeviceGuard guard(id);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  std::string what = "cudaMemsetAsync of " + std::to_string(bytes) + " bytes";
  cudaError_t err = cudaMemsetAsync(static_cast<char*>(ptr) + off, value, bytes, s);
  if (err != cudaSuccess) return status(err, what);
  return finish(s, what);
  SINGA_TRY_END
}

singa_status* device_synchronize(void*, int32_t id, void* stream) {
  SINGA_TRY_BEGIN
  DeviceGuard guard(id);
  // NULL means "everything queued on this device", not only the legacy stream.
  cudaError_t err = stream ? cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) : cudaDeviceSynchronize();
  if (err != cudaSuccess) return status(err, stream ? "cudaStreamSynchronize" : "cudaDeviceSynchronize");
  SINGA_TRY_END
}

singa_status* device_stream_create(void*, int32_t id, void** out) {
  SINGA_TRY_BEGIN
  *out = nullptr;
  DeviceGuard guard(id);
  cudaStream_t s = nullptr;
  // A blocking stream (not cudaStreamNonBlocking) waits for the legacy
  // default stream, which keeps the pool's block reuse ordered.
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamDefault), "cudaStreamCreate");
  *out = s;
  SINGA_TRY_END
}

void device_stream_destroy(void*, int32_t id, void* stream) {
  if (!stream) return;
  try {
    DeviceGuard guard(id);
    cudaError_t err = cudaStreamDestroy(static_cast<cudaStream_t>(stream));
    if (err != cudaSuccess)
      sdk::host().log(SINGA_LOG_WARNING, cuda_message(err, "cudaStreamDestroy").c_str());
  } catch (const std::exception& e) {
    sdk::host().log(SINGA_LOG_WARNING, e.what());
  }
}

// Events (singa_event_ext): the core records one where a run's values are
// handed over and waits on it from the host or from another stream.
singa_status* device_event_create(void*, int32_t id, void** out) {
  SINGA_TRY_BEGIN
  *out = nullptr;
  DeviceGuard guard(id);
  cudaEvent_t e = nullptr;
  // Ordering only: an event that keeps no timestamp is cheaper to record and wait on.
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  *out = e;
  SINGA_TRY_END
}

void device_event_destroy(void*, int32_t id, void* event) {
  if (!event) return;
  try {
    DeviceGuard guard(id);
    cudaError_t err = cudaEventDestroy(static_cast<cudaEvent_t>(event));
    if (err != cudaSuccess) sdk::host().log(SINGA_LOG_WARNING, cuda_message(err, "cudaEventDestroy").c_str());
  } catch (const std::exception& e) {
    sdk::host().log(SINGA_LOG_WARNING, e.what());
  }
}

singa_status* device_event_record(void*, int32_t id, void* event, void* stream) {
  SINGA_TRY_BEGIN
  DeviceGuard guard(id);
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
  SINGA_TRY_END
}

singa_status* device_stream_wait_event(void*, int32_t id, void* stream, void* event) {
  SINGA_TRY_BEGIN
  DeviceGuard guard(id);
  check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
             "cudaStreamWaitEvent");
  SINGA_TRY_END
}

singa_status* device_event_synchronize(void*, int32_t id, void* event) {
  SINGA_TRY_BEGIN
  DeviceGuard guard(id);
  check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  SINGA_TRY_END
}

const singa_event_ext kEvents = {
    {SINGA_EVENT_EXT_STRUCT_SIZE, SINGA_EXTENSION_EVENTS, nullptr},
    device_event_create, device_event_destroy, device_event_record, device_stream_wait_event, device_event_synchronize};

singa_status* device_memory_info(void*, int32_t id, size_t* free_bytes, size_t* total_bytes) {
  SINGA_TRY_BEGIN
  DeviceGuard guard(id);
  size_t f = 0, t = 0;
  check_cuda(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  // Cached blocks are free for this process's tensors.
  if (free_bytes) *free_bytes = f + allocator().cached_bytes(id);
  if (total_bytes) *total_bytes = t;
  SINGA_TRY_END
}

}  // namespace

void register_device(sdk::Registrar& reg) {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "cuda";
  d.dl_device_type = kDLCUDA;
  d.score = 100;
  d.device_count = device_count;
  d.alloc = device_alloc;
  d.free = device_free;
  d.copy = device_copy;
  d.memset = device_memset;
  d.synchronize = device_synchronize;
  d.stream_create = device_stream_create;
  d.stream_destroy = device_stream_destroy;
  d.memory_info = device_memory_info;
  // With streams and events the core gives each run a stream of its own.
  d.extensions = &kEvents.base;
  reg.device(d);
}

void release_device_memory() { allocator().release_cache(); }

}  // namespace cuda
}  // namespace singa
