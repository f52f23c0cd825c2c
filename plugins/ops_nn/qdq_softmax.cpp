// QdqSoftmax: the score step of a QDQ transformer's attention
// (passes/fuse_qdq_softmax.cpp) as one ai.singa.cpu op (opset 1):
//   QdqSoftmax(x, x_scale, x_zero_point, y_scale, y_zero_point[, mask])
//     = QuantizeLinear(Softmax(DequantizeLinear(x) <op> c [+ mask], axis=-1))
// with <op> Div or Mul by the float attribute `c` (attribute `scale_op`:
// "Div", "Mul" or "" for none), scalar scales and zero points and a float
// mask that broadcasts into x's shape. Each row goes through the separate
// nodes' float steps in a buffer on the stack (the same dequantize and
// quantize loops, one float divide or multiply and add per element, the
// Softmax op's AVX-512 row), so the 8-bit probabilities are the unfused
// graph's; only the four float score tensors between the nodes are gone.
#include "nn_common.hpp"
#include "qdq_convert.hpp"
#include "qdq_softmax.hpp"

#include "../ops_reduce/softmax_f32.hpp"

#include <cpu_domain.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace singa {
namespace nn {
namespace {

constexpr int64_t kMaxRow = 1 << 14;  // floats in the per-row stack buffer

struct QParams {
  float scale = 1.0f;
  int32_t zp = 0;
  int32_t type = SINGA_ONNX_UINT8;
};

enum class Op { kNone, kDiv, kMul };

// v = v <op> c [+ m[i * ms]], one IEEE divide or multiply and add per element
// as the separate Div/Mul and Add nodes compute them.
#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
void scale_add_row_avx512(float* v, int64_t n, Op op, float c, const float* m, int64_t ms) {
  const __m512 cv = _mm512_set1_ps(c);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(k, v + i);
    if (op == Op::kDiv) x = _mm512_div_ps(x, cv);
    if (op == Op::kMul) x = _mm512_mul_ps(x, cv);
    if (m) x = _mm512_add_ps(x, ms == 1 ? _mm512_maskz_loadu_ps(k, m + i) : _mm512_set1_ps(m[0]));
    _mm512_mask_storeu_ps(v + i, k, x);
  }
}
SINGA_AVX512_END
#endif

void scale_add_row(float* v, int64_t n, Op op, float c, const float* m, int64_t ms, bool avx) {
#ifdef SINGA_AVX512_BEGIN
  if (avx) return scale_add_row_avx512(v, n, op, c, m, ms);
#endif
  (void)avx;
  for (int64_t i = 0; i < n; ++i) {
    float x = v[i];
    if (op == Op::kDiv) x = x / c;
    if (op == Op::kMul) x = x * c;
    v[i] = m ? x + m[i * ms] : x;
  }
}

// The portable softmax row when AVX-512 is missing: max, exp in float, sum in double.
void softmax_row_portable(float* v, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(v[i] = std::exp(v[i] - mx));
  const float inv = float(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) v[i] *= inv;
}

class QdqSoftmax : public NodeKernel {
 public:
  explicit QdqSoftmax(const sdk::Node& node) : NodeKernel(node) {
    op_ = node.attr_string("scale_op", "");
    if (!op_.empty() && op_ != "Div" && op_ != "Mul") fail("scale_op must be Div, Mul or empty, got " + op_);
    c_ = node.attr_float("c", 1.0f);
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = required(ctx, 0, "x");
    const QParams px = params(ctx, 1, &x), py = params(ctx, 3, nullptr);
    const std::vector<int64_t> xs = x.shape();
    SINGA_CHECK(!xs.empty() && xs.back() > 0, "x must have a non-empty last axis, got " + shape_str(xs));
    const int64_t n = xs.back(), rank = int64_t(xs.size());
    SINGA_CHECK(n <= kMaxRow, "rows longer than " + std::to_string(kMaxRow) + " are not supported");
    const int64_t rows = x.numel() / n;

    // Mask offsets by broadcasting: a stride per axis of x, 0 where the mask's extent is 1.
    const sdk::Tensor mask = ctx.has_input(5) ? ctx.input(5) : sdk::Tensor();
    std::vector<int64_t> mstride(size_t(rank), 0);
    if (mask.present()) {
      SINGA_CHECK(mask.dtype() == SINGA_ONNX_FLOAT, "mask must be float");
      const std::vector<int64_t> ms = mask.shape();
      SINGA_CHECK(int64_t(ms.size()) <= rank, "mask " + shape_str(ms) + " does not broadcast into " + shape_str(xs));
      int64_t st = 1;
      for (int64_t k = 1; k <= int64_t(ms.size()); ++k) {
        const int64_t md = ms[ms.size() - size_t(k)], xd = xs[size_t(rank - k)];
        SINGA_CHECK(md == xd || md == 1, "mask " + shape_str(ms) + " does not broadcast into " + shape_str(xs));
        mstride[size_t(rank - k)] = md == 1 ? 0 : st;
        st *= md;
      }
    }
    sdk::Tensor y = ctx.output(0, xs, py.type);
    const uint8_t* xb = static_cast<const uint8_t*>(x.data_ptr());
    uint8_t* yb = static_cast<uint8_t*>(y.data_ptr());
    const float* mp = mask.present() ? mask.data<float>() : nullptr;
    const bool avx = vec::unary_avx512();
    const Op op = op_ == "Div" ? Op::kDiv : op_ == "Mul" ? Op::kMul : Op::kNone;
    ctx.parallel_for(rows, std::max<int64_t>(1, 4096 / n), [&](int64_t lo, int64_t hi) {
      float v[kMaxRow];
      for (int64_t r = lo; r < hi; ++r) {
        if (px.type == SINGA_ONNX_UINT8)
          qdq::dequantize(xb + r * n, v, n, px.scale, px.zp);
        else
          qdq::dequantize(reinterpret_cast<const int8_t*>(xb) + r * n, v, n, px.scale, px.zp);
        int64_t off = 0;
        if (mp) {
          int64_t rem = r;
          for (int64_t k = rank - 2; k >= 0; --k) {
            off += (rem % xs[size_t(k)]) * mstride[size_t(k)];
            rem /= xs[size_t(k)];
          }
        }
        scale_add_row(v, n, op, c_, mp ? mp + off : nullptr, mstride[size_t(rank - 1)], avx);
#ifdef SINGA_AVX512_BEGIN
        if (avx)
          ops::reduce::softmax_row_avx512<false>(v, v, n);
        else
#endif
          softmax_row_portable(v, n);
        if (py.type == SINGA_ONNX_UINT8)
          qdq::quantize(v, yb + r * n, n, py.scale, py.zp);
        else
          qdq::quantize(v, reinterpret_cast<int8_t*>(yb) + r * n, n, py.scale, py.zp);
      }
    });
  }

