// sources.hpp - the OpenCL C programs compiled into the plugin (one file per
// program, each a raw string). kPreludeSource is prepended to every program.
#ifndef SINGA_OPENCL_CL_SOURCES_HPP
#define SINGA_OPENCL_CL_SOURCES_HPP

namespace singa {
namespace opencl {

extern const char* const kPreludeSource;
extern const char* const kElementwiseSource;
extern const char* const kGemmSource;
extern const char* const kConvSource;
extern const char* const kPoolSource;
extern const char* const kReduceSource;
extern const char* const kCopySource;

}  // namespace opencl
}  // namespace singa

#endif
