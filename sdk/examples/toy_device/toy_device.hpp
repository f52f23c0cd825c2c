// toy_device.hpp - the toy device's definition: what the core calls to
// allocate, copy and fill its memory.
#ifndef TOY_DEVICE_HPP
#define TOY_DEVICE_HPP

#include <singa/singa_abi.h>

#include <functional>

namespace toy {

// The name `--device` takes, and the device every toy kernel registers for.
constexpr const char* kDeviceName = "toy";

// The filled-in definition, ready for reg.device().
singa_device_def device_def();

// Runs `task` on the toy stream `stream` (what ctx.stream() or a device
// callback was given), or now when it is NULL, the synchronous default
// stream. Copies, memsets and every kernel's arithmetic go through here.
void run_on(void* stream, std::function<void()> task);

// Logs the pool's counters (debug level) and frees the pool when no buffer
// is live: the plugin's shutdown hook.
void shutdown_device();

}  // namespace toy

#endif  // TOY_DEVICE_HPP
