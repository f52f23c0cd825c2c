#include "ops_common.hpp"

#include <climits>

namespace singa {
namespace opencl {

std::string shape_str(const sdk::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

size_t element_size(const sdk::Tensor& t) { return (size_t(t.dl_dtype().bits) * t.dl_dtype().lanes + 7) / 8; }

cl_int NodeKernel::to_int(int64_t v, const char* what) const {
  if (v < INT_MIN || v > INT_MAX)
    fail(std::string(what) + " = " + std::to_string(v) + " exceeds the 32-bit indices of the OpenCL kernels",
         SINGA_UNIMPLEMENTED);
  return cl_int(v);
}

DeviceEnv& NodeKernel::env(const sdk::Tensor& t) const {
  if (t.raw()->device.device_type != kDLOpenCL)
    fail("a tensor expected on the opencl device is on device type " + std::to_string(int(t.raw()->device.device_type)),
         SINGA_INTERNAL);
  return Runtime::instance().env(t.raw()->device.device_id);
}

Buf NodeKernel::buf(const sdk::Tensor& t) const {
  if (t.raw()->device.device_type != kDLOpenCL)
    fail("a tensor expected on the opencl device is on device type " + std::to_string(int(t.raw()->device.device_type)),
         SINGA_INTERNAL);
  const size_t es = element_size(t);
  const uint64_t off = t.raw()->byte_offset;
  if (es == 0 || off % es) fail("tensor starts at byte offset " + std::to_string(off) + ", not a whole element", SINGA_INTERNAL);
  return Buf{static_cast<cl_mem>(t.raw()->data), to_int(int64_t(off / es), "tensor offset")};
}

void NodeKernel::copy(const sdk::Tensor& dst, const sdk::Tensor& src, size_t bytes) const {
  if (bytes == 0) return;
  const cl_mem d = static_cast<cl_mem>(dst.raw()->data), s = static_cast<cl_mem>(src.raw()->data);
  const size_t doff = size_t(dst.raw()->byte_offset), soff = size_t(src.raw()->byte_offset);
  if (d == s && doff == soff) return;
  cl_int err = clEnqueueCopyBuffer(env(dst).queue, s, d, soff, doff, bytes, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) throw sdk::Error(cl_code(err), where_ + ": opencl: copying " + std::to_string(bytes) + " bytes: " + cl_error_name(err));
}

cl_int8 pack8(const std::vector<int64_t>& v, const NodeKernel& k, const char* what) {
  if (v.size() > 8)
    k.fail(std::string(what) + " needs " + std::to_string(v.size()) + " dimensions; the OpenCL kernels take 8",
           SINGA_UNIMPLEMENTED);
  cl_int8 r;
  for (int i = 0; i < 8; ++i) r.s[i] = i < int(v.size()) ? k.to_int(v[size_t(i)], what) : 1;
  return r;
}

}  // namespace opencl
}  // namespace singa
