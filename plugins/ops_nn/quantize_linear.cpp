// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: the affine
// float <-> 8-bit mappings of ONNX's QDQ format. Rounding is to nearest with
// ties to even and results saturate to the integer type's range.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace singa {
namespace nn {
namespace {

// How a scale/zero-point pair spreads over x: one pair for everything, or
// one per index of `axis` (with `inner` elements between consecutive ones).
struct QuantLayout {
  int64_t channels = 1;
  int64_t inner = 1;
  // Channel of flat element i.
  int64_t channel(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

class QuantKernelBase : public NodeKernel {
 public:
  explicit QuantKernelBase(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 1)) {
    // Opset 10 knows only per-tensor scales; the axis attribute came in 13.
    if (node.opset() < 13 && node.has_attr("axis")) node.fail("attribute axis needs opset 13 or later");
  }

 protected:
  // Checks that scale (and zero point, when given) are a scalar or a 1-D
  // tensor of x's size along `axis`, and returns how they map onto x.
  QuantLayout layout(const sdk::Tensor& x, const sdk::Tensor& scale, const sdk::Tensor& zero_point,
                     const char* scale_name, const char* zp_name) const {
    QuantLayout l;
    if (zero_point.present() && zero_point.shape() != scale.shape())
      fail(std::string(zp_name) + " shape " + shape_str(zero_point.shape()) + " differs from " + scale_name + " shape " +
           shape_str(scale.shape()));
    bool scalar = scale.ndim() == 0 || (scale.ndim() == 1 && scale.dim(0) == 1);
    if (scalar) return l;
    if (scale.ndim() != 1)
      fail(std::string(scale_name) + " must be a scalar or a 1-D tensor, got shape " + shape_str(scale.shape()));
    if (opset() < 13) fail(std::string(scale_name) + " must be a scalar before opset 13, got shape " + shape_str(scale.shape()));
    int64_t r = x.ndim();
    if (axis_ < -r || axis_ >= r)
      fail("axis " + std::to_string(axis_) + " is out of range for input of rank " + std::to_string(r));
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (scale.dim(0) != x.dim(int(axis)))
      fail(std::string(scale_name) + " has " + std::to_string(scale.dim(0)) + " elements but input dimension " +
           std::to_string(axis) + " is " + std::to_string(x.dim(int(axis))));
    l.channels = scale.dim(0);
    for (int64_t d = axis + 1; d < r; ++d) l.inner *= x.dim(int(d));
    return l;
  }

  void check_scales(const float* scale, int64_t n, const char* name) const {
    for (int64_t i = 0; i < n; ++i)
      if (scale[i] == 0.0f || !std::isfinite(scale[i]))
        fail(std::string(name) + " must be finite and non-zero, got " + std::to_string(scale[i]));
  }

 private:
  int64_t axis_;
};

// x / scale rounded to nearest even, plus the zero point, clamped to Q.
template <class Q, class F>
inline Q quantize_one(F x, F scale, int32_t zero_point) {
  F v = std::nearbyint(x / scale) + F(zero_point);
  v = std::min(std::max(v, F(std::numeric_limits<Q>::min())), F(std::numeric_limits<Q>::max()));
  // NaN has no integer image; it maps to the zero point, the image of 0.
  return std::isnan(v) ? Q(zero_point) : Q(v);
}

class QuantizeLinear : public QuantKernelBase {
 public:
  explicit QuantizeLinear(const sdk::Node& node) : QuantKernelBase(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    sdk::Tensor scale = required(ctx, 1, "y_scale");
    sdk::Tensor zp = ctx.input(2);
    check(scale.dtype() == SINGA_ONNX_FLOAT, std::string("y_scale must be float, got ") + sdk::dtype_name(scale.dtype()));
    QuantLayout l = layout(x, scale, zp, "y_scale", "y_zero_point");
    const float* ps = scale.data<float>();
    check_scales(ps, l.channels, "y_scale");
    int32_t out_type = zp.present() ? zp.dtype() : SINGA_ONNX_UINT8;
    sdk::Tensor y = ctx.output(0, x.shape(), out_type);
    int64_t n = x.numel();
    dispatch_among<uint8_t, int8_t>(out_type, where(), [&](auto qtag) {
      using Q = decltype(qtag);
      const Q* pz = zp.present() ? zp.data<Q>() : nullptr;
      Q* py = y.data<Q>();
      dispatch_among<float, int32_t>(x.dtype(), where(), [&](auto xtag) {
        using X = decltype(xtag);
        // int32 inputs divide in double so that large values keep their digits.
        using F = std::conditional_t<std::is_same<X, float>::value, float, double>;
        const X* px = x.data<X>();
        ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            int64_t c = l.channel(i);
            py[i] = quantize_one<Q, F>(F(px[i]), F(ps[c]), pz ? int32_t(pz[c]) : 0);
          }
        });
      });
    });
  }
};

