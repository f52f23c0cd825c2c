// toy_device.hpp - the toy device's definition: what the core calls to
// allocate, copy and fill its memory.
#ifndef TOY_DEVICE_HPP
#define TOY_DEVICE_HPP

#include <singa/singa_abi.h>

namespace toy {

// The name `--device` takes, and the device every toy kernel registers for.
constexpr const char* kDeviceName = "toy";

// The filled-in definition, ready for reg.device().
singa_device_def device_def();

// Logs the pool's counters (debug level) and frees the pool when no buffer
// is live: the plugin's shutdown hook.
void shutdown_device();

}  // namespace toy

#endif  // TOY_DEVICE_HPP
