// cast.hpp - changing the float type of a model's state (Layer::to),
// internal to libsinga_core.
#ifndef SINGA_CORE_TRAIN_CAST_HPP
#define SINGA_CORE_TRAIN_CAST_HPP

#include <singa/autograd.hpp>

#include <string>

namespace singa {
namespace layer {
namespace detail {

// Throws unless `dtype` is float32 or float64 (what to() converts between);
// `who` names the caller in the message.
void check_float_dtype(int32_t dtype, const std::string& who);
// `t` converted to `dtype` by the Cast kernel (the same tensor when it is
// already of that type), outside the tape.
Tensor cast_tensor(const Tensor& t, int32_t dtype);
// Replaces v's value by its cast when it is float32 or float64, and drops its gradient.
void cast_variable(autograd::Variable& v, int32_t dtype);

}  // namespace detail
}  // namespace layer
}  // namespace singa
#endif
