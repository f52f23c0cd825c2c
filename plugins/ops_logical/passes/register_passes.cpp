// The order of the ops_logical passes among the CPU packs' passes.
#include "passes.hpp"

namespace singa {
namespace ops {
namespace logical {

void register_graph_passes(sdk::Registrar& reg) {
  struct Entry {
    const char* name;
    int32_t priority;  // higher runs first
    int (*fn)(sdk::Graph&);
  };
  const Entry entries[] = {
      // 1990: right after cpu.float16_as_float32 (2000), whose Casts back to half may feed a compare.
      {"cpu.cast_half_compares", 1990, fuse_cast_half_compares},
  };
  for (const Entry& e : entries) sdk::register_graph_pass(reg, e.name, "cpu", e.priority, e.fn);
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
