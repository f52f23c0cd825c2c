// recurrent.hpp - what RNN, GRU and LSTM share: attributes, input checks,
// the layout-dependent indexing and the BLAS products.
#ifndef SINGA_OPS_RNN_RECURRENT_HPP
#define SINGA_OPS_RNN_RECURRENT_HPP

#include <singa/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "activation.hpp"

namespace singa {
namespace ops {
namespace rnn {

// Attributes every recurrent op has.
struct CommonAttrs {
  int num_directions = 1;
  bool reverse_only = false;  // direction == "reverse"
  int64_t hidden_size = -1;   // -1: taken from R's shape
  bool has_clip = false;
  float clip = 0.f;
  int layout = 0;  // 0: time-major, 1: batch-major (opset >= 14)
  std::vector<Activation> acts;  // num_directions * per_direction

  CommonAttrs(const sdk::Node& node, const std::vector<std::string>& default_acts);
  bool is_reverse(int d) const { return reverse_only || d == 1; }
};

// The sizes and raw inputs of one call, checked against each other.
// Input order (all three ops): X W R B sequence_lens initial_h [initial_c P].
template <typename T>
struct Problem {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int64_t gates = 1;
  int layout = 0;
  const T* X = nullptr;
  const T* W = nullptr;  // [dirs, gates*hidden, input]
  const T* R = nullptr;  // [dirs, gates*hidden, hidden]
  const T* B = nullptr;  // [dirs, 2*gates*hidden] or null
  const T* init_h = nullptr;
  std::vector<int64_t> lens;  // per batch entry, all == seq when absent
  const sdk::Context* ctx = nullptr;  // the call's, for the float products' threads

  // Row of X (and of the input projection) holding time t of batch b.
  int64_t x_row(int64_t t, int64_t b) const { return layout == 0 ? t * batch + b : b * seq + t; }
  // Offset of Y's vector for (t, direction d, b).
  int64_t y_off(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * dirs + d) * batch + b : (b * seq + t) * dirs + d) * hidden;
  }
  // Offset of a state vector (initial_h, Y_h, ...) for (direction d, b).
  int64_t state_off(int64_t d, int64_t b) const { return (layout == 0 ? d * batch + b : b * dirs + d) * hidden; }
  sdk::Shape y_shape() const {
    return layout == 0 ? sdk::Shape{seq, dirs, batch, hidden} : sdk::Shape{batch, seq, dirs, hidden};
  }
  sdk::Shape state_shape() const { return layout == 0 ? sdk::Shape{dirs, batch, hidden} : sdk::Shape{batch, dirs, hidden}; }
};

std::string shape_str(const sdk::Shape& s);

// Reads and checks X, W, R, B, sequence_lens and initial_h. Only the first
// forward_inputs inputs are the node's (a backward kernel's context has the
// forward outputs and their gradients after them).
template <typename T>
Problem<T> read_problem(const sdk::Context& ctx, const CommonAttrs& attrs, int64_t gates,
                        size_t forward_inputs = SIZE_MAX);

// Checks an extra per-state input (initial_c) has the state shape.
void check_state_input(const sdk::Tensor& t, const sdk::Shape& want, const char* name);

// C[M,N] = A[M,K] * B[N,K]^T + beta*C, row-major with leading dimensions.
void gemm_nt(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
             float* C, int64_t ldc);
void gemm_nt(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
             double* C, int64_t ldc);

// proj[seq*batch, gates*hidden] = X * W[d]^T + Wb[d] (without Wb[d] when
// not with_bias): every timestep's input contribution in one product.
// Rows follow X's row order (see x_row). Into a buffer of the calling
// thread's, reused from call to call and valid until its next call: a fresh
// vector per call (256 KB for a 64-step LSTM of 256 units) was zeroed through
// page faults, 4% of the LSTM's time at 2 threads.
template <typename T>
const T* input_projection(const Problem<T>& p, int64_t d, bool with_bias = true);

// That thread's buffer, at least n long, for a projection computed elsewhere.
template <typename T>
T* projection_buffer(size_t n);

// hr[batch, gates*hidden] = H * R[d]^T + Rb[d] for the state H [batch, hidden].
// With used_gates < gates only the first used_gates blocks of hr's columns are
// written (hr keeps its full row stride).
template <typename T>
void recurrent_product(const Problem<T>& p, int64_t d, const T* H, T* hr, int64_t used_gates = -1);

template <typename T>
inline T clip_to(T x, bool has_clip, float c) {
  if (!has_clip) return x;
  const T lim = T(c);
  return x < -lim ? -lim : (x > lim ? lim : x);
}

// Time index of step s for batch entry b in direction d.
inline int64_t step_time(bool reverse, int64_t s, int64_t len) { return reverse ? len - 1 - s : s; }

// The outputs a node declares: Y, then Y_h, then (LSTM) Y_c; null when the
// node has fewer outputs. Where a batch entry's sequence is shorter than X,
// Y starts zeroed: the steps past it stay 0 (otherwise every step of Y is
// written).
template <typename T>
struct Outputs {
  T* Y = nullptr;
  T* states[2] = {nullptr, nullptr};  // Y_h, Y_c
};

template <typename T>
Outputs<T> allocate_outputs(sdk::Context& ctx, const Problem<T>& p, int32_t dtype, size_t max_outputs) {
  Outputs<T> o;
  const size_t n = ctx.num_outputs() < max_outputs ? ctx.num_outputs() : max_outputs;
  if (n > 0) {
    sdk::Tensor y = ctx.output(0, p.y_shape(), dtype);
    o.Y = y.template data<T>();
    if (std::any_of(p.lens.begin(), p.lens.end(), [&](int64_t len) { return len < p.seq; }))
      for (int64_t i = 0; i < y.numel(); ++i) o.Y[i] = T(0);
  }
  for (size_t i = 1; i < n; ++i) o.states[i - 1] = ctx.output(i, p.state_shape(), dtype).template data<T>();
  return o;
}

// One direction's running state as a dense [batch, hidden] block, seeded
// from an initial-state input (layout-indexed) or zeros.
template <typename T>
std::vector<T> load_state(const Problem<T>& p, const T* init, int64_t d) {
  std::vector<T> s(size_t(p.batch * p.hidden), T(0));
  if (init)
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t j = 0; j < p.hidden; ++j) s[size_t(b * p.hidden + j)] = init[p.state_off(d, b) + j];
  return s;
}

template <typename T>
void store_state(const Problem<T>& p, const std::vector<T>& s, int64_t d, T* out) {
  if (!out) return;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.hidden; ++j) out[p.state_off(d, b) + j] = s[size_t(b * p.hidden + j)];
}

// Calls f(float{}) or f(double{}): the element types the cells implement.
template <typename F>
void dispatch_real(int32_t dtype, F&& f) {
  if (dtype == SINGA_ONNX_FLOAT)
    f(float{});
  else if (dtype == SINGA_ONNX_DOUBLE)
    f(double{});
  else
    sdk::fail(std::string("element type ") + sdk::dtype_name(dtype) + " is not supported (float or double)");
}

inline int64_t longest(const std::vector<int64_t>& lens) {
  int64_t m = 0;
  for (int64_t l : lens) m = l > m ? l : m;
  return m;
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
