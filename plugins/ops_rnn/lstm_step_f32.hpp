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

// A [4H, K] matrix of the four gates' rows (gates i, o, f, c; R with K = H,
// W with K = the input size) as panels: panel u holds, for k in [0, K), the
// weights M[g*H + 16u + l][k] for g in 0..3, l in 0..15 at [(u*K + k)*64 +
// g*16 + l]; units past H are zero. Into `buf` (resized), from a 64-byte
// boundary on (the steps load whole lines of it: at 16 bytes off every load
// spans two); returns that start.
float* pack_lstm_panels(const float* M, int64_t H, int64_t K, std::vector<float>& buf);
// The start pack_lstm_panels returned for a `buf` it filled for these H and
// K, or null when buf holds no such panels.
const float* packed_lstm_panels(const std::vector<float>& buf, int64_t H, int64_t K);

// proj[r*G + g*H + j] = sum_i x[r*I + i] * W[g*H + j][i] for the rows r in
// [0, rows) of X and the units j of panels [u0, u1) (W packed by
// pack_lstm_panels, K = I): the input projection of the units one part of a
// step owns, computed by that part, as 6-row by 64-column register tiles.
// Only where fast::avx512(). (oneDNN's sgemm over all columns, with W
// packed per call, took a quarter of a 2-layer LSTM's time at 2 threads.)
void lstm_projection(const float* packed_w, int64_t H, int64_t I, const float* x, int64_t rows, float* proj, int64_t u0,
                     int64_t u1);

// z[b*G + g*H + j] = sum_k h[b*H + k] * R[g*H + j][k] for b in [0, N), the
// units j of panels [u0, u1), every gate g (G = 4H), taking the panels from
// u1 - 1 down when `backwards`. Only where fast::avx512().
//
// Alternating the direction from step to step starts each step on the panels
// the last one read most recently, still in L2 when R is about L2's size.
void lstm_step_product(const float* packed, int64_t H, const float* h, int64_t N, float* z, int64_t u0, int64_t u1,
                       bool backwards);

// A whole step of the default cell (sigmoid, tanh, tanh; no peepholes, no
// input_forget) for the units of panels [u0, u1): for each row b with x[b]
// set (the step's input projection row, gates i, o, f, c H apart), the
// pre-activations x[b] + h[b] * R^T + bias (the gates' Wb + Rb; none when
// null), clipped to [-clip, clip] when has_clip, give c[b] = f c[b] + i
// tanh(zc) and h_next[b] = o tanh(c[b]); a row whose x[b] is null (its
// sequence has ended) keeps c and copies h to h_next. Only where fast::avx512(). The products of
// all the panels come first, then the cells, in one pass over 16-unit
// vectors (an LSTM of 256 units: the separate cell passes of vec_math.hpp
// took ~1 us a step per thread, a tenth of the step).
void lstm_step(const float* packed, int64_t H, const float* h, int64_t N, const float* const* x, const float* bias,
               bool has_clip, float clip, float* c, float* h_next, int64_t u0, int64_t u1, bool backwards);

// A share of the next block's input projection that one step of one row
// (N = 1) computes while its product streams R: the step's product is bound
// by reading R from cache and leaves the FMA units half idle, so the
// projection done in the same loop costs about half of what it does on its
// own (lstm_classifier at 2 threads on a Zen 4: its projections took 0.21-0.24
// ms as register tiles of their own, ~0.11 ms here; 0.93 -> 0.89 ms in all).
// Block b + 1 (4 steps'
// rows of X) is projected during the 4 steps of block b, a quarter of its
// inputs [k0, k1) per step, each panel's 4 x 64 accumulators kept in `acc`
// between steps: the step with `first` starts them at zero, the one with
// `store` writes the rows.
struct ProjectionShare {
  const float* packed_w = nullptr;  // W's panels (pack_lstm_panels, K = I)
  int64_t I = 0, k0 = 0, k1 = 0;
  const float* x[4] = {};  // the block's rows of X (a short block repeats its last)
  float* proj[4] = {};     // where each row's projection goes (G floats); null past a short block
  float* acc = nullptr;    // 256 floats per panel of the step, from panel u0 on
  bool first = false, store = false;
};

// lstm_step for one row (N = 1) with `share` of the next block's projection
// computed in the product's loop. Only where fast::avx512().
void lstm_step_projecting(const float* packed, int64_t H, const float* h, const float* x, const float* bias,
                          bool has_clip, float clip, float* c, float* h_next, int64_t u0, int64_t u1, bool backwards,
                          const ProjectionShare& share);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
