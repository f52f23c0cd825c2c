// half_tensor.hpp - host tensors of float, float16 or bfloat16 elements from
// float values and back, for the suites that compare 16-bit paths to float.
#ifndef SINGA_TESTS_HALF_TENSOR_HPP
#define SINGA_TESTS_HALF_TENSOR_HPP

#include <singa/kernel.hpp>
#include <singa/tensor.hpp>

#include <cstdint>
#include <vector>

namespace testing_util {

// v rounded to `dtype` (FLOAT, FLOAT16 or BFLOAT16), one value per element.
inline singa::Tensor float_tensor(const singa::Shape& shape, int32_t dtype, const std::vector<float>& v) {
  singa::Tensor t(shape, dtype);
  if (v.size() != size_t(t.numel()))
    throw singa::Error(SINGA_INVALID_ARGUMENT, "float_tensor: the value count differs from the shape's");
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == SINGA_ONNX_FLOAT16)
      t.data<uint16_t>()[i] = singa::sdk::half(v[i]).bits;
    else if (dtype == SINGA_ONNX_BFLOAT16)
      t.data<uint16_t>()[i] = singa::sdk::bfloat16(v[i]).bits;
    else
      t.data<float>()[i] = v[i];
  }
  return t;
}

// The elements of a FLOAT, FLOAT16 or BFLOAT16 host tensor as floats.
inline std::vector<float> float_values(const singa::Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == SINGA_ONNX_FLOAT16) {
      singa::sdk::half h;
      h.bits = t.data<uint16_t>()[i];
      v[i] = float(h);
    } else if (t.dtype() == SINGA_ONNX_BFLOAT16) {
      singa::sdk::bfloat16 b;
      b.bits = t.data<uint16_t>()[i];
      v[i] = float(b);
    } else {
      v[i] = t.data<float>()[i];
    }
  }
  return v;
}

}  // namespace testing_util
#endif
