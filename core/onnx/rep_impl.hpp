// rep_impl.hpp - what a prepared Rep holds. Internal to libsinga_core: the
// autograd tape and the frontend read an imported graph through it.
#ifndef SINGA_CORE_ONNX_REP_IMPL_HPP
#define SINGA_CORE_ONNX_REP_IMPL_HPP

#include "../executor.hpp"
#include "shape_cache.hpp"

#include <singa/onnx.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace singa {
namespace onnx {

struct Rep::Impl {
  // The graph after the prepare-time passes (what `run` uses).
  std::unique_ptr<Executor> exec;
  // The graph as the model wrote it, when the passes changed it: last_layers
  // and all_outputs name the model's own nodes and values (sonnx semantics),
  // and training replays the model's own ops. Its executor is built on first use.
  std::shared_ptr<const graph::Graph> plain_graph;
  ExecConfig config;
  mutable std::once_flag plain_once;
  mutable std::unique_ptr<Executor> plain_exec;
  const Executor& plain() const {
    if (!plain_graph) return *exec;
    std::call_once(plain_once, [&] { plain_exec = std::make_unique<Executor>(*plain_graph, config); });
    return *plain_exec;
  }
  // Plans specialized per input shape, for models with symbolic input dims
  // (null when the passes are off).
  std::unique_ptr<ShapeCache> shapes;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<NodePlacement> placement;
  std::string source;
};

}  // namespace onnx
}  // namespace singa
#endif
