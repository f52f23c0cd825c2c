// probe.hpp - whether this machine can run CUDA at all, asked of the runtime
// library alone (no cuBLAS, no cuDNN), so that the plugin's loader shim and
// the device share one answer and one wording.
#ifndef SINGA_CUDA_PROBE_HPP
#define SINGA_CUDA_PROBE_HPP

#include <string>

namespace singa {
namespace cuda {

// The number of CUDA devices; 0 with `why` set when there are none, or no
// driver, or a driver older than the runtime.
int probe_devices(std::string& why);

}  // namespace cuda
}  // namespace singa
#endif
