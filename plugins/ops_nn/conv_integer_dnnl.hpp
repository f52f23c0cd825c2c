// conv_integer_dnnl.hpp - the int32 accumulator of an 8-bit 2-D convolution
// (ConvInteger, QLinearConv) through oneDNN's int8 primitives, which use
// AVX-512 VNNI or AMX where the CPU has them.
//
// acc = conv(x - x_zero_point, w - w_zero_point), padding acting as the zero
// point. oneDNN takes u8/s8 activations with a runtime zero point but only s8
// weights without one, so the weights are stored once as s8 (u8 weights
// shifted by -128) and the rest is folded into a per-output-channel offset:
//   acc[m] = conv(x - xz, w8)[m] + c[m] * S,  c[m] = shift - wz[m],
// where S is the window sum of (x - xz) over the group's input channels
// (computed here, exactly, only when some c[m] is not 0).
// Made only on CPUs where oneDNN's int8 code accumulates exactly (VNNI or
// AMX; the older vpmaddubsw path saturates 16-bit pair sums).
#ifndef SINGA_OPS_NN_CONV_INTEGER_DNNL_HPP
#define SINGA_OPS_NN_CONV_INTEGER_DNNL_HPP

#include "spatial.hpp"

#include <memory>
#include <vector>

namespace singa {
namespace nn {

class DnnlInt8Conv {
 public:
  // Null when the fast path does not apply: not 2-D, weights or their zero
  // points not 8-bit, or a CPU without exact int8 dot products.
  // `w` is OIHW (u8 or s8), `wz` one or M zero points.
  static std::unique_ptr<DnnlInt8Conv> create(const sdk::Tensor& w, const std::vector<int32_t>& wz, int64_t group);
  ~DnnlInt8Conv();
  // Writes acc (NCHW int32 of g's output shape) for x (NCHW u8 or s8).
  // False when oneDNN refuses the shape; the caller then takes its own path.
  bool run(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g, int32_t* acc) const;

  // The output of a QDQ convolution (QdqConv in quant_conv.cpp): v[n, m] =
  // scale[m] * acc + bias[m], then Relu if `relu`; y = v for a float
  // `out_dtype`, else saturate(round_half_even(v) + out_zp) as u8 or s8.
  // `scale` holds 1 or M values, `bias` none or M. x_nhwc / y_nhwc: x and y
  // of run_scaled are channels-last ([N][H][W][C], logical shape NCHW).
  // Call once, before run_scaled.
  void set_scaled_output(const std::vector<float>& scale, const std::vector<float>& bias, bool relu,
                         int32_t out_dtype, int32_t out_zp, bool x_nhwc = false, bool y_nhwc = false);
  // Writes y (NCHW) in one pass, oneDNN applying the scales, bias, Relu and
  // zero point to its accumulator. False when that cannot be done (weights
  // with a zero-point offset, an unsupported shape): the caller then uses run().
  bool run_scaled(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g, void* y) const;

  struct State;

 private:
  DnnlInt8Conv() = default;
  bool execute(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g, void* out, bool scaled) const;
  // run_scaled for image stems (under 8 input channels, one group): the
  // windows unfolded into rows and multiplied on oneDNN's int8 matmul.
  bool execute_stem(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g, void* y) const;
  std::unique_ptr<State> s_;
};

// Whether oneDNN's int8 code on this CPU accumulates exactly (VNNI or AMX).
bool dnnl_int8_exact();

}  // namespace nn
}  // namespace singa
#endif
