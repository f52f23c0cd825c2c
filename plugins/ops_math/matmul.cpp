// matmul.cpp - MatMul (numpy semantics) and Gemm.
#include "gemm.hpp"
#include "matmul_dnnl.hpp"
#include "matmul_rows.hpp"
#include "registry.hpp"

#include <cpu_domain.hpp>


#include <type_traits>

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr uint64_t kBlasTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE);
constexpr uint64_t kHalfTypes = sdk::bit(SINGA_ONNX_FLOAT16) | sdk::bit(SINGA_ONNX_BFLOAT16);
constexpr uint64_t kMatMulTypes = kFloatLike | sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64) |
                                  sdk::bit(SINGA_ONNX_UINT32) | sdk::bit(SINGA_ONNX_UINT64);

// Scratch floats for running 16-bit float products through sgemm.
float* float_workspace(const sdk::Context& ctx, int64_t n) {
  return static_cast<float*>(ctx.workspace(size_t(std::max<int64_t>(n, 1)) * sizeof(float)));
}

// MatMul, and the ai.singa.cpu FusedMatMul the pack's graph passes make
// (passes/matmul_passes.hpp): MatMul plus `alpha` (float, default 1; a scale
// moved in by cpu.matmul_scales), `transB` (B stored [..., N, K];
// cpu.transposed_b), a bias row as third input (cpu.matmul_bias_rows),
// `activation` ("Gelu" or one of fused_activation.hpp's, e.g. "Swish" for
// SiLU) and a residual Z as fourth input (cpu.matmul_epilogues):
// Y = act(alpha A op(B) + bias) + Z. A standard
// MatMul is read as ONNX defines it; only FusedMatMul's extras are read.
class MatMulKernel {
 public:
  explicit MatMulKernel(const sdk::Node& node)
      : fused_(node.op_type() == "FusedMatMul"),
        alpha_(fused_ ? node.attr_float("alpha", 1.0f) : 1.0f),
        trans_b_(fused_ && node.attr_int("transB", 0) != 0) {
    const std::string act = fused_ ? node.attr_string("activation", "") : "";
    epilogue_.gelu = act == "Gelu";
    if (fused_ && !epilogue_.gelu) epilogue_.act = FusedActivation(node);
    plan_constant_b(node);
  }
  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0) && ctx.has_input(1), "needs two inputs A and B");
    sdk::Tensor a = ctx.input(0), b = ctx.input(1);
    same_dtype(a, b, "inputs A and B");
    Shape bs = b.shape();
    if (trans_b_) {
      SINGA_CHECK(bs.size() >= 2, "a transposed B needs rank >= 2, got " + shape_str(bs));
      std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
    }
    MatMulPlan p = plan_matmul(a.shape(), bs);
    // A FusedMatMul's third input is a bias row (cpu.matmul_bias_rows),
    // added as the product is stored; its fourth a residual Z.
    sdk::Tensor bias = fused_ ? ctx.input(2) : sdk::Tensor();
    if (bias.present()) {
      SINGA_CHECK(a.dtype() == SINGA_ONNX_FLOAT && bias.dtype() == SINGA_ONNX_FLOAT && (p.fold || p.batch == 1) &&
                      bias.numel() == p.N,
                  "a fused bias needs float inputs, B of rank 2 and " + std::to_string(p.N) + " values, got bias " +
                      shape_str(bias.shape()) + " for A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()));
    }
    sdk::Tensor z = fused_ ? ctx.input(3) : sdk::Tensor();
    const bool epilogue = epilogue_.activates() || z.present();
    if (epilogue) {
      sdk::check(a.dtype() == SINGA_ONNX_FLOAT, "a fused activation or residual needs float inputs");
      if (z.present() && (z.dtype() != SINGA_ONNX_FLOAT || z.shape() != p.out_shape))
        sdk::fail("the residual Z must be float " + shape_str(p.out_shape) + ", got " + shape_str(z.shape()));
    }
    sdk::Tensor y = ctx.output(0, p.out_shape, a.dtype());
    if (rows_ && a.dtype() == SINGA_ONNX_FLOAT && a.shape() == a_shape_ && b.shape() == b_shape_ &&
        b.data<float>() == b_data_) {
      rows_->run(ctx, a.data<float>(), y.data<float>(), z.present() ? z.data<float>() : nullptr);
      return;
    }
    if (dnnl_ && a.dtype() == SINGA_ONNX_FLOAT && a.shape() == dnnl_->a_shape() && b.shape() == b_shape_ &&
        b.data<float>() == b_data_) {
      dnnl_->run(ctx, a.data<float>(), b.data<float>(), y.data<float>(), z.present() ? z.data<float>() : nullptr);
      return;
    }
    use_blas_threads(ctx);
    sdk::check(alpha_ == 1.0f || !bias.present(), "a scale and a fused bias together are not supported");
    if (bias.present()) {
      blas_gemm(ctx, false, trans_b_, p.batch * p.M, p.N, p.K, 1.0f, a.data<float>() + (p.fold ? 0 : p.a_off[0]),
                b.data<float>() + (p.fold ? 0 : p.b_off[0]), 0.0f, y.data<float>(), bias.data<float>());
      apply_epilogue(ctx, y.data<float>(), z, y.numel());
      return;
    }
    sdk::dispatch(
        a.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(kBlasTypes)) {
            matmul_blas<T>(ctx, p, a.data<T>(), b.data<T>(), y.data<T>(), T(alpha_), trans_b_);
            if constexpr (std::is_same<T, float>::value) apply_epilogue(ctx, y.data<float>(), z, y.numel());
          } else if constexpr (in_mask<T>(kHalfTypes)) {
            float* af = float_workspace(ctx, a.numel());
            float* bf = float_workspace(ctx, b.numel());
            float* yf = float_workspace(ctx, y.numel());
            convert_n(ctx, a.data<T>(), af, a.numel());
            convert_n(ctx, b.data<T>(), bf, b.numel());
            matmul_blas<float>(ctx, p, af, bf, yf, alpha_, trans_b_);
            convert_n(ctx, yf, y.data<T>(), y.numel());
          } else if constexpr (in_mask<T>(kMatMulTypes)) {
            sdk::check(alpha_ == 1.0f && !trans_b_, "a scale or a transposed B needs a floating-point product");
            matmul_generic<T>(ctx, p, a.data<T>(), b.data<T>(), y.data<T>());
          }
        },
        kMatMulTypes);
  }

 private:
  // A float product with a constant 2-D B (and bias row) and A's shape known
  // at create time goes through oneDNN's matmul (matmul_dnnl.hpp;
  // option cpu.matmul_primitive=0 keeps sgemm, to compare), or with at most
  // 8 rows through the column-split kernel (matmul_rows.hpp; option
  // cpu.matmul_rows=0 keeps oneDNN's).
  void plan_constant_b(const sdk::Node& node) {
    if (!node.option_bool("cpu.matmul_primitive", true) || !node.has_input(1)) return;
    sdk::Tensor b = node.constant(1);
    singa_value_info ai = node.input_info(0);
    if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 2 || ai.onnx_dtype != SINGA_ONNX_FLOAT ||
        ai.ndim < 2)
      return;
    const Shape as(ai.dims, ai.dims + ai.ndim);
    for (int64_t d : as)
      if (d <= 0) return;
    const int64_t K = b.dim(trans_b_ ? 1 : 0), N = b.dim(trans_b_ ? 0 : 1);
    if (as.back() != K) return;  // compute() reports the mismatch
    const bool has_bias = fused_ && node.has_input(2);
    sdk::Tensor bias = has_bias ? node.constant(2) : sdk::Tensor();
    if (has_bias && (!bias.present() || bias.dtype() != SINGA_ONNX_FLOAT || bias.numel() != N)) return;
    if (bias.present() && alpha_ != 1.0f) return;
    MatMulEpilogue epilogue = epilogue_;
    epilogue.residual = fused_ && node.has_input(3);
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < as.size(); ++d) rows *= as[d];
    b_shape_ = b.shape();
    b_data_ = b.data<float>();
    a_shape_ = as;
    if (node.option_bool("cpu.matmul_rows", true) && rows <= RowsMatMul::kMaxRows) {
      rows_ = RowsMatMul::plan(rows, K, N, b.data<float>(), trans_b_, bias.present() ? bias.data<float>() : nullptr,
                               alpha_, epilogue);
      if (rows_) return;
    }
    dnnl_ = DnnlMatMul::plan(as, N, b.data<float>(), bias.present() ? bias.data<float>() : nullptr, alpha_,
                             epilogue, trans_b_);
  }

  // The fused activation and residual where the primitive did not apply
  // them: one pass over Y after the product.
  void apply_epilogue(const sdk::Context& ctx, float* y, const sdk::Tensor& z, int64_t n) const {
    if (!epilogue_.activates() && !z.present()) return;
    const float* zd = z.present() ? z.data<float>() : nullptr;
    ctx.parallel_for(n, 16384,
                     [&](int64_t b, int64_t e) { epilogue_pass(epilogue_, y + b, zd ? zd + b : nullptr, e - b); });
  }

  bool fused_;  // a FusedMatMul: the attributes and inputs 2 and 3 are read
  float alpha_;
  bool trans_b_;
  MatMulEpilogue epilogue_;  // the activation (its residual flag unused here)
  std::unique_ptr<DnnlMatMul> dnnl_;
  std::unique_ptr<RowsMatMul> rows_;
  Shape a_shape_;  // A's shape at create time, which rows_ was planned for
  Shape b_shape_;
  const float* b_data_ = nullptr;  // the constant B the plan packed (the run's B must be it)
};

