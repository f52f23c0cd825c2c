// toy_plugin.cpp - the toy device plugin's one entry point: it registers the
// device, its kernels and its graph pass. Built outside the singa tree
// against the installed SDK only (pkg-config: singa-sdk).
#include "toy_device.hpp"
#include "toy_fusions.hpp"
#include "toy_kernels.hpp"

#include <singa/graph_pass.hpp>

SINGA_PLUGIN("toy_device", "1.0.0", "Worked example: a device plugin with its own allocator, kernels and fusions") {
  reg.device(toy::device_def());
  toy::register_kernels(reg);
  // Runs only when a graph is prepared for --device toy. A host older than
  // ABI 1.3 has no graph passes: the kernels still work, unfused.
  if (!singa::sdk::register_graph_pass(reg, toy::kPassName, toy::kDeviceName, 0, toy::fuse))
    singa::sdk::host().log(SINGA_LOG_INFO, "toy device: this singa predates graph passes; running unfused");
  reg.on_shutdown(toy::shutdown_device);
}
