// recurrent.cpp - shared attribute parsing, input checks and BLAS products.
#include "recurrent.hpp"

#include "blas_threads.hpp"
#include "dnnl_sgemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <climits>

namespace singa {
namespace ops {
namespace rnn {

CommonAttrs::CommonAttrs(const sdk::Node& node, const std::vector<std::string>& default_acts) {
  std::string dir = node.attr_string("direction", "forward");
  if (dir == "forward") {
    num_directions = 1;
  } else if (dir == "reverse") {
    num_directions = 1;
    reverse_only = true;
  } else if (dir == "bidirectional") {
    num_directions = 2;
  } else {
    node.fail("attribute 'direction' must be forward, reverse or bidirectional, got '" + dir + "'");
  }
  hidden_size = node.attr_int("hidden_size", -1);
  if (node.has_attr("hidden_size") && hidden_size <= 0)
    node.fail("attribute 'hidden_size' must be positive, got " + std::to_string(hidden_size));
  if (node.has_attr("clip")) {
    has_clip = true;
    clip = node.attr_float("clip", 0.f);
    if (!(clip > 0.f)) node.fail("attribute 'clip' must be positive, got " + std::to_string(clip));
  }
  layout = int(node.attr_int("layout", 0));
  if (layout != 0 && layout != 1) node.fail("attribute 'layout' must be 0 or 1, got " + std::to_string(layout));
  if (layout == 1 && node.opset() < 14) node.fail("attribute 'layout' needs opset 14 or newer");
  acts = read_activations(node, default_acts, num_directions);
}

std::string shape_str(const sdk::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

namespace {

void expect_shape(const sdk::Tensor& t, const sdk::Shape& want, const char* name) {
  if (t.shape() != want)
    sdk::fail(std::string("input ") + name + " has shape " + shape_str(t.shape()) + ", expected " + shape_str(want));
}

template <typename T>
const T* typed(const sdk::Tensor& t, int32_t dtype, const char* name) {
  if (t.dtype() != dtype)
    sdk::fail(std::string("input ") + name + " is " + sdk::dtype_name(t.dtype()) + " but X is " + sdk::dtype_name(dtype));
  return t.data<T>();
}

blasint blas_dim(int64_t d) {
  if (d > INT_MAX) sdk::fail("dimension " + std::to_string(d) + " exceeds what BLAS accepts");
  return blasint(d);
}

}  // namespace

void check_state_input(const sdk::Tensor& t, const sdk::Shape& want, const char* name) { expect_shape(t, want, name); }

template <typename T>
Problem<T> read_problem(const sdk::Context& ctx, const CommonAttrs& attrs, int64_t gates, size_t forward_inputs) {
  ops::use_blas_threads(ctx);
  auto has_input = [&](size_t i) { return i < forward_inputs && ctx.has_input(i); };
  Problem<T> p;
  p.ctx = &ctx;
  p.gates = gates;
  p.layout = attrs.layout;
  p.dirs = attrs.num_directions;
  sdk::Tensor x = ctx.input(0), w = ctx.input(1), r = ctx.input(2);
  if (!x.present() || !w.present() || !r.present()) sdk::fail("inputs X, W and R are required");
  if (x.ndim() != 3) sdk::fail("input X must have rank 3, got shape " + shape_str(x.shape()));
  p.seq = attrs.layout == 0 ? x.dim(0) : x.dim(1);
  p.batch = attrs.layout == 0 ? x.dim(1) : x.dim(0);
  p.input = x.dim(2);
  if (r.ndim() != 3) sdk::fail("input R must have rank 3, got shape " + shape_str(r.shape()));
  p.hidden = attrs.hidden_size > 0 ? attrs.hidden_size : r.dim(2);
  const int32_t dt = x.dtype();
  p.X = x.data<T>();
  expect_shape(w, {p.dirs, gates * p.hidden, p.input}, "W");
  expect_shape(r, {p.dirs, gates * p.hidden, p.hidden}, "R");
  p.W = typed<T>(w, dt, "W");
  p.R = typed<T>(r, dt, "R");
  if (has_input(3)) {
    sdk::Tensor b = ctx.input(3);
    expect_shape(b, {p.dirs, 2 * gates * p.hidden}, "B");
    p.B = typed<T>(b, dt, "B");
  }
  p.lens.assign(size_t(p.batch), p.seq);
  if (has_input(4)) {
    sdk::Tensor l = ctx.input(4);
    expect_shape(l, {p.batch}, "sequence_lens");
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t v = l.int_at(b);
      if (v < 0 || v > p.seq)
        sdk::fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(v) + " is outside [0, " +
                  std::to_string(p.seq) + "]");
      p.lens[size_t(b)] = v;
    }
  }
  if (has_input(5)) {
    sdk::Tensor h = ctx.input(5);
    expect_shape(h, p.state_shape(), "initial_h");
    p.init_h = typed<T>(h, dt, "initial_h");
  }
  return p;
}

template Problem<float> read_problem<float>(const sdk::Context&, const CommonAttrs&, int64_t, size_t);
template Problem<double> read_problem<double>(const sdk::Context&, const CommonAttrs&, int64_t, size_t);

void gemm_nt(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
             float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];  // BLAS: C unread at 0
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_dim(M), blas_dim(N), blas_dim(K), 1.f, A, blas_dim(lda), B,
              blas_dim(ldb), beta, C, blas_dim(ldc));
}

