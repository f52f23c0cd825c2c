// common.hpp - helpers shared by the signal kernels: scalar inputs, reading
// and writing the float element types through double, and the output_datatype
// attribute of the generator ops.
#ifndef SINGA_OPS_SIGNAL_COMMON_HPP
#define SINGA_OPS_SIGNAL_COMMON_HPP

#include <cmath>
#include <cstdint>
#include <limits>
#include <singa/kernel.hpp>
#include <string>
#include <type_traits>

namespace singa {
namespace ops {
namespace signal {

using sdk::bfloat16;
using sdk::half;

constexpr uint64_t kSignalTypes = sdk::kFloatTypes | sdk::bit(SINGA_ONNX_BFLOAT16);  // T1 of DFT and STFT
constexpr uint64_t kIndexTypes = sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);
// What output_datatype may name (the generators' T2/T3).
constexpr uint64_t kGeneratedTypes = sdk::kFloatTypes | sdk::bit(SINGA_ONNX_BFLOAT16) | sdk::kIntTypes;

constexpr uint64_t input_bit(int i) { return uint64_t(1) << i; }

// The one integer of a scalar (or one-element) int32/int64 input.
int64_t read_scalar_int(const sdk::Tensor& t, const std::string& what);
// The one value of a scalar (or one-element) floating-point input.
double read_scalar_float(const sdk::Tensor& t, const std::string& what);

// Reads the output_datatype attribute, failing on a type the op cannot produce.
int32_t output_datatype(const sdk::Node& node);

// Element i of a float-type buffer, as double.
template <typename T>
inline double load(const T* p, int64_t i) {
  return double(static_cast<float>(p[i]));
}
template <>
inline double load<double>(const double* p, int64_t i) {
  return p[i];
}

// Stores v as element type T: integer types truncate toward zero and clamp
// (NaN becomes 0) like a saturating cast, 16-bit floats round through float.
template <typename T>
inline T store(double v) {
  if constexpr (std::is_integral<T>::value) {
    if (!(v == v)) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else if constexpr (std::is_same<T, double>::value) {
    return v;
  } else {
    return T(float(v));
  }
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
#endif
