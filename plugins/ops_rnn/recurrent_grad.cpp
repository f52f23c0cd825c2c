// recurrent_grad.cpp - the backward kernels' shared I/O and weight products.
#include "recurrent_grad.hpp"

#include <cblas.h>

#include <climits>

namespace singa {
namespace ops {
namespace rnn {

BackwardLayout::BackwardLayout(const sdk::Context& ctx) {
  forward_inputs = ctx.num_outputs();
  if (ctx.num_inputs() < forward_inputs || (ctx.num_inputs() - forward_inputs) % 2 != 0)
    sdk::fail("backward: expected the forward inputs, outputs and output gradients, got " +
              std::to_string(ctx.num_inputs()) + " inputs for " + std::to_string(forward_inputs) + " gradients");
  forward_outputs = (ctx.num_inputs() - forward_inputs) / 2;
}

sdk::Tensor BackwardLayout::output_grad(const sdk::Context& ctx, size_t k) const {
  const size_t i = forward_inputs + forward_outputs + k;
  if (k >= forward_outputs || !ctx.has_input(i)) return sdk::Tensor();  // absent
  return ctx.input(i);
}

namespace {

template <typename T>
const T* incoming(const sdk::Context& ctx, const BackwardLayout& io, size_t k, const sdk::Shape& want, int32_t dt,
                  const char* name) {
  sdk::Tensor t = io.output_grad(ctx, k);
  if (!t.present()) return nullptr;
  if (t.shape() != want)
    sdk::fail(std::string("the gradient of ") + name + " has shape " + shape_str(t.shape()) + ", expected " +
              shape_str(want));
  if (t.dtype() != dt) sdk::fail(std::string("the gradient of ") + name + " has a different element type than X");
  return t.data<T>();
}

template <typename T>
T* zeroed(sdk::Context& ctx, size_t i, const sdk::Shape& s, int32_t dt) {
  sdk::Tensor t = ctx.output(i, s, dt);
  T* data = t.data<T>();
  std::fill(data, data + t.numel(), T(0));
  return data;
}

}  // namespace

template <typename T>
Grads<T> make_grads(sdk::Context& ctx, const BackwardLayout& io, const Problem<T>& p, int32_t dt, int num_states) {
  Grads<T> g;
  g.dY = incoming<T>(ctx, io, 0, p.y_shape(), dt, "Y");
  g.dstate[0] = incoming<T>(ctx, io, 1, p.state_shape(), dt, "Y_h");
  if (num_states == 2) g.dstate[1] = incoming<T>(ctx, io, 2, p.state_shape(), dt, "Y_c");
  const int64_t G = p.gates * p.hidden;
  g.dX = zeroed<T>(ctx, 0, ctx.input(0).shape(), dt);
  g.dW = zeroed<T>(ctx, 1, {p.dirs, G, p.input}, dt);
  g.dR = zeroed<T>(ctx, 2, {p.dirs, G, p.hidden}, dt);
  if (p.B) g.dB = zeroed<T>(ctx, 3, {p.dirs, 2 * G}, dt);
  if (p.init_h) g.dinit[0] = zeroed<T>(ctx, 5, p.state_shape(), dt);
  if (num_states == 2 && io.has_input(ctx, 6)) g.dinit[1] = zeroed<T>(ctx, 6, p.state_shape(), dt);
  return g;
}

template Grads<float> make_grads<float>(sdk::Context&, const BackwardLayout&, const Problem<float>&, int32_t, int);
template Grads<double> make_grads<double>(sdk::Context&, const BackwardLayout&, const Problem<double>&, int32_t, int);

namespace {

blasint dim(int64_t d) {
  if (d > INT_MAX) sdk::fail("dimension " + std::to_string(d) + " exceeds what BLAS accepts");
  return blasint(d);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0 || K == 0) return;  // callers accumulate (beta = 1): nothing to add
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, dim(M), dim(N), dim(K),
              alpha, A, dim(lda), B, dim(ldb), beta, C, dim(ldc));
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M == 0 || N == 0 || K == 0) return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, dim(M), dim(N), dim(K),
              alpha, A, dim(lda), B, dim(ldb), beta, C, dim(ldc));
}

template <typename T>
void add_input_grads(const Problem<T>& p, int64_t d, const T* dproj, Grads<T>& g) {
  const int64_t rows = p.seq * p.batch, G = p.gates * p.hidden, I = p.input;
  gemm(true, false, G, I, rows, T(1), dproj, G, p.X, I, T(1), g.dW + d * G * I, I);
  gemm(false, false, rows, I, G, T(1), dproj, G, p.W + d * G * I, I, T(1), g.dX, I);
  if (g.dB) {
    T* wb = g.dB + d * 2 * G;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < G; ++j) wb[j] += dproj[r * G + j];
  }
}

template <typename T>
void add_recurrent_grads(const Problem<T>& p, int64_t d, int64_t steps, const T* dhr, const T* hin, int64_t g0,
                         int64_t g1, Grads<T>& g) {
  const int64_t H = p.hidden, G = p.gates * H, rows = steps * p.batch, cols = (g1 - g0) * H;
  gemm(true, false, cols, H, rows, T(1), dhr + g0 * H, G, hin, H, T(1), g.dR + d * G * H + g0 * H * H, H);
  if (g.dB) {
    T* rb = g.dB + d * 2 * G + G + g0 * H;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) rb[j] += dhr[r * G + g0 * H + j];
  }
}

template <typename T>
void through_r(const Problem<T>& p, int64_t d, const T* dhr_step, int64_t g0, int64_t g1, T* dh) {
  const int64_t H = p.hidden, G = p.gates * H;
  std::fill(dh, dh + p.batch * H, T(0));
  gemm(false, false, p.batch, H, (g1 - g0) * H, T(1), dhr_step + g0 * H, G, p.R + d * G * H + g0 * H * H, H, T(0),
       dh, H);
}

template void add_input_grads<float>(const Problem<float>&, int64_t, const float*, Grads<float>&);
template void add_input_grads<double>(const Problem<double>&, int64_t, const double*, Grads<double>&);
template void add_recurrent_grads<float>(const Problem<float>&, int64_t, int64_t, const float*, const float*, int64_t,
                                         int64_t, Grads<float>&);
template void add_recurrent_grads<double>(const Problem<double>&, int64_t, int64_t, const double*, const double*,
                                          int64_t, int64_t, Grads<double>&);
template void through_r<float>(const Problem<float>&, int64_t, const float*, int64_t, int64_t, float*);
template void through_r<double>(const Problem<double>&, int64_t, const double*, int64_t, int64_t, double*);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
