// The 8-bit elementwise steps between the QdqConvs of a QDQ model
// (passes/fuse_qdq_elementwise.cpp), as ai.singa.cpu ops (opset 1) that read and write the
// 8-bit values, with no float tensor in between:
//   QdqRequantize(x, x_scale, x_zero_point, y_scale, y_zero_point)
//     = QuantizeLinear(Act(DequantizeLinear(x)))
//   QdqAdd(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
//     = QuantizeLinear(Act(DequantizeLinear(a) + DequantizeLinear(b)))
//   DqAdd(a, a_scale, a_zero_point, b) = Act(DequantizeLinear(a) + b), b float
//     (a residual sum whose float result other nodes read too)
// with Act = Relu when the attribute activation is "Relu", else nothing;
// scales and zero points are scalars, a and b have one shape. Each block of
// elements goes through the same float steps as the separate nodes (the
// vector loops of qdq_convert.hpp, a float add, a max), so the results are
// theirs bit for bit.
#include "layouts.hpp"
#include "nn_common.hpp"
#include "qdq_convert.hpp"
#include "qdq_softmax.hpp"
#include "register.hpp"

#include <cpu_domain.hpp>

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

constexpr int64_t kBlock = 1024;  // elements per float buffer (on the stack)
constexpr int64_t kGrain = 1 << 14;

// A scalar scale and zero point of an 8-bit value.
struct QParams {
  float scale = 1.0f;
  int32_t zp = 0;
  int32_t type = SINGA_ONNX_UINT8;
};

class QdqElementwise : public NodeKernel {
 public:
  explicit QdqElementwise(const sdk::Node& node) : NodeKernel(node) {
    const std::string act = node.attr_string("activation", "");
    if (!act.empty() && act != "Relu") fail("unsupported activation " + act + " (only Relu)");
    relu_ = act == "Relu";
  }

 protected:
  // The scale at input `s` and the zero point at `s + 1` (absent: u8 0);
  // `x` is the value they describe (absent for the output's).
  QParams params(const sdk::Context& ctx, size_t s, const sdk::Tensor* x) const {
    QParams p;
    sdk::Tensor scale = required(ctx, s, "scale");
    SINGA_CHECK(scale.dtype() == SINGA_ONNX_FLOAT && scale.numel() == 1,
                "scales must be float scalars, got " + std::string(sdk::dtype_name(scale.dtype())) + " " +
                    shape_str(scale.shape()));
    p.scale = scale.data<float>()[0];
    SINGA_CHECK(p.scale != 0.0f && std::isfinite(p.scale), "scale must be finite and non-zero, got " +
                                                               std::to_string(p.scale));
    if (ctx.has_input(s + 1)) {
      sdk::Tensor z = ctx.input(s + 1);
      SINGA_CHECK((z.dtype() == SINGA_ONNX_UINT8 || z.dtype() == SINGA_ONNX_INT8) && z.numel() == 1,
                  "zero points must be u8 or s8 scalars, got " + std::string(sdk::dtype_name(z.dtype())) + " " +
                      shape_str(z.shape()));
      p.type = z.dtype();
      p.zp = int32_t(z.int_at(0));
    }
    if (x) SINGA_CHECK(x->dtype() == p.type, std::string("a zero point's type differs from its value's ") +
                                                 sdk::dtype_name(x->dtype()));
    return p;
  }

  // n values of type `type` at x (bytes) to float.
  static void dequantize(int32_t type, const void* x, float* out, int64_t n, const QParams& p) {
    if (type == SINGA_ONNX_UINT8)
      qdq::dequantize(static_cast<const uint8_t*>(x), out, n, p.scale, p.zp);
    else
      qdq::dequantize(static_cast<const int8_t*>(x), out, n, p.scale, p.zp);
  }
  static void dequantize(const sdk::Tensor& t, int64_t at, float* out, int64_t n, const QParams& p) {
    dequantize(t.dtype(), static_cast<const uint8_t*>(t.data_ptr()) + at, out, n, p);
  }
  // The activation, then n values quantized to p.type at y (bytes).
  void finish(float* v, int64_t n, void* y, const QParams& p) const {
    if (relu_)
      for (int64_t i = 0; i < n; ++i) v[i] = std::max(v[i], 0.0f);
    if (p.type == SINGA_ONNX_UINT8)
      qdq::quantize(v, static_cast<uint8_t*>(y), n, p.scale, p.zp);
    else
      qdq::quantize(v, static_cast<int8_t*>(y), n, p.scale, p.zp);
  }
  void finish(float* v, int64_t n, sdk::Tensor& y, int64_t at, const QParams& p) const {
    finish(v, n, static_cast<uint8_t*>(y.data_ptr()) + at, p);
  }

