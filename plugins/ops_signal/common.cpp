// common.cpp - see common.hpp.
#include "common.hpp"

namespace singa {
namespace ops {
namespace signal {

int64_t read_scalar_int(const sdk::Tensor& t, const std::string& what) {
  if (!t.present()) sdk::fail(what + " is required");
  if (t.numel() != 1) sdk::fail(what + " must hold exactly one value, got " + std::to_string(t.numel()));
  switch (t.dtype()) {
    case SINGA_ONNX_INT32:
      return *t.data<int32_t>();
    case SINGA_ONNX_INT64:
      return *t.data<int64_t>();
    default:
      sdk::fail(what + " must be int32 or int64, got " + sdk::dtype_name(t.dtype()));
  }
}

double read_scalar_float(const sdk::Tensor& t, const std::string& what) {
  if (!t.present()) sdk::fail(what + " is required");
  if (t.numel() != 1) sdk::fail(what + " must hold exactly one value, got " + std::to_string(t.numel()));
  double v = 0;
  sdk::dispatch(
      t.dtype(), [&](auto tag) { v = load(t.data<decltype(tag)>(), 0); },
      sdk::kFloatTypes | sdk::bit(SINGA_ONNX_BFLOAT16));
  return v;
}

int32_t output_datatype(const sdk::Node& node) {
  const int64_t dt = node.attr_int("output_datatype", SINGA_ONNX_FLOAT);
  if (dt < 0 || dt > 16 || !(kGeneratedTypes & SINGA_DTYPE_BIT(int32_t(dt))))
    node.fail("output_datatype must name a numeric type (TensorProto.DataType), got " + std::to_string(dt));
  return int32_t(dt);
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