 private:
  QParams params(const sdk::Context& ctx, size_t s, const sdk::Tensor* x) const {
    QParams p;
    const sdk::Tensor scale = required(ctx, s, "scale");
    SINGA_CHECK(scale.dtype() == SINGA_ONNX_FLOAT && scale.numel() == 1, "scales must be float scalars");
    p.scale = scale.data<float>()[0];
    SINGA_CHECK(p.scale != 0.0f && std::isfinite(p.scale), "scale must be finite and non-zero");
    if (ctx.has_input(s + 1)) {
      const sdk::Tensor z = ctx.input(s + 1);
      SINGA_CHECK((z.dtype() == SINGA_ONNX_UINT8 || z.dtype() == SINGA_ONNX_INT8) && z.numel() == 1,
                  "zero points must be u8 or s8 scalars");
      p.type = z.dtype();
      p.zp = int32_t(z.int_at(0));
    }
    if (x) SINGA_CHECK(x->dtype() == p.type, "x's type differs from its zero point's");
    return p;
  }

  std::string op_;
  float c_ = 1.0f;
};

}  // namespace

void register_qdq_softmax(sdk::Registrar& reg) {
  const uint64_t q8 = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);
  reg.kernel<QdqSoftmax>(ops::kCpuDomain, "QdqSoftmax", 1, 1, "cpu", {{"T1", 0, q8}});
}

}  // namespace nn
}  // namespace singa