class DequantizeLinear : public QuantKernelBase {
 public:
  explicit DequantizeLinear(const sdk::Node& node) : QuantKernelBase(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    sdk::Tensor scale = required(ctx, 1, "x_scale");
    sdk::Tensor zp = ctx.input(2);
    check(scale.dtype() == SINGA_ONNX_FLOAT, std::string("x_scale must be float, got ") + sdk::dtype_name(scale.dtype()));
    if (zp.present())
      check(zp.dtype() == x.dtype(), std::string("x_zero_point has type ") + sdk::dtype_name(zp.dtype()) +
                                         " but x has type " + sdk::dtype_name(x.dtype()));
    QuantLayout l = layout(x, scale, zp, "x_scale", "x_zero_point");
    const float* ps = scale.data<float>();
    sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_FLOAT);
    float* py = y.data<float>();
    int64_t n = x.numel();
    dispatch_among<uint8_t, int8_t, int32_t>(x.dtype(), where(), [&](auto tag) {
      using X = decltype(tag);
      const X* px = x.data<X>();
      const X* pz = zp.present() ? zp.data<X>() : nullptr;
      // int32 data comes from integer accumulators whose zero point is 0 by
      // construction; anything else is a malformed model.
      if (std::is_same<X, int32_t>::value && pz)
        for (int64_t c = 0; c < l.channels; ++c)
          check(pz[c] == 0, "x_zero_point must be 0 for int32 input, got " + std::to_string(int64_t(pz[c])));
      ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          int64_t c = l.channel(i);
          py[i] = (float(px[i]) - (pz ? float(pz[c]) : 0.0f)) * ps[c];
        }
      });
    });
  }
};

// Scale and zero point chosen so that [min(x, 0), max(x, 0)] covers [0, 255].
class DynamicQuantizeLinear : public NodeKernel {
 public:
  explicit DynamicQuantizeLinear(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    check(x.dtype() == SINGA_ONNX_FLOAT, std::string("x must be float, got ") + sdk::dtype_name(x.dtype()));
    int64_t n = x.numel();
    const float* px = x.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      check(!std::isnan(px[i]), "x contains NaN at element " + std::to_string(i));
      lo = std::min(lo, px[i]);
      hi = std::max(hi, px[i]);
    }
    check(std::isfinite(lo) && std::isfinite(hi), "x contains an infinite value");
    const float qmin = 0.0f, qmax = 255.0f;
    float scale = (hi - lo) / (qmax - qmin);
    // An all-zero input has no range; every value then quantizes to 0.
    uint8_t zp = 0;
    if (scale > 0.0f) zp = uint8_t(std::min(std::max(std::nearbyint(qmin - lo / scale), qmin), qmax));

    sdk::Tensor y = ctx.output(0, x.shape(), SINGA_ONNX_UINT8);
    sdk::Tensor ys = ctx.output(1, {}, SINGA_ONNX_FLOAT);
    sdk::Tensor yz = ctx.output(2, {}, SINGA_ONNX_UINT8);
    *ys.data<float>() = scale;
    *yz.data<uint8_t>() = zp;
    uint8_t* py = y.data<uint8_t>();
    ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = scale > 0.0f ? quantize_one<uint8_t, float>(px[i], scale, zp) : uint8_t(0);
    });
  }
};

constexpr uint64_t kQuantTypes = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);

}  // namespace

void register_quantize_linear(sdk::Registrar& reg) {
  const uint64_t qin = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_INT32);
  const uint64_t f32 = bit(SINGA_ONNX_FLOAT);
  // 10 is per-tensor only; 13 adds per-axis scales.
  for (auto range : {std::pair<int, int>{10, 12}, {13, 17}}) {
    reg.kernel<QuantizeLinear>("", "QuantizeLinear", range.first, range.second, "cpu",
                               {{"T1", 0, qin}, {"S", 1, f32}, {"T2", 2, kQuantTypes}});
    reg.kernel<DequantizeLinear>("", "DequantizeLinear", range.first, range.second, "cpu",
                                 {{"T", 0, kQuantTypes | bit(SINGA_ONNX_INT32)}, {"S", 1, f32},
                                  {"Tz", 2, kQuantTypes | bit(SINGA_ONNX_INT32)}});
  }
  reg.kernel<DynamicQuantizeLinear>("", "DynamicQuantizeLinear", 11, 17, "cpu", {{"T1", 0, f32}});
}

}  // namespace nn
}  // namespace singa
