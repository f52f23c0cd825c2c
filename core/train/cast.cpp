#include "cast.hpp"

#include <singa/error.hpp>

namespace singa {
namespace layer {
namespace detail {

void check_float_dtype(int32_t dtype, const std::string& who) {
  if (dtype != SINGA_ONNX_FLOAT && dtype != SINGA_ONNX_DOUBLE)
    throw Error(SINGA_INVALID_ARGUMENT, who + ": to() converts between float32 (" + std::to_string(SINGA_ONNX_FLOAT) +
                                            ") and float64 (" + std::to_string(SINGA_ONNX_DOUBLE) + "), got element type " +
                                            std::to_string(dtype));
}

Tensor cast_tensor(const Tensor& t, int32_t dtype) {
  if (t.dtype() == dtype) return t;
  autograd::NoGradGuard ng;
  return autograd::apply1("Cast", {autograd::Variable(t)}, autograd::Attrs().set("to", int64_t(dtype))).data();
}

void cast_variable(autograd::Variable& v, int32_t dtype) {
  if (!v.defined() || (v.dtype() != SINGA_ONNX_FLOAT && v.dtype() != SINGA_ONNX_DOUBLE)) return;
  if (v.dtype() != dtype) v.set_data(cast_tensor(v.data(), dtype));
  v.set_grad(Tensor());
}

}  // namespace detail
}  // namespace layer
}  // namespace singa
