#include "memory_plan.hpp"

#include <algorithm>
#include <limits>

namespace singa {

namespace {

struct Chain {
  int head = -1;  // the value that is placed
  int first = 0, last = 0;
  size_t bytes = 0;
  bool ok = true;
};

size_t aligned(size_t n) { return (n + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment; }

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanValue>& values) {
  const size_t n = values.size();
  MemoryPlan plan;
  plan.offset.assign(n, -1);
  plan.bytes.assign(n, 0);

  // A chain's head is the value that takes over nothing (or something that
  // cannot be taken over); in-place outputs follow their input's chain.
  std::vector<int> chain_of(n, -1);
  std::vector<Chain> chains;
  auto chain_index = [&](int v) {
    // Walks back to the head; chains are short (runs of in-place ops).
    std::vector<int> path;
    int c = -1;
    for (int u = v; u >= 0; u = values[size_t(u)].takes_over) {
      if (chain_of[size_t(u)] >= 0) {
        c = chain_of[size_t(u)];
        break;
      }
      path.push_back(u);
      if (values[size_t(u)].takes_over < 0 || path.size() > n) break;
    }
    if (c < 0) {
      c = int(chains.size());
      Chain ch;
      ch.head = path.back();
      ch.first = values[size_t(ch.head)].first;
      ch.last = values[size_t(ch.head)].last;
      ch.bytes = values[size_t(ch.head)].bytes;
      ch.ok = values[size_t(ch.head)].eligible;
      chains.push_back(ch);
    }
    for (int u : path) chain_of[size_t(u)] = c;
    return c;
  };
  for (size_t v = 0; v < n; ++v) {
    const PlanValue& pv = values[v];
    if (!pv.eligible && pv.takes_over < 0) continue;
    if (pv.part_of >= 0) continue;  // below, with its container
    Chain& ch = chains[size_t(chain_index(int(v)))];
    ch.ok = ch.ok && pv.eligible;
    ch.last = std::max(ch.last, pv.last);
    ch.first = std::min(ch.first, pv.first);
  }
  // Parts reserve their container's room from their own producer on, and
  // until their last reader (which may come after the container's).
  std::vector<bool> part_placed(n, false);
  for (size_t v = 0; v < n; ++v) {
    const PlanValue& pv = values[v];
    if (pv.part_of < 0 || !pv.eligible) continue;
    const int c = chain_of[size_t(pv.part_of)];
    if (c < 0 || !chains[size_t(c)].ok || chains[size_t(c)].head != pv.part_of ||
        pv.part_offset + pv.bytes > values[size_t(pv.part_of)].bytes)
      continue;
    chains[size_t(c)].first = std::min(chains[size_t(c)].first, pv.first);
    chains[size_t(c)].last = std::max(chains[size_t(c)].last, pv.last);
    part_placed[v] = true;
  }
  // A part whose container is not placed becomes a chain of its own.
  for (size_t v = 0; v < n; ++v)
    if (values[v].part_of >= 0 && values[v].eligible && !part_placed[v]) {
      Chain& ch = chains[size_t(chain_index(int(v)))];
      ch.ok = ch.ok && values[v].eligible;
    }

  std::vector<int> order;
  for (size_t c = 0; c < chains.size(); ++c)
    if (chains[c].ok && chains[c].bytes > 0 && chains[c].first >= 0) order.push_back(int(c));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return chains[size_t(a)].bytes > chains[size_t(b)].bytes; });

  struct Placed {
    size_t offset, bytes;
    int first, last;
  };
  std::vector<Placed> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of placed chains alive at the same time
  for (int c : order) {
    const Chain& ch = chains[size_t(c)];
    const size_t need = aligned(ch.bytes);
    busy.clear();
    for (const Placed& p : placed)
      if (p.first <= ch.last && ch.first <= p.last) busy.emplace_back(p.offset, p.offset + p.bytes);
    std::sort(busy.begin(), busy.end());
    size_t best = std::numeric_limits<size_t>::max(), best_gap = std::numeric_limits<size_t>::max(), at = 0;
    for (const auto& b : busy) {
      if (b.first > at && b.first - at >= need && b.first - at < best_gap) {
        best = at;
        best_gap = b.first - at;
      }
      at = std::max(at, b.second);
    }
    if (best == std::numeric_limits<size_t>::max()) best = at;
    placed.push_back({best, need, ch.first, ch.last});
    plan.offset[size_t(ch.head)] = int64_t(best);
    plan.bytes[size_t(ch.head)] = need;
    plan.arena_bytes = std::max(plan.arena_bytes, best + need);
    plan.planned_values += 1;
    plan.planned_bytes += need;
  }
  for (size_t v = 0; v < n; ++v)
    if (part_placed[v] && plan.offset[size_t(values[v].part_of)] >= 0) {
      plan.offset[v] = plan.offset[size_t(values[v].part_of)] + int64_t(values[v].part_offset);
      plan.bytes[v] = values[v].bytes;
      plan.planned_values += 1;
    }
  return plan;
}

}  // namespace singa
