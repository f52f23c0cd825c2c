// grad_emit.hpp - small builders the packs' gradient rules share
// (plugins/*/grad_builders*.cpp), over sdk::GradBuilder.
#ifndef SINGA_PLUGINS_COMMON_GRAD_EMIT_HPP
#define SINGA_PLUGINS_COMMON_GRAD_EMIT_HPP

#include <singa/gradient.hpp>

#include <cstdint>

namespace singa {
namespace ops {
namespace grad {

using sdk::Attr;
using sdk::GradBuilder;
using sdk::Value;

// A scalar `v` of `like`'s element type.
inline Value num(GradBuilder& b, double v, const Value& like) { return b.scalar(v, b.dtype(like)); }
// A one-input op with no attributes (Sign, Exp, Sqrt, ...).
inline Value op1(GradBuilder& b, const char* op, const Value& a) { return b.emit(op, {a}); }
// `v` cast to element type `dtype`, or to `like`'s.
inline Value as_type(GradBuilder& b, const Value& v, int32_t dtype) {
  return b.emit("Cast", {v}, {Attr("to", int64_t(dtype))});
}
inline Value as_type(GradBuilder& b, const Value& v, const Value& like) { return as_type(b, v, b.dtype(like)); }

}  // namespace grad
}  // namespace ops
}  // namespace singa
#endif
