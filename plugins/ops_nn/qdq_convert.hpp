// qdq_convert.hpp - the inner loops of QuantizeLinear and DequantizeLinear
// for one scale and zero point over a contiguous run: float32 <-> uint8/int8,
// with AVX-512 where the CPU has it (the tail under a mask) and a scalar loop
// elsewhere. Both forms give the same bits:
//   quantize:   q = saturate(round_half_even(x / scale) + zero_point), NaN -> zero_point
//   dequantize: y = (float(q) - float(zero_point)) * scale
// (x / scale is a true division, as ONNX's reference computes it, not a
// multiplication by a rounded reciprocal).
#ifndef SINGA_OPS_NN_QDQ_CONVERT_HPP
#define SINGA_OPS_NN_QDQ_CONVERT_HPP

#include <algorithm>
#include <cstdint>

namespace singa {
namespace nn {
namespace qdq {

void quantize_u8(const float* x, uint8_t* y, int64_t n, float scale, int32_t zero_point);
void quantize_s8(const float* x, int8_t* y, int64_t n, float scale, int32_t zero_point);
void dequantize_u8(const uint8_t* x, float* y, int64_t n, float scale, int32_t zero_point);
void dequantize_s8(const int8_t* x, float* y, int64_t n, float scale, int32_t zero_point);

// The range of x[0, n) and 0 (lo <= 0 <= hi), as DynamicQuantizeLinear
// needs it, and the count of NaNs (which lo and hi then do not describe).
void range_with_zero(const float* x, int64_t n, float& lo, float& hi, int64_t& nans);

// y[i] = table[x[i]] for i < n: an 8-bit to 8-bit step whose result
// depends on the input byte alone (a requantization), looked up instead of
// computed. AVX-512 VBMI byte permutes where the CPU has them.
void lookup_bytes(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);

// Overloads by element type, for templated callers.
inline void quantize(const float* x, uint8_t* y, int64_t n, float s, int32_t z) { quantize_u8(x, y, n, s, z); }
inline void quantize(const float* x, int8_t* y, int64_t n, float s, int32_t z) { quantize_s8(x, y, n, s, z); }
inline void dequantize(const uint8_t* x, float* y, int64_t n, float s, int32_t z) { dequantize_u8(x, y, n, s, z); }
inline void dequantize(const int8_t* x, float* y, int64_t n, float s, int32_t z) { dequantize_s8(x, y, n, s, z); }

// Calls fn(begin, length, channel) for the runs of [b, e) that share one
// channel, where element i's channel is (i / inner) % channels.
template <class Fn>
inline void for_channel_runs(int64_t b, int64_t e, int64_t channels, int64_t inner, Fn&& fn) {
  if (channels <= 1) {
    if (e > b) fn(b, e - b, int64_t(0));
    return;
  }
  while (b < e) {
    const int64_t end = std::min<int64_t>(e, (b / inner + 1) * inner);
    fn(b, end - b, (b / inner) % channels);
    b = end;
  }
}

}  // namespace qdq
}  // namespace nn
}  // namespace singa
#endif
