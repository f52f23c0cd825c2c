#include "programs.hpp"

#include "cl/sources.hpp"

namespace singa {
namespace opencl {

const char* program_name(Program p) {
  switch (p) {
    case Program::kElementwise: return "elementwise";
    case Program::kGemm: return "gemm";
    case Program::kConv: return "conv";
    case Program::kPool: return "pool";
    case Program::kReduce: return "reduce";
    case Program::kCopy: return "copy";
    default: return "unknown";
  }
}

std::string program_source(Program p) {
  const char* body = nullptr;
  switch (p) {
    case Program::kElementwise: body = kElementwiseSource; break;
    case Program::kGemm: body = kGemmSource; break;
    case Program::kConv: body = kConvSource; break;
    case Program::kPool: body = kPoolSource; break;
    case Program::kReduce: body = kReduceSource; break;
    case Program::kCopy: body = kCopySource; break;
    default: sdk::fail("opencl: unknown program", SINGA_INTERNAL);
  }
  return std::string(kPreludeSource) + body;
}

ProgramCache::ProgramCache(cl_context context, cl_device_id device) : context_(context), device_(device) {}

ProgramCache::~ProgramCache() {
  for (auto& entry : idle_)
    for (cl_kernel k : entry.second) clReleaseKernel(k);
  for (cl_program p : programs_)
    if (p) clReleaseProgram(p);
}

cl_program ProgramCache::program_locked(Program p) {
  const int i = int(p);
  if (programs_[i]) return programs_[i];
  if (!failures_[i].empty()) throw sdk::Error(SINGA_INTERNAL, failures_[i]);
  const std::string src = program_source(p);
  const char* text = src.c_str();
  const size_t len = src.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(context_, 1, &text, &len, &err);
  check_cl(err, std::string("clCreateProgramWithSource (") + program_name(p) + ")");
  err = clBuildProgram(prog, 1, &device_, "-cl-mad-enable", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    if (n) clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    clReleaseProgram(prog);
    failures_[i] = std::string("opencl: building program '") + program_name(p) + "' failed: " + cl_error_name(err) +
                   (log.empty() ? std::string() : "; build log:\n" + log);
    throw sdk::Error(SINGA_INTERNAL, failures_[i]);
  }
  return programs_[i] = prog;
}

cl_kernel ProgramCache::acquire(Program p, const char* kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& idle = idle_[std::string(program_name(p)) + "/" + kernel];
  if (!idle.empty()) {
    cl_kernel k = idle.back();
    idle.pop_back();
    return k;
  }
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program_locked(p), kernel, &err);
  check_cl(err, std::string("clCreateKernel ") + kernel + " of program " + program_name(p));
  return k;
}

void ProgramCache::release(Program p, const char* kernel, cl_kernel k) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_[std::string(program_name(p)) + "/" + kernel].push_back(k);
}

Launch::Launch(DeviceEnv& env, Program p, const char* kernel, std::string where)
    : env_(env), program_(p), name_(kernel), where_(std::move(where)), kernel_(env.programs->acquire(p, kernel)) {}

Launch::~Launch() { env_.programs->release(program_, name_, kernel_); }

Launch& Launch::raw(size_t size, const void* value) {
  cl_int err = clSetKernelArg(kernel_, next_, size, value);
  if (err != CL_SUCCESS)
    throw sdk::Error(cl_code(err), where_ + ": opencl: argument " + std::to_string(next_) + " of kernel " + name_ +
                                       ": " + cl_error_name(err));
  ++next_;
  return *this;
}

Launch& Launch::arg(const Buf& b) {
  raw(sizeof(cl_mem), &b.mem);
  return raw(sizeof(cl_int), &b.offset);
}

void Launch::run(std::initializer_list<size_t> global, std::initializer_list<size_t> local) {
  size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1};
  const cl_uint dims = cl_uint(global.size());
  size_t i = 0;
  for (size_t v : global) g[i++] = v;
  for (size_t d = 0; d < dims; ++d)
    if (g[d] == 0) return;  // nothing to do (empty tensor)
  if (local.size()) {
    i = 0;
    for (size_t v : local) l[i++] = v;
    for (size_t d = 0; d < dims; ++d) g[d] = (g[d] + l[d] - 1) / l[d] * l[d];
  }
  cl_int err = clEnqueueNDRangeKernel(env_.queue, kernel_, dims, nullptr, g, local.size() ? l : nullptr, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    throw sdk::Error(cl_code(err), where_ + ": opencl: enqueueing kernel " + name_ + " failed: " + cl_error_name(err));
}

}  // namespace opencl
}  // namespace singa
