// rep_impl.hpp - what a prepared Rep holds. Internal to libsinga_core: the
// autograd tape and the frontend read an imported graph through it.
#ifndef SINGA_CORE_ONNX_REP_IMPL_HPP
#define SINGA_CORE_ONNX_REP_IMPL_HPP

#include "../executor.hpp"

#include <singa/onnx.hpp>

#include <memory>
#include <string>
#include <vector>

namespace singa {
namespace onnx {

struct Rep::Impl {
  std::unique_ptr<Executor> exec;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<NodePlacement> placement;
  std::string source;
};

}  // namespace onnx
}  // namespace singa
#endif