void gemm_nt(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
             double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];  // BLAS: C unread at 0
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_dim(M), blas_dim(N), blas_dim(K), 1.0, A, blas_dim(lda), B,
              blas_dim(ldb), beta, C, blas_dim(ldc));
}

namespace {

// Fills rows x cols of C with a bias row (zeros when there is none).
template <typename T>
void fill_rows(T* C, int64_t rows, int64_t cols, const T* bias) {
  for (int64_t i = 0; i < rows; ++i) {
    T* row = C + i * cols;
    if (bias)
      std::copy(bias, bias + cols, row);
    else
      std::fill(row, row + cols, T(0));
  }
}

// C[M,N] = A[M,K] * B[N,K]^T + beta C: float through oneDNN (plugins/common/sgemm.hpp),
// whose one-row products are several times faster than OpenBLAS's.
void product_nt(const Problem<float>& p, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0 && beta == 0.f) {  // C = 0 (not read: it may hold anything)
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.f);
    return;
  }
  ops::sgemm(*p.ctx, false, true, M, N, K, 1.f, A, lda, B, ldb, beta, C, ldc);
}
void product_nt(const Problem<double>& p, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
                const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_nt(M, N, K, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

template <typename T>
T* projection_buffer(size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

template <typename T>
const T* input_projection(const Problem<T>& p, int64_t d, bool with_bias) {
  const int64_t rows = p.seq * p.batch, cols = p.gates * p.hidden;
  T* proj = projection_buffer<T>(size_t(rows * cols));
  const T* bias = p.B && with_bias ? p.B + d * 2 * cols : nullptr;  // Wb[d]
  if (bias) fill_rows(proj, rows, cols, bias);
  product_nt(p, rows, cols, p.input, p.X, p.input, p.W + d * cols * p.input, p.input, T(bias ? 1 : 0), proj, cols);
  return proj;
}

template <typename T>
void recurrent_product(const Problem<T>& p, int64_t d, const T* H, T* hr, int64_t used_gates) {
  const int64_t cols = p.gates * p.hidden;
  const int64_t used = (used_gates < 0 ? p.gates : used_gates) * p.hidden;
  const T* rb = p.B ? p.B + d * 2 * cols + cols : nullptr;
  for (int64_t b = 0; b < p.batch; ++b) {
    T* row = hr + b * cols;
    if (rb)
      std::copy(rb, rb + used, row);
    else
      std::fill(row, row + used, T(0));
  }
  product_nt(p, p.batch, used, p.hidden, H, p.hidden, p.R + d * cols * p.hidden, p.hidden, T(1), hr, cols);
}

template float* projection_buffer<float>(size_t);
template double* projection_buffer<double>(size_t);
template const float* input_projection<float>(const Problem<float>&, int64_t, bool);
template const double* input_projection<double>(const Problem<double>&, int64_t, bool);
template void recurrent_product<float>(const Problem<float>&, int64_t, const float*, float*, int64_t);
template void recurrent_product<double>(const Problem<double>&, int64_t, const double*, double*, int64_t);

}  // namespace rnn
}  // namespace ops
}  // namespace singa