  bool relu_ = false;
};

// y = table[x]: 256 entries, each computed as QuantizeLinear(Act(DequantizeLinear(v))).
class QdqRequantize : public QdqElementwise {
 public:
  using QdqElementwise::QdqElementwise;
  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    const QParams px = params(ctx, 1, &x), py = params(ctx, 3, nullptr);
    sdk::Tensor y = ctx.output(0, x.shape(), py.type);
    // The output depends on the input byte alone: the 256 results, computed
    // by the same float steps, then looked up.
    uint8_t in[256], table[256];
    for (int v = 0; v < 256; ++v) in[v] = uint8_t(v);
    float buf[256];
    dequantize(x.dtype(), in, buf, 256, px);
    finish(buf, 256, table, py);
    const uint8_t* px8 = static_cast<const uint8_t*>(x.data_ptr());
    uint8_t* py8 = static_cast<uint8_t*>(y.data_ptr());
    ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) { qdq::lookup_bytes(px8 + b, py8 + b, e - b, table); });
  }
};

class QdqAdd : public QdqElementwise {
 public:
  using QdqElementwise::QdqElementwise;
  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "a"), b = required(ctx, 3, "b");
    SINGA_CHECK(a.shape() == b.shape(), "a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) +
                                            " must have one shape");
    const QParams pa = params(ctx, 1, &a), pb = params(ctx, 4, &b), py = params(ctx, 6, nullptr);
    sdk::Tensor y = ctx.output(0, a.shape(), py.type);
    ctx.parallel_for(a.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      float fa[kBlock], fb[kBlock];
      for (int64_t i = lo; i < hi; i += kBlock) {
        const int64_t n = std::min(kBlock, hi - i);
        dequantize(a, i, fa, n, pa);
        dequantize(b, i, fb, n, pb);
        for (int64_t k = 0; k < n; ++k) fa[k] += fb[k];
        finish(fa, n, y, i, py);
      }
    });
  }
};

class DqAdd : public QdqElementwise {
 public:
  using QdqElementwise::QdqElementwise;
  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "a"), b = required(ctx, 3, "b");
    SINGA_CHECK(a.shape() == b.shape(), "a " + shape_str(a.shape()) + " and b " + shape_str(b.shape()) +
                                            " must have one shape");
    SINGA_CHECK(b.dtype() == SINGA_ONNX_FLOAT, std::string("b must be float, got ") + sdk::dtype_name(b.dtype()));
    const QParams pa = params(ctx, 1, &a);
    sdk::Tensor y = ctx.output(0, a.shape(), SINGA_ONNX_FLOAT);
    ctx.parallel_for(a.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; i += kBlock) {
        const int64_t n = std::min(kBlock, hi - i);
        float* out = y.data<float>() + i;
        const float* pb = b.data<float>() + i;
        dequantize(a, i, out, n, pa);
        for (int64_t k = 0; k < n; ++k) out[k] += pb[k];
        if (relu_)
          for (int64_t k = 0; k < n; ++k) out[k] = std::max(out[k], 0.0f);
      }
    });
  }
};

}  // namespace

void register_qdq_elementwise(sdk::Registrar& reg) {
  const uint64_t q8 = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);
  // Elementwise: any layout, as long as inputs and output share it (the pass sees to that).
  reg.kernel<QdqRequantize>(ops::kCpuDomain, "QdqRequantize", 1, 1, "cpu", {{"T1", 0, q8}},
                            {{0, kChannelsLastLayout}, {-1, kChannelsLastLayout}});
  reg.kernel<QdqAdd>(ops::kCpuDomain, "QdqAdd", 1, 1, "cpu", {{"T1", 0, q8}, {"T2", 3, q8}},
                     {{0, kChannelsLastLayout}, {3, kChannelsLastLayout}, {-1, kChannelsLastLayout}});
  reg.kernel<DqAdd>(ops::kCpuDomain, "DqAdd", 1, 1, "cpu", {{"T1", 0, q8}, {"T2", 3, bit(SINGA_ONNX_FLOAT)}});
  register_qdq_softmax(reg);  // the attention score step (qdq_softmax.cpp)
}

}  // namespace nn
}  // namespace singa
