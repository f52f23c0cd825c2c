// attrs.hpp - reading a NodeProto's attributes for the core's own ops.
#ifndef SINGA_CORE_CONTROL_ATTRS_HPP
#define SINGA_CORE_CONTROL_ATTRS_HPP

#include <singa/error.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace singa {
namespace control {

inline const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

inline int64_t attr_int(const ::onnx::NodeProto& n, const std::string& name, int64_t fallback, const std::string& where) {
  const auto* a = find_attr(n, name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::INT)
    throw Error(SINGA_INVALID_ARGUMENT, where + ": attribute '" + name + "' must be an int");
  return a->i();
}

inline std::vector<int64_t> attr_ints(const ::onnx::NodeProto& n, const std::string& name, const std::string& where) {
  const auto* a = find_attr(n, name);
  if (!a) return {};
  if (a->type() != ::onnx::AttributeProto::INTS)
    throw Error(SINGA_INVALID_ARGUMENT, where + ": attribute '" + name + "' must be a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

}  // namespace control
}  // namespace singa
#endif
