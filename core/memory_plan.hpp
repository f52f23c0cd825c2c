// memory_plan.hpp - the static memory plan: at prepare time, every
// intermediate tensor whose size shape inference knows gets an offset in one
// arena per run, chosen so that tensors alive at the same node never overlap.
// Internal to libsinga_core.
#ifndef SINGA_CORE_MEMORY_PLAN_HPP
#define SINGA_CORE_MEMORY_PLAN_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace singa {

// What the planner needs to know of one graph value.
struct PlanValue {
  // 0: unknown at prepare time (never planned). The logical shape's size,
  // whatever the value's layout: layouts keep the element count (docs/abi.md).
  size_t bytes = 0;
  int first = -1;          // producing node
  int last = -1;           // last node that reads it (or `first` when none does)
  bool eligible = false;   // an intermediate the executor may place in the arena
  int takes_over = -1;     // the value whose memory this one may take over in place
  // This value lives inside value `part_of`, `part_offset` bytes in (a Concat
  // input placed where the Concat writes it); its producer then writes it in
  // place and the Concat finds nothing to move.
  int part_of = -1;
  size_t part_offset = 0;
};

struct MemoryPlan {
  static constexpr size_t kAlignment = 64;
  std::vector<int64_t> offset;  // per value: its place in the arena, -1 when allocated on demand
  std::vector<size_t> bytes;    // per value: the room planned for it
  size_t arena_bytes = 0;
  size_t planned_values = 0;
  size_t planned_bytes = 0;     // the planned values' sizes added up (what the arena saves against)
};

// Values linked by `takes_over` share one piece of memory: only the first of
// such a chain is placed, for the chain's whole life, and the chain is left
// out when any of its values is not eligible (an in-place output that is a
// graph output would otherwise live in the arena). Placement is greedy, the
// largest first, each in the smallest gap that is free for its whole life
// (the end of the arena when no gap fits). A value that is `part_of` another
// is placed with it: the other's room is reserved from the first part's
// producer until the last part's or its own last reader, and the part gets
// the other's offset plus its own. Parts must
// be eligible, take nothing over and be taken over by nothing (the caller
// checks); a part whose container is not placed is placed on its own.
MemoryPlan plan_memory(const std::vector<PlanValue>& values);

}  // namespace singa
#endif
