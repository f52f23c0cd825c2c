// value_dtype.hpp - a graph value's ONNX element type as the host's shape
// inference knows it, for the CPU pack's graph passes.
#ifndef SINGA_PLUGINS_COMMON_VALUE_DTYPE_HPP
#define SINGA_PLUGINS_COMMON_VALUE_DTYPE_HPP

#include <singa/graph_pass.hpp>

#include <cstdint>
#include <string>

namespace singa {
namespace ops {

// 0 (undefined) for an absent input or a value whose type is not known.
inline int32_t value_dtype(const sdk::Graph& g, const std::string& v) {
  singa_value_info info;
  return !v.empty() && g.value_info(v, info) ? info.onnx_dtype : 0;
}

}  // namespace ops
}  // namespace singa
#endif
