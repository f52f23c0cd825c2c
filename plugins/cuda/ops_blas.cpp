// MatMul and Gemm through cuBLAS (float). cuBLAS is column-major: a
// row-major Y = A B is computed as the column-major Y^T = B^T A^T, which
// reads the row-major buffers as they are, with no transposition copies.
#include "broadcast.hpp"
#include "handles.hpp"
#include "ops_common.hpp"
#include "register.hpp"

#include <vector>

namespace singa {
namespace cuda {

namespace {

void zero(const sdk::Context& ctx, const sdk::Tensor& y, const NodeKernel& k) {
  k.check_launch(cudaMemsetAsync(y.data_ptr(), 0, size_t(y.numel()) * sizeof(float), stream_of(ctx)), "cudaMemsetAsync");
}

class MatMul : public NodeKernel {
 public:
  explicit MatMul(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check_float(a, "A");
    check_float(b, "B");
    check(a.ndim() >= 1 && b.ndim() >= 1, "A and B must have at least one dimension, got " + shape_str(a.shape()) +
                                              " and " + shape_str(b.shape()));
    // A 1-D A is a row [1, K], a 1-D B a column [K, 1]; the added dim is
    // dropped from the result.
    sdk::Shape as = a.shape(), bs = b.shape();
    const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
    if (a_vec) as.insert(as.begin(), 1);
    if (b_vec) bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    check(bs[bs.size() - 2] == K, "inner dimensions differ: A " + shape_str(a.shape()) + ", B " + shape_str(b.shape()));
    const sdk::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    sdk::Shape batch;
    check(broadcast_shape(a_batch, b_batch, batch), "batch dimensions of A " + shape_str(a.shape()) + " and B " +
                                                        shape_str(b.shape()) + " do not broadcast");
    sdk::Shape out = batch;
    if (!a_vec) out.push_back(M);
    if (!b_vec) out.push_back(N);
    sdk::Tensor y = ctx.output(0, out, a.dl_dtype());
    if (y.numel() == 0) return;

    DeviceGuard guard(device_of(ctx));
    if (K == 0) return zero(ctx, y, *this);
    const int m = to_int(M, where() + ": M"), n = to_int(N, where() + ": N"), k = to_int(K, where() + ": K");
    const int64_t count = sdk::numel(batch);
    const float one = 1.f, none = 0.f;
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    Cublas h(device_of(ctx), stream_of(ctx));

    // Each input either has every batch matrix or one shared by all.
    const int64_t na = sdk::numel(a_batch), nb = sdk::numel(b_batch);
    if ((na == count || na == 1) && (nb == count || nb == 1)) {
      const long long sa = na == 1 ? 0 : (long long)(M * K), sb = nb == 1 ? 0 : (long long)(K * N);
      check_cublas(cublasSgemmStridedBatched(h.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, pb, n, sb, pa, k, sa,
                                             &none, py, n, (long long)(M * N), to_int(count, where() + ": batch")),
                   "cublasSgemmStridedBatched");
      return;
    }
    // Both inputs broadcast along different batch dims: one GEMM per output
    // matrix, with the operands found through a broadcast plan.
    const BroadcastPlan plan = make_plan(a_batch, b_batch, batch, where());
    for (int64_t i = 0; i < count; ++i) {
      int64_t r = i, oa = 0, ob = 0;
      for (int d = plan.rank - 1; d >= 0; --d) {
        const int64_t idx = r % plan.dims[d];
        r /= plan.dims[d];
        oa += idx * plan.strides[0][d];
        ob += idx * plan.strides[1][d];
      }
      check_cublas(cublasSgemm(h.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, pb + ob * K * N, n, pa + oa * M * K, k,
                               &none, py + i * M * N, n),
                   "cublasSgemm");
    }
  }
};

// Y = alpha * op(A) op(B) + beta * C, with C broadcast to [M, N]: by the
// `broadcast` attribute before opset 7 (exact shape when 0), numpy-style
// (unidirectional) from 7; optional from 11.
class Gemm : public NodeKernel {
 public:
  explicit Gemm(const sdk::Node& node)
      : NodeKernel(node),
        alpha_(node.attr_float("alpha", 1.f)),
        beta_(node.attr_float("beta", 1.f)),
        trans_a_(node.attr_int("transA", 0) != 0),
        trans_b_(node.attr_int("transB", 0) != 0),
        exact_c_(node.opset() < 7 && node.attr_int("broadcast", 0) == 0),
        c_required_(node.opset() < 11) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    sdk::Tensor c = ctx.input(2);
    check_float(a, "A");
    check_float(b, "B");
    check(a.ndim() == 2 && b.ndim() == 2, "A and B must be 2-D, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
    check(c.present() || !c_required_, "input C is required before opset 11");
    const int64_t M = trans_a_ ? a.dim(1) : a.dim(0), K = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t Kb = trans_b_ ? b.dim(1) : b.dim(0), N = trans_b_ ? b.dim(0) : b.dim(1);
    check(K == Kb, "inner dimensions differ: op(A) is [" + std::to_string(M) + ", " + std::to_string(K) + "], op(B) is [" +
                       std::to_string(Kb) + ", " + std::to_string(N) + "]");
    const sdk::Shape out{M, N};
    const bool use_c = c.present() && beta_ != 0.f;
    if (c.present()) {
      check_float(c, "C");
      sdk::Shape bs;
      const bool ok = exact_c_ ? c.shape() == out : broadcast_shape(c.shape(), out, bs) && bs == out;
      check(ok, "C " + shape_str(c.shape()) + " cannot be broadcast to the output " + shape_str(out));
    }
    sdk::Tensor y = ctx.output(0, out, a.dl_dtype());
    if (y.numel() == 0) return;

    const int dev = device_of(ctx);
    DeviceGuard guard(dev);
    const cudaStream_t stream = stream_of(ctx);
    float* py = y.data<float>();
    if (use_c) {
      const BroadcastPlan plan = make_plan(c.shape(), out, out, where());
      check_launch(launch_broadcast_copy<float>(c.data<float>(), py, plan, stream), "broadcast of C");
    }
    const float beta = use_c ? beta_ : 0.f;
    Cublas h(dev, stream);
    if (K == 0) {
      // No products: Y = beta * C (or zeros).
      if (!use_c) return zero(ctx, y, *this);
      if (beta != 1.f)
        check_cublas(cublasSscal(h.get(), to_int(M * N, where() + ": M*N"), &beta, py, 1), "cublasSscal");
      return;
    }
    const int m = to_int(M, where() + ": M"), n = to_int(N, where() + ": N"), k = to_int(K, where() + ": K");
    const int lda = to_int(a.dim(1), where() + ": lda"), ldb = to_int(b.dim(1), where() + ": ldb");
    check_cublas(cublasSgemm(h.get(), trans_b_ ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a_ ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                             &alpha_, b.data<float>(), ldb, a.data<float>(), lda, &beta, py, n),
                 "cublasSgemm");
  }

 private:
  float alpha_, beta_;
  bool trans_a_, trans_b_, exact_c_, c_required_;
};

}  // namespace

void register_blas(sdk::Registrar& reg) {
  // MatMul 1, 9 (more types), 13 (bfloat16): float is the same in all.
  reg.kernel<MatMul>("", "MatMul", 1, 17, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}});
  // Gemm 1-6: C required, `broadcast` attribute; 7-10: unidirectional
  // broadcast of C; 11-17: C optional.
  reg.kernel<Gemm>("", "Gemm", 1, 6, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
  reg.kernel<Gemm>("", "Gemm", 7, 10, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
  reg.kernel<Gemm>("", "Gemm", 11, 17, "cuda", {{"T", 0, kF32}, {"T", 1, kF32}, {"T", 2, kF32}});
}

}  // namespace cuda
}  // namespace singa
