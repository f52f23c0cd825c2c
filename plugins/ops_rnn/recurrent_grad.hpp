// recurrent_grad.hpp - what the backward kernels of RNN, GRU and LSTM share:
// the backward context's layout, the gradient outputs, and the products that
// turn per-step gate gradients into gradients of X, W, R and B.
//
// Each backward recomputes its forward pass, keeping every step's gate
// pre-activations, then walks the steps in reverse (backpropagation through
// time). Per direction two gradient buffers collect what the products need:
//   dproj [seq*batch, G]   d loss / d(X*W^T + Wb), rows in X's row order
//   dhr   [steps*batch, G] d loss / d(Hin*R^T + Rb) at each step
// where Hin is the step's previous state (GRU without linear_before_reset:
// r.*Hprev for the h gate). Padded steps leave zero rows in both.
#ifndef SINGA_OPS_RNN_RECURRENT_GRAD_HPP
#define SINGA_OPS_RNN_RECURRENT_GRAD_HPP

#include "recurrent.hpp"

namespace singa {
namespace ops {
namespace rnn {

// The backward kernel's context: the forward inputs (as many as its
// outputs), the forward outputs, then the gradients of those outputs.
struct BackwardLayout {
  size_t forward_inputs = 0, forward_outputs = 0;
  explicit BackwardLayout(const sdk::Context& ctx);
  // The gradient reaching forward output k, absent when none did.
  sdk::Tensor output_grad(const sdk::Context& ctx, size_t k) const;
  bool has_input(const sdk::Context& ctx, size_t i) const { return i < forward_inputs && ctx.has_input(i); }
};

// The gradient tensors of one backward: incoming ones (null when absent) and
// the outputs, zeroed (they accumulate). No gradient for sequence_lens.
template <typename T>
struct Grads {
  const T* dY = nullptr;
  const T* dstate[2] = {nullptr, nullptr};  // of Y_h, Y_c
  T* dX = nullptr;
  T* dW = nullptr;
  T* dR = nullptr;
  T* dB = nullptr;       // when B is given
  T* dinit[2] = {nullptr, nullptr};  // initial_h, initial_c, when given
};

// Reads the incoming gradients of Y and the `num_states` state outputs and
// allocates the gradients of X, W, R, B and initial_h (initial_c: input 6
// when num_states == 2 and it is given).
template <typename T>
Grads<T> make_grads(sdk::Context& ctx, const BackwardLayout& io, const Problem<T>& p, int32_t dt, int num_states);

// A direction's running state gradient [batch, hidden], seeded from the
// gradient of a state output (zeros when none reached it).
template <typename T>
std::vector<T> load_state_grad(const Problem<T>& p, const T* dstate, int64_t d) {
  return load_state(p, dstate, d);
}

// The derivative of activation f at pre-activation x, y = f(clip(x)), when
// the node clips pre-activations to [-clip, clip] (zero outside).
template <typename T>
inline T act_grad(const Activation& f, T x, T y, const CommonAttrs& a) {
  if (a.has_clip && (x < -T(a.clip) || x > T(a.clip))) return T(0);
  return f.derivative(x, y);
}

// C = alpha * op(A) op(B) + beta * C, row-major (op = transpose where ta/tb).
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc);
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

// From direction d's dproj: dW[d] += dproj^T X, Wb[d]'s gradient, dX += dproj W[d].
template <typename T>
void add_input_grads(const Problem<T>& p, int64_t d, const T* dproj, Grads<T>& g);

// From direction d's dhr (columns of gates [g0, g1)) against the inputs of
// the recurrent product hin [steps*batch, hidden]: R[d]'s rows of those
// gates and Rb[d]'s entries.
template <typename T>
void add_recurrent_grads(const Problem<T>& p, int64_t d, int64_t steps, const T* dhr, const T* hin, int64_t g0,
                         int64_t g1, Grads<T>& g);

// dh[batch, hidden] = dhr_step[:, gates g0..g1) * R[d][those gates' rows]:
// the gradient a step's recurrent product sends to its input.
template <typename T>
void through_r(const Problem<T>& p, int64_t d, const T* dhr_step, int64_t g0, int64_t g1, T* dh);

// The backward kernels (rnn_grad.cpp, gru_grad.cpp, lstm_grad.cpp), called
// by the kernel classes' backward members.
void rnn_backward(sdk::Context& ctx, const CommonAttrs& attrs);
void gru_backward(sdk::Context& ctx, const CommonAttrs& attrs, bool linear_before_reset);
void lstm_backward(sdk::Context& ctx, const CommonAttrs& attrs, bool input_forget);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
#endif
