// The ops_logical pack: comparisons, boolean logic and Where.
#include "logical_common.hpp"
#include "passes/passes.hpp"

SINGA_PLUGIN("ops_logical", "0.1.0", "comparison and boolean ops, Where (CPU)") {
  using namespace singa::ops::logical;
  register_compare(reg);
  register_boolean(reg);
  register_where(reg);
  register_cast_half_compare(reg);
  register_graph_passes(reg);
}
