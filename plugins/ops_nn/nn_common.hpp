// nn_common.hpp - small helpers shared by the kernels of the ops_nn pack.
#ifndef SINGA_OPS_NN_COMMON_HPP
#define SINGA_OPS_NN_COMMON_HPP

#include <saturate_cast.hpp>
#include <singa/kernel.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {

using sdk::Shape;
using sdk::bit;
using sdk::bfloat16;
using sdk::half;

constexpr uint64_t kRealTypes = sdk::kFloatTypes | bit(SINGA_ONNX_BFLOAT16);

// A float plane's sum in double, as GlobalAveragePool takes it
// (global_pool.cpp); a Conv with a fused one (conv.cpp) sums the same way.
double plane_sum(const float* x, int64_t n);

template <class T> struct onnx_of;
template <> struct onnx_of<float> { static constexpr int32_t value = SINGA_ONNX_FLOAT; };
template <> struct onnx_of<double> { static constexpr int32_t value = SINGA_ONNX_DOUBLE; };
template <> struct onnx_of<half> { static constexpr int32_t value = SINGA_ONNX_FLOAT16; };
template <> struct onnx_of<bfloat16> { static constexpr int32_t value = SINGA_ONNX_BFLOAT16; };
template <> struct onnx_of<int8_t> { static constexpr int32_t value = SINGA_ONNX_INT8; };
template <> struct onnx_of<int16_t> { static constexpr int32_t value = SINGA_ONNX_INT16; };
template <> struct onnx_of<int32_t> { static constexpr int32_t value = SINGA_ONNX_INT32; };
template <> struct onnx_of<int64_t> { static constexpr int32_t value = SINGA_ONNX_INT64; };
template <> struct onnx_of<uint8_t> { static constexpr int32_t value = SINGA_ONNX_UINT8; };
template <> struct onnx_of<uint16_t> { static constexpr int32_t value = SINGA_ONNX_UINT16; };
template <> struct onnx_of<uint32_t> { static constexpr int32_t value = SINGA_ONNX_UINT32; };
template <> struct onnx_of<uint64_t> { static constexpr int32_t value = SINGA_ONNX_UINT64; };
template <> struct onnx_of<bool> { static constexpr int32_t value = SINGA_ONNX_BOOL; };

// Calls f(T{}) for the T among Ts whose ONNX dtype is `dtype`. Unlike
// sdk::dispatch it instantiates f only for Ts, so float-only code compiles.
template <class... Ts, class F>
void dispatch_among(int32_t dtype, const std::string& where, F&& f) {
  bool done = ((dtype == onnx_of<Ts>::value ? (f(Ts{}), true) : false) || ...);
  if (!done) sdk::fail(where + ": unsupported element type " + sdk::dtype_name(dtype));
}

template <class F>
void dispatch_real(int32_t dtype, const std::string& where, F&& f) {
  dispatch_among<float, double, half, bfloat16>(dtype, where, std::forward<F>(f));
}

// The type arithmetic runs in: double for double, float for everything else
// (half and bfloat16 have no arithmetic of their own; 8/16-bit ints are exact).
template <class T>
using acc_t = std::conditional_t<std::is_same<T, double>::value, double, float>;

template <class T>
constexpr bool is_half_like() { return std::is_same<T, half>::value || std::is_same<T, bfloat16>::value; }

// Conversions between storage and arithmetic types; the 16-bit floats go
// through float, a floating value into an integer saturates
// (saturate_cast.hpp), everything else is a plain cast.
template <class T, class A>
inline T from_acc(A v) {
  if constexpr (is_half_like<T>())
    return T(static_cast<float>(v));
  else if constexpr (std::is_integral<T>::value && std::is_floating_point<A>::value)
    return ops::saturate_cast<T>(v);
  else
    return static_cast<T>(v);
}
template <class A, class T>
inline A to_acc(T v) {
  if constexpr (is_half_like<T>())
    return static_cast<A>(static_cast<float>(v));
  else
    return static_cast<A>(v);
}

// What error messages name: "Conv node 'conv1'", or "Conv" for unnamed nodes.
inline std::string where_of(const sdk::Node& node) {
  std::string name = node.name();
  return name.empty() ? node.op_type() : node.op_type() + " node '" + name + "'";
}

// Base of every kernel here: remembers the node for messages raised in compute.
class NodeKernel {
 public:
  explicit NodeKernel(const sdk::Node& node) : where_(where_of(node)), opset_(node.opset()) {}
  const std::string& where() const { return where_; }
  int64_t opset() const { return opset_; }
  // The core already prefixes kernel errors with the node's name and op.
  [[noreturn]] void fail(const std::string& msg) const { sdk::fail(msg); }
  void check(bool ok, const std::string& msg) const {
    if (!ok) fail(msg);
  }
  // A literal message builds no std::string unless the check fails; messages
  // that are built (concatenation, shape_str) go through SINGA_CHECK instead.
  void check(bool ok, const char* msg) const {
    if (!ok) fail(msg);
  }
  // Input i, which must be present.
  sdk::Tensor required(const sdk::Context& ctx, size_t i, const char* name) const {
    sdk::Tensor t = ctx.input(i);
    if (!t.present()) fail(std::string("required input ") + std::to_string(i) + " (" + name + ") is missing");
    return t;
  }

 private:
  std::string where_;
  int64_t opset_;
};

// A small real tensor (scales, means, a scalar bound) read as doubles.
inline std::vector<double> real_values(const sdk::Tensor& t, const std::string& where) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  dispatch_real(t.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_acc<double>(p[i]);
  });
  return out;
}

inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace nn
}  // namespace singa

#endif
