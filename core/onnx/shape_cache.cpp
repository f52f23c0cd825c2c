#include "shape_cache.hpp"
#include "../graph_pass.hpp"
#include "../passes/passes.hpp"

#include <chrono>
#include <cstring>
#include <iostream>

namespace singa {
namespace onnx {

namespace {

// core.shape_cache: how many specialized plans a Rep keeps (0: none).
size_t capacity_option(const ExecConfig& config) {
  if (!config.options) return ShapeCache::kDefaultCapacity;
  auto it = config.options->find("core.shape_cache");
  if (it == config.options->end()) return ShapeCache::kDefaultCapacity;
  try {
    size_t used = 0;
    const long v = std::stol(it->second, &used);
    if (used == it->second.size() && v >= 0 && v <= 1024) return size_t(v);
  } catch (const std::exception&) {
  }
  throw Error(SINGA_INVALID_ARGUMENT, "option core.shape_cache='" + it->second + "': expected a count of plans from 0 to 1024");
}

// A tensor input whose rank or some dim is left to run time.
bool has_symbolic_input(const graph::Graph& g) {
  for (int v : g.inputs) {
    const graph::Value& val = g.values[size_t(v)];
    if (val.kind != graph::TypeKind::kTensor) continue;
    if (!val.rank_known) return true;
    for (int64_t d : val.dims)
      if (d < 0) return true;
  }
  return false;
}

std::string shapes_text(const std::vector<Value>& inputs) {
  std::string out;
  for (const Value& v : inputs) out += (out.empty() ? "" : ", ") + (v.is_tensor() ? shape_to_string(v.tensor().shape()) : v.describe());
  return out;
}

// Initializers the passes made again for the specialization (a folded
// BatchNorm's weights, a transposed B) share the general plan's tensor where
// name, type, shape and bytes agree, so that a plan costs little more than
// its kernels' state.
void share_initializers(graph::Graph& g, const graph::Graph& general) {
  for (graph::Value& v : g.values) {
    if (!v.is_initializer || !v.constant.defined() || !v.constant.on_host() || v.constant.dtype() == SINGA_ONNX_STRING) continue;
    auto it = general.index.find(v.name);
    if (it == general.index.end()) continue;
    const Tensor& o = general.values[size_t(it->second)].constant;
    if (!general.values[size_t(it->second)].is_initializer || !o.defined() || !o.on_host() || o.storage() == v.constant.storage() ||
        o.dtype() != v.constant.dtype() || o.shape() != v.constant.shape())
      continue;
    if (std::memcmp(o.raw_data(), v.constant.raw_data(), v.constant.nbytes()) == 0) v.constant = o;
  }
}

}  // namespace

ShapeCache::ShapeCache(std::shared_ptr<const graph::Graph> base, const graph::Graph& general, const ExecConfig& config,
                       bool optimize)
    : general_(general), config_(config), capacity_(capacity_option(config)) {
  if (!optimize || !base || !has_symbolic_input(*base)) capacity_ = 0;
  if (capacity_ > 0) base_ = std::move(base);
}

std::shared_ptr<const Executor> ShapeCache::find(const std::vector<Value>& inputs) {
  if (capacity_ == 0) return nullptr;
  // Per input: its rank then its dims, or -1 for an absent one and -2 for a
  // sequence (their shapes are not bound).
  Key key;
  for (const Value& v : inputs) {
    if (v.is_tensor()) {
      key.push_back(v.tensor().ndim());
      key.insert(key.end(), v.tensor().shape().begin(), v.tensor().shape().end());
    } else {
      key.push_back(v.is_none() ? -1 : -2);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return lru_.front().second;
    }
    ++misses_;
    if (general_only_.count(key) || building_.count(key)) return nullptr;
    // A workload that cycles through more shapes than the cache holds would
    // prepare on every other run: after 4 rounds of the capacity, plans that
    // served fewer than 8 runs each stop new ones.
    if (built_ >= 4 * capacity_ && hits_ < 8 * built_) return nullptr;
    if (++seen_[key] < kSightings) {
      if (seen_.size() > 16 * capacity_ + 64) seen_.clear();  // bounded: forgets one-off shapes
      return nullptr;
    }
    seen_.erase(key);
    building_.insert(key);
  }
  std::shared_ptr<const Executor> exec;
  std::string why;
  bool unchanged = false;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    exec = build(inputs, &unchanged);
  } catch (const std::exception& e) {
    why = e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mu_);
  building_.erase(key);
  const bool verbose = std::getenv("SINGA_VERBOSE") != nullptr;
  if (!exec) {
    ++(unchanged ? unchanged_ : failures_);
    if (general_only_.size() < 256) general_only_.insert(key);
    if (verbose)
      std::cerr << "singa: " << base_->source << ": no plan for input shapes " << shapes_text(inputs) << " (the general one runs): "
                << (unchanged ? "binding the dims folded nothing" : why) << "\n";
    return nullptr;
  }
  ++built_;
  lru_.emplace_front(key, exec);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  if (verbose)
    std::cerr << "singa: " << base_->source << ": plan for input shapes " << shapes_text(inputs) << " built in " << ms << " ms ("
              << lru_.size() << " of " << capacity_ << " held)\n";
  return exec;
}

// The prepare's pipeline again, on the input dims of this run: shape
// inference fills in what the dims determine, then the passes fold the
// shape arithmetic and fuse.
std::shared_ptr<const Executor> ShapeCache::build(const std::vector<Value>& inputs, bool* unchanged) {
  graph::Graph g = *base_;  // initializers are shared, not copied
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    graph::Value& v = g.values[size_t(g.inputs[i])];
    if (v.kind != graph::TypeKind::kTensor || !inputs[i].is_tensor()) continue;
    const Shape& s = inputs[i].tensor().shape();
    if (!v.rank_known || v.dim_params.size() != s.size()) v.dim_params.assign(s.size(), "");
    v.rank_known = true;
    v.dims = s;
  }
  graph::refine_shapes(g);
  const std::string device = config_.device->name();
  passes::PassOptions po{device};
  po.keep_dequantize = true;  // for the quantized passes; run_graph_passes folds the rest
  passes::optimize(g, po);
  run_graph_passes(g, device, config_.options.get(), nullptr);
  if (g.nodes.size() >= general_.nodes.size()) {
    *unchanged = true;
    return nullptr;
  }
  share_initializers(g, general_);
  return std::make_shared<const Executor>(std::move(g), config_);
}

ShapeCacheInfo ShapeCache::info() const {
  std::lock_guard<std::mutex> lock(mu_);
  ShapeCacheInfo out;
  out.capacity = capacity_;
  out.entries = lru_.size();
  out.hits = hits_;
  out.misses = misses_;
  out.built = built_;
  out.failed = failures_;
  out.unchanged = unchanged_;
  return out;
}

}  // namespace onnx
}  // namespace singa
