// The QDQMatMul kernel (qmatmul.hpp): the int8 product on the VNNI kernel
// with the scales and bias applied as each tile is stored; a portable loop
// over the same exact integer sums where the CPU has no VNNI.
#include "math_common.hpp"
#include "qmatmul.hpp"
#include "qmatmul_vnni.hpp"

#include <cpu_domain.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr uint64_t k8Bit = sdk::bit(SINGA_ONNX_INT8) | sdk::bit(SINGA_ONNX_UINT8);

// A scalar or [n] tensor's values as int32 (one 0 when absent).
std::vector<int32_t> ints(const sdk::Tensor& t) {
  std::vector<int32_t> v;
  for (int64_t i = 0; t.present() && i < t.numel(); ++i) v.push_back(int32_t(t.int_at(i)));
  if (v.empty()) v.push_back(0);
  return v;
}

// Checks a per-tensor or per-column parameter of B: a scalar or [N].
void check_column_param(const sdk::Tensor& t, int64_t N, const char* name) {
  SINGA_CHECK(t.ndim() <= 1 && (t.numel() == 1 || t.numel() == N),
              std::string(name) + " " + shape_str(t.shape()) + " must be a scalar or have " + std::to_string(N) +
                  " values (one per column of B)");
}

// The fused output QuantizeLinear's parameters.
struct Quant {
  bool is_signed = false;
  float scale = 1.f;
  int32_t zero = 0;
  bool dequantize = false;           // write (q - zero) * scale (+ post_bias[n]) as float
  const float* post_bias = nullptr;
};

class QdqMatMulKernel {
 public:
  explicit QdqMatMulKernel(const sdk::Node& node)
      : fast_(node.option_bool("cpu.int8_matmul", true)), dequantize_(node.attr_int("dequantize_output", 0) != 0) {
    if (!fast_ || !vnni_available() || !node.has_input(3)) return;
    const sdk::Tensor b = node.constant(3);
    const sdk::Tensor zb = node.has_input(5) ? node.constant(5) : sdk::Tensor();
    if (!b.present() || (node.has_input(5) && !zb.present())) return;
    packed_ = pack(b, zb);
    if (packed_ && node.option_bool("cpu.int8_amx", true)) attach_amx(*packed_);
    b_data_ = b.data_ptr();
  }

