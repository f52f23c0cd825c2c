// lstm_step_f32.hpp - the recurrent product of a float LSTM step with R
// repacked for it (lstm_step_f32.cpp, AVX-512).
//
// A step's product z = h * R^T is one row (or a few) against R's 4H x H
// matrix: a matrix-vector product that streams all of R from cache at every
// step. Through oneDNN's sgemm (one call per gate and part) a 256-unit step
// took ~10 us whatever the thread count: the calls' set-up, not the bytes,
// set the pace, so a second thread barely helped although each half of R fits
// in its core's L2. Here R is repacked once into panels of 16 hidden units:
// for every k, the four gates' 16 weights side by side (64 floats), so a
// panel is read front to back, each h[k] is broadcast once for four FMAs, and
// a task can own whole panels.
#ifndef SINGA_OPS_RNN_LSTM_STEP_F32_HPP
#define SINGA_OPS_RNN_LSTM_STEP_F32_HPP

#include <cstdint>
#include <vector>

namespace singa {
namespace ops {
namespace rnn {

constexpr int64_t kUnitsPerPanel = 16;

inline int64_t lstm_panels(int64_t hidden) { return (hidden + kUnitsPerPanel - 1) / kUnitsPerPanel; }

// R [4H, H] (gates i, o, f, c) as panels: panel u holds, for k in [0, H), the
// weights R[g*H + 16u + l][k] for g in 0..3, l in 0..15 at [(u*H + k)*64 +
// g*16 + l]; units past H are zero. Into `buf` (resized), from a 64-byte
// boundary on (the steps load whole lines of it: at 16 bytes off every load
// spans two); returns that start.
float* pack_lstm_r(const float* R, int64_t H, std::vector<float>& buf);
// The start pack_lstm_r returned for a `buf` it filled for hidden size H, or
// null when buf holds no panels of that size.
const float* packed_lstm_r(const std::vector<float>& buf, int64_t H);

// z[b*G + g*H + j] = sum_k h[b*H + k] * R[g*H + j][k] for b in [0, N), the
// units j of panels [u0, u1), every gate g (G = 4H), taking the panels from
// u1 - 1 down when `backwards`. Only where fast::avx512().
//
// Alternating the direction from step to step starts each step on the panels
// the last one read most recently, still in L2 when R is about L2's size.
void lstm_step_product(const float* packed, int64_t H, const float* h, int64_t N, float* z, int64_t u0, int64_t u1,
                       bool backwards);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