// Y = alpha * op(A) op(B) + beta * C, C broadcast to (M, N): numpy-style
// from opset 7, or by the `broadcast` attribute before (exact shape when 0).
// C is optional from opset 11; it is treated as absent when beta is 0.
class GemmKernel {
 public:
  // An ai.singa.cpu FusedGemm: Gemm-11 plus the activation attributes a
  // standard Gemm never carries (passes/fuse_gemm_activation.cpp).
  static bool fused(const sdk::Node& node) { return node.op_type() == "FusedGemm"; }

  explicit GemmKernel(const sdk::Node& node)
      : alpha_(node.attr_float("alpha", 1.0f)),
        beta_(node.attr_float("beta", 1.0f)),
        trans_a_(node.attr_int("transA", 0) != 0),
        trans_b_(node.attr_int("transB", 0) != 0),
        exact_c_(!fused(node) && node.opset() < 7 && node.attr_int("broadcast", 0) == 0),
        c_required_(!fused(node) && node.opset() < 11),
        act_(fused(node) ? GemmActivation(node) : GemmActivation()) {
    plan_constant_b(node);
  }

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0) && ctx.has_input(1), "needs inputs A and B");
    sdk::Tensor a = ctx.input(0), b = ctx.input(1);
    same_dtype(a, b, "inputs A and B");
    SINGA_CHECK(a.ndim() == 2 && b.ndim() == 2,
                "A and B must be 2-D, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
    int64_t M = trans_a_ ? a.dim(1) : a.dim(0), K = trans_a_ ? a.dim(0) : a.dim(1);
    int64_t Kb = trans_b_ ? b.dim(1) : b.dim(0), N = trans_b_ ? b.dim(0) : b.dim(1);
    SINGA_CHECK(K == Kb, "inner dimensions differ: A " + shape_str(a.shape()) + (trans_a_ ? " (transposed)" : "") +
                             ", B " + shape_str(b.shape()) + (trans_b_ ? " (transposed)" : ""));
    Shape out_shape{M, N};
    sdk::Tensor c = ctx.input(2);
    sdk::check(c.present() || !c_required_, "input C is required before opset 11");
    if (c.present()) {
      same_dtype(a, c, "inputs A and C");
      bool ok = exact_c_ ? c.shape() == out_shape : c.ndim() <= 2 && unidirectional(c.shape(), out_shape);
      SINGA_CHECK(ok, "C " + shape_str(c.shape()) + " cannot be broadcast to the output " + shape_str(out_shape));
    }
    bool use_c = c.present() && beta_ != 0.0f;
    sdk::Tensor y = ctx.output(0, out_shape, a.dtype());
    if ((rows_ || dnnl_) && a.dtype() == SINGA_ONNX_FLOAT && a.shape() == a_shape_ && b.shape() == b_shape_ &&
        b.data<float>() == b_data_ && (!use_c || c.data<float>() == c_data_)) {
      if (rows_)
        rows_->run(ctx, a.data<float>(), y.data<float>());
      else
        dnnl_->run(ctx, a.data<float>(), b.data<float>(), y.data<float>());
      act_.apply(ctx, y.data<float>(), M * N);
      return;
    }
    use_blas_threads(ctx);
    sdk::check(act_.kind == GemmActivation::kNone || a.dtype() == SINGA_ONNX_FLOAT || a.dtype() == SINGA_ONNX_DOUBLE,
               "a fused activation needs float or double");
    sdk::dispatch(
        a.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_same<T, float>::value) {
            // A bias row (Linear's) is added as the product is stored, not
            // broadcast into Y first.
            const bool row = use_c && beta_ == 1.0f && N > 1 &&
                             ((c.ndim() == 1 && c.dim(0) == N) || (c.ndim() == 2 && c.dim(0) == 1 && c.dim(1) == N));
            if (use_c && !row) broadcast_copy<T, T>(ctx, c, y.data<T>(), out_shape);
            blas_gemm(ctx, trans_a_, trans_b_, M, N, K, alpha_, a.data<T>(), b.data<T>(), use_c && !row ? beta_ : 0.0f,
                      y.data<T>(), row ? c.data<float>() : nullptr);
            act_.apply(ctx, y.data<T>(), M * N);
          } else if constexpr (in_mask<T>(kBlasTypes)) {
            if (use_c) broadcast_copy<T, T>(ctx, c, y.data<T>(), out_shape);
            blas_gemm(ctx, trans_a_, trans_b_, M, N, K, T(alpha_), a.data<T>(), b.data<T>(), use_c ? T(beta_) : T(0),
                      y.data<T>());
            act_.apply(ctx, y.data<T>(), M * N);
          } else if constexpr (in_mask<T>(kHalfTypes)) {
            float* af = float_workspace(ctx, a.numel());
            float* bf = float_workspace(ctx, b.numel());
            float* yf = float_workspace(ctx, M * N);
            convert_n(ctx, a.data<T>(), af, a.numel());
            convert_n(ctx, b.data<T>(), bf, b.numel());
            if (use_c) broadcast_copy<T, float>(ctx, c, yf, out_shape);
            blas_gemm(ctx, trans_a_, trans_b_, M, N, K, alpha_, af, bf, use_c ? beta_ : 0.0f, yf);
            convert_n(ctx, yf, y.data<T>(), M * N);
          } else if constexpr (in_mask<T>(kMatMulTypes)) {
            if (use_c) broadcast_copy<T, T>(ctx, c, y.data<T>(), out_shape);
            integer_gemm<T>(ctx, M, N, K, a.data<T>(), b.data<T>(), use_c, y.data<T>());
          }
        },
        kMatMulTypes);
  }

 private:
  // A float Gemm by a constant B (A's shape known at create time), with no
  // C or a constant bias row, packs B once: at most 8 rows go through the
  // column-split kernel (matmul_rows.hpp; option cpu.matmul_rows=0 keeps
  // oneDNN), more through oneDNN's matmul primitive, rows split over the
  // pool (matmul_dnnl.hpp; option cpu.matmul_primitive=0 keeps sgemm, which
  // packs B on every call).
  void plan_constant_b(const sdk::Node& node) {
    if (trans_a_ || !node.has_input(1)) return;
    sdk::Tensor b = node.constant(1);
    singa_value_info ai = node.input_info(0);
    if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 2 || ai.onnx_dtype != SINGA_ONNX_FLOAT ||
        ai.ndim != 2 || ai.dims[0] <= 0)
      return;
    const bool rows = ai.dims[0] <= RowsMatMul::kMaxRows && node.option_bool("cpu.matmul_rows", true);
    if (!rows && !node.option_bool("cpu.matmul_primitive", true)) return;
    const int64_t K = b.dim(trans_b_ ? 1 : 0), N = b.dim(trans_b_ ? 0 : 1);
    if (ai.dims[1] != K) return;  // compute() reports the mismatch
    std::vector<float> bias;
    if (node.has_input(2) && beta_ != 0.0f) {
      sdk::Tensor c = node.constant(2);
      if (!c.present() || c.dtype() != SINGA_ONNX_FLOAT || c.numel() != N || c.ndim() < 1 || c.ndim() > 2 ||
          c.dim(c.ndim() - 1) != N || exact_c_)
        return;
      for (int64_t j = 0; j < N; ++j) bias.push_back(beta_ * c.data<float>()[j]);
      c_data_ = c.data<float>();
    }
    const float* bias_row = bias.empty() ? nullptr : bias.data();
    a_shape_ = Shape(ai.dims, ai.dims + 2);
    if (rows) rows_ = RowsMatMul::plan(ai.dims[0], K, N, b.data<float>(), trans_b_, bias_row, alpha_);
    // Without AVX-512 few rows take oneDNN's primitive too. Its scale would
    // apply to the bias as well.
    if (!rows_ && node.option_bool("cpu.matmul_primitive", true) && (!bias_row || alpha_ == 1.0f))
      dnnl_ = DnnlMatMul::plan(a_shape_, N, b.data<float>(), bias_row, alpha_, MatMulEpilogue(), trans_b_);
    b_shape_ = b.shape();
    b_data_ = b.data<float>();
  }

  static bool unidirectional(const Shape& c, const Shape& out) {
    for (size_t i = 0; i < c.size(); ++i) {
      int64_t d = c[c.size() - 1 - i];
      if (d != 1 && d != out[out.size() - 1 - i]) return false;
    }
    return true;
  }

  // Integer products wrap; alpha/beta other than 1 scale in double.
  template <typename T>
  void integer_gemm(const sdk::Context& ctx, int64_t M, int64_t N, int64_t K, const T* A, const T* B, bool use_c,
                    T* Y) const {
    using U = acc_t<T>;
    bool plain = alpha_ == 1.0f && (!use_c || beta_ == 1.0f);
    double alpha = alpha_, beta = use_c ? beta_ : 0.0;
    int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, N * K));
    ctx.parallel_for(M, grain, [&](int64_t rb, int64_t re) {
      std::vector<U> row(size_t(std::max<int64_t>(N, 1)));
      for (int64_t i = rb; i < re; ++i) {
        row_product(i, trans_a_, trans_b_, M, N, K, A, B, row.data());
        T* y = Y + i * N;
        for (int64_t j = 0; j < N; ++j) {
          if (plain)
            y[j] = T(use_c ? U(row[size_t(j)] + U(y[j])) : row[size_t(j)]);
          else
            y[j] = convert<T>(alpha * double(T(row[size_t(j)])) + (use_c ? beta * double(y[j]) : 0.0));
        }
      }
    });
  }
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  bool exact_c_;
  bool c_required_;
  GemmActivation act_;
  std::unique_ptr<RowsMatMul> rows_;
  std::unique_ptr<DnnlMatMul> dnnl_;
  Shape a_shape_, b_shape_;        // the shapes rows_ or dnnl_ was planned for
  const float* b_data_ = nullptr;  // the constant B (and C) they packed
  const float* c_data_ = nullptr;
};

}  // namespace

void register_matmul(sdk::Registrar& reg) {
  // MatMul 1, 9, 13 only widen the type list.
  reg.kernel<MatMulKernel>("", "MatMul", 1, 17, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
  // MatMul with a scale, a transposed B, a bias row and an epilogue
  // (passes/matmul_passes.hpp).
  reg.kernel<MatMulKernel>(kCpuDomain, "FusedMatMul", 1, 1, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
  // Gemm 1-6: C required, `broadcast` attribute; 7-10: unidirectional
  // broadcast of C; 11-17: C optional.
  reg.kernel<GemmKernel>("", "Gemm", 1, 6, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
  reg.kernel<GemmKernel>("", "Gemm", 7, 10, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
  reg.kernel<GemmKernel>("", "Gemm", 11, 17, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
  // Gemm-11 with the activation after it (passes/fuse_gemm_activation.cpp).
  reg.kernel<GemmKernel>(kCpuDomain, "FusedGemm", 1, 1, "cpu", {{"T", 0, kMatMulTypes}, {"T", 1, kMatMulTypes}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
