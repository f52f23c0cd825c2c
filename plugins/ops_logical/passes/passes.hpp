// The ops_logical pack's graph passes.
#ifndef SINGA_OPS_LOGICAL_PASSES_HPP
#define SINGA_OPS_LOGICAL_PASSES_HPP

#include <singa/graph_pass.hpp>

namespace singa {
namespace ops {
namespace logical {

int fuse_cast_half_compares(sdk::Graph& g);
void register_graph_passes(sdk::Registrar& reg);

}  // namespace logical
}  // namespace ops
}  // namespace singa
#endif
