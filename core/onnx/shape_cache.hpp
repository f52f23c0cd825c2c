// shape_cache.hpp - plans specialized per input shape. A model exported with
// symbolic dims (batch, seq) computes its reshape targets at run time from
// Shape/Gather/Unsqueeze/Concat chains, and shape-dependent fusions cannot
// fire at prepare. Binding the dims to a shape seen at run time lets the
// prepare-time passes fold those chains and fuse, as if the user had bound
// the dims at prepare. Internal to libsinga_core.
#ifndef SINGA_CORE_ONNX_SHAPE_CACHE_HPP
#define SINGA_CORE_ONNX_SHAPE_CACHE_HPP

#include "../executor.hpp"

#include <singa/onnx.hpp>

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace singa {
namespace onnx {

class ShapeCache {
 public:
  // Most plans kept unless the named option core.shape_cache says otherwise.
  static constexpr size_t kDefaultCapacity = 8;
  // A shape is specialized the second time it is run: a program that never
  // repeats a shape never pays a prepare per run.
  static constexpr size_t kSightings = 2;

  // `base`: the graph as built, before the passes (its initializers are
  // shared, not copied, by each specialization). `optimize`: whether the
  // prepare ran the passes; without them there is nothing to specialize.
  // Throws Error on a malformed core.shape_cache value.
  // `general`: the general plan's graph (outlives the cache); a
  // specialization shares its initializers where they came out the same.
  ShapeCache(std::shared_ptr<const graph::Graph> base, const graph::Graph& general, const ExecConfig& config, bool optimize);

  // The plan specialized for these inputs (aligned with the graph's inputs),
  // or null where the general plan must run: the cache is off, the shape is
  // new, specializing it failed, or it folded nothing (as many nodes as the
  // general plan: a second plan would only cost memory). Builds the plan on
  // the second sighting.
  // Safe to call from several threads at once.
  std::shared_ptr<const Executor> find(const std::vector<Value>& inputs);

  ShapeCacheInfo info() const;

 private:
  using Key = std::vector<int64_t>;
  // Null with *unchanged set when the specialization folded nothing.
  std::shared_ptr<const Executor> build(const std::vector<Value>& inputs, bool* unchanged);

  std::shared_ptr<const graph::Graph> base_;
  const graph::Graph& general_;
  ExecConfig config_;
  size_t capacity_ = 0;
  mutable std::mutex mu_;
  // Most recently used first; `index_` points into it.
  std::list<std::pair<Key, std::shared_ptr<const Executor>>> lru_;
  std::map<Key, decltype(lru_)::iterator> index_;
  std::map<Key, size_t> seen_;     // sightings of shapes not yet specialized (bounded)
  std::set<Key> general_only_, building_;  // failed or folded nothing (bounded)
  size_t hits_ = 0, misses_ = 0, built_ = 0, failures_ = 0, unchanged_ = 0;
};

}  // namespace onnx
}  // namespace singa
#endif
