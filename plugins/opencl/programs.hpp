// programs.hpp - the plugin's OpenCL C programs (sources embedded in the .so,
// see cl/*.cpp), built once per context at first use, and a small launcher
// that leases a cl_kernel, sets its arguments and enqueues it.
//
// A cl_kernel carries its arguments, so two threads must never set arguments
// on the same one: each launch leases a kernel from a per-name pool and
// returns it once enqueued (OpenCL captures the arguments at enqueue time).
#ifndef SINGA_OPENCL_PROGRAMS_HPP
#define SINGA_OPENCL_PROGRAMS_HPP

#include "cl_runtime.hpp"

#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace singa {
namespace opencl {

enum class Program { kElementwise, kGemm, kConv, kPool, kReduce, kCopy, kCount };

// Name (for messages) and OpenCL C source of a program.
const char* program_name(Program p);
std::string program_source(Program p);

class ProgramCache {
 public:
  ProgramCache(cl_context context, cl_device_id device);
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // A kernel of program p for the caller alone; give it back with release().
  // Throws sdk::Error with the build log when the program does not compile.
  cl_kernel acquire(Program p, const char* kernel);
  void release(Program p, const char* kernel, cl_kernel k);

 private:
  cl_program program_locked(Program p);

  cl_context context_;
  cl_device_id device_;
  std::mutex mu_;
  cl_program programs_[int(Program::kCount)] = {};
  std::string failures_[int(Program::kCount)];  // a failed build is reported again, not retried
  std::map<std::string, std::vector<cl_kernel>> idle_;
};

// A buffer argument: the cl_mem and an element offset into it (a DLTensor's
// byte_offset divided by the element size). Kernels receive both.
struct Buf {
  cl_mem mem;
  cl_int offset;
};

class Launch {
 public:
  Launch(DeviceEnv& env, Program p, const char* kernel, std::string where);
  ~Launch();
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  Launch& arg(const Buf& b);
  Launch& arg(cl_int v) { return raw(sizeof(v), &v); }
  Launch& arg(cl_float v) { return raw(sizeof(v), &v); }
  Launch& arg(const cl_int4& v) { return raw(sizeof(v), &v); }
  Launch& arg(const cl_int8& v) { return raw(sizeof(v), &v); }
  // Enqueues over `global` work items (rounded up to multiples of `local`
  // when given; kernels check their bounds).
  void run(std::initializer_list<size_t> global, std::initializer_list<size_t> local = {});

 private:
  Launch& raw(size_t size, const void* value);

  DeviceEnv& env_;
  Program program_;
  const char* name_;
  std::string where_;
  cl_kernel kernel_;
  cl_uint next_ = 0;
};

}  // namespace opencl
}  // namespace singa

#endif
