// register_passes.hpp - registers the ops_nn pack's graph passes
// (fuse_passes.hpp) from SINGA_PLUGIN's body. Kept apart from
// singa/graph_pass.hpp so that the plugin's registration file needs only
// kernel.hpp.
#ifndef SINGA_OPS_NN_PASSES_REGISTER_PASSES_HPP
#define SINGA_OPS_NN_PASSES_REGISTER_PASSES_HPP

#include <singa/kernel.hpp>

namespace singa {
namespace nn {
namespace passes {

// Registers the Conv fusions and layouts for the "cpu" device, in their order.
void register_graph_passes(sdk::Registrar& reg);

}  // namespace passes
}  // namespace nn
}  // namespace singa
#endif