  void compute(sdk::Context& ctx) const {
    for (size_t i : {0, 1, 3, 4}) SINGA_CHECK(ctx.has_input(i), "input " + std::to_string(i) + " is missing");
    const sdk::Tensor a = ctx.input(0), sa = ctx.input(1), za = ctx.input(2);
    const sdk::Tensor b = ctx.input(3), sb = ctx.input(4), zb = ctx.input(5), bias = ctx.input(6);
    SINGA_CHECK(b.ndim() == 2, "B must be 2-D, got " + shape_str(b.shape()));
    const int64_t K = b.dim(0), N = b.dim(1);
    SINGA_CHECK(a.ndim() >= 1 && a.shape().back() == K,
                "A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) + " do not multiply");
    for (const sdk::Tensor* s : {&sa, &sb})
      SINGA_CHECK(s->dtype() == SINGA_ONNX_FLOAT, std::string("scales must be float, got ") + sdk::dtype_name(s->dtype()));
    SINGA_CHECK(sa.numel() == 1, "a_scale must be a scalar, got " + shape_str(sa.shape()));
    check_column_param(sb, N, "b_scale");
    if (za.present()) {
      same_dtype(a, za, "A and a_zero_point");
      SINGA_CHECK(za.numel() == 1, "a_zero_point must be a scalar, got " + shape_str(za.shape()));
    }
    if (zb.present()) {
      same_dtype(b, zb, "B and b_zero_point");
      check_column_param(zb, N, "b_zero_point");
    }
    if (bias.present())
      SINGA_CHECK(bias.dtype() == SINGA_ONNX_FLOAT && bias.numel() == N,
                  "bias must be float with " + std::to_string(N) + " values, got " + shape_str(bias.shape()));
    // The output QuantizeLinear's scale and zero point, when it was fused.
    const sdk::Tensor qs = ctx.input(7), qz = ctx.input(8);
    const bool quantized = qs.present();
    if (quantized) {
      SINGA_CHECK(qs.dtype() == SINGA_ONNX_FLOAT && qs.numel() == 1 && qz.present() && qz.numel() == 1 &&
                      (qz.dtype() == SINGA_ONNX_UINT8 || qz.dtype() == SINGA_ONNX_INT8),
                  "y_scale must be a float scalar and y_zero_point a u8 or s8 scalar");
    }
    // dequantize_output: the quantized value back to float, plus y_bias.
    SINGA_CHECK(!dequantize_ || quantized, "dequantize_output needs y_scale and y_zero_point");
    const sdk::Tensor post = ctx.input(9);
    if (post.present())
      SINGA_CHECK(dequantize_ && post.dtype() == SINGA_ONNX_FLOAT && post.numel() == N,
                  "y_bias must be float with " + std::to_string(N) + " values, with dequantize_output, got " +
                      shape_str(post.shape()));
    Shape ys = a.shape();
    ys.back() = N;
    if (a.ndim() == 1) ys = {N};
    sdk::Tensor y = ctx.output(0, ys, quantized && !dequantize_ ? qz.dtype() : SINGA_ONNX_FLOAT);
    Quant q;
    if (quantized) q = {qz.dtype() == SINGA_ONNX_INT8, qs.data<float>()[0], int32_t(qz.int_at(0))};
    q.dequantize = dequantize_;
    q.post_bias = post.present() ? post.data<float>() : nullptr;
    const int64_t rows = K ? a.numel() / K : sdk::numel(ys) / std::max<int64_t>(N, 1);
    auto* mult = static_cast<float*>(ctx.workspace(size_t(std::max<int64_t>(N, 1)) * sizeof(float)));
    const float a_scale = sa.data<float>()[0];
    for (int64_t n = 0; n < N; ++n) mult[n] = a_scale * sb.data<float>()[sb.numel() == 1 ? 0 : n];
    const float* bias_data = bias.present() ? bias.data<float>() : nullptr;
    const int32_t a_zero = ints(za)[0];
    if (fast_ && vnni_available() && K > 0 && N > 0) {
      std::unique_ptr<PackedB8> own;
      const PackedB8* pb = packed_.get();
      if (!pb || b.data_ptr() != b_data_ || pb->K != K || pb->N != N) {
        own = pack(b, zb);
        pb = own.get();
      }
      const bool a_s8 = a.dtype() == SINGA_ONNX_INT8;
      const uint8_t* a8 = static_cast<const uint8_t*>(a.data_ptr());
      if (a_s8) {
        auto* shifted = static_cast<uint8_t*>(ctx.workspace(size_t(a.numel())));
        shift_s8_to_u8(ctx, static_cast<const int8_t*>(a.data_ptr()), a.numel(), shifted);
        a8 = shifted;
      }
      QGemmOut out;
      out.scale = mult, out.bias = bias_data, out.ld = N;
      if (quantized) {
        out.q8 = y.data_ptr(), out.q_signed = q.is_signed, out.q_scale = q.scale, out.q_zero = q.zero;
        if (dequantize_) out.q8 = nullptr, out.y = y.data<float>(), out.q_float = true, out.post_bias = q.post_bias;
      } else {
        out.y = y.data<float>();
      }
      qgemm_u8s8(ctx, rows, a8, K, a_zero + (a_s8 ? 128 : 0), nullptr, *pb, out);
      return;
    }
    portable(ctx, a, a_zero, b, ints(zb), rows, K, N, mult, bias_data, quantized ? &q : nullptr, y.data_ptr());
  }

 private:
  static std::unique_ptr<PackedB8> pack(const sdk::Tensor& b, const sdk::Tensor& zb) {
    if (b.ndim() != 2 || (b.dtype() != SINGA_ONNX_INT8 && b.dtype() != SINGA_ONNX_UINT8)) return nullptr;
    if (zb.present() && (zb.dtype() != b.dtype() || zb.ndim() > 1 || (zb.numel() != 1 && zb.numel() != b.dim(1))))
      return nullptr;
    const std::vector<int32_t> z = ints(zb);
    auto p = std::make_unique<PackedB8>();
    pack_b8(*p, b.data_ptr(), b.dtype() == SINGA_ONNX_UINT8, b.dim(0), b.dim(1), b.dim(1), 1, z.data(),
            int64_t(z.size()));
    return p;
  }

  // The same sums with plain integer loops, row by row.
  static void portable(const sdk::Context& ctx, const sdk::Tensor& a, int32_t za, const sdk::Tensor& b,
                       const std::vector<int32_t>& zb, int64_t rows, int64_t K, int64_t N, const float* mult,
                       const float* bias, const Quant* q, void* y) {
    auto value = [](const sdk::Tensor& t, int64_t i) -> int32_t {
      return t.dtype() == SINGA_ONNX_UINT8 ? int32_t(t.data<uint8_t>()[i]) : int32_t(t.data<int8_t>()[i]);
    };
    ctx.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      std::vector<uint32_t> acc(size_t(std::max<int64_t>(N, 1)));
      for (int64_t r = r0; r < r1; ++r) {
        std::fill(acc.begin(), acc.end(), 0u);
        for (int64_t k = 0; k < K; ++k) {
          const uint32_t av = uint32_t(value(a, r * K + k) - za);
          for (int64_t n = 0; n < N; ++n)
            acc[size_t(n)] += av * uint32_t(value(b, k * N + n) - zb[zb.size() == 1 ? 0 : size_t(n)]);
        }
        for (int64_t n = 0; n < N; ++n) {
          float v = float(int32_t(acc[size_t(n)])) * mult[n];
          if (bias) v += bias[n];
          if (!q) {
            static_cast<float*>(y)[r * N + n] = v;
            continue;
          }
          float t = std::nearbyint(v / q->scale) + float(q->zero);
          if (t != t) t = float(q->zero);
          t = std::min(std::max(t, q->is_signed ? -128.f : 0.f), q->is_signed ? 127.f : 255.f);
          if (q->dequantize) {
            float d = (t - float(q->zero)) * q->scale;
            if (q->post_bias) d += q->post_bias[n];
            static_cast<float*>(y)[r * N + n] = d;
          } else if (q->is_signed)
            static_cast<int8_t*>(y)[r * N + n] = int8_t(t);
          else
            static_cast<uint8_t*>(y)[r * N + n] = uint8_t(t);
        }
      }
    });
  }

  bool fast_;
  bool dequantize_;
  std::unique_ptr<PackedB8> packed_;
  const void* b_data_ = nullptr;
};

}  // namespace

void register_qdq_matmul(sdk::Registrar& reg) {
  reg.kernel<QdqMatMulKernel>(kCpuDomain, kQdqMatMulOp, 1, 1, "cpu", {{"T1", 0, k8Bit}, {"T2", 3, k8Bit}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
