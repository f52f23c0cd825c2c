// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: the affine
// float <-> 8-bit mappings of ONNX's QDQ format. Rounding is to nearest with
// ties to even and results saturate to the integer type's range.
#include "nn_common.hpp"
#include "qdq_convert.hpp"
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

// Elements per task when a conversion is split over the CPU pool.
constexpr int64_t kGrain = 1 << 14;

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
    SINGA_CHECK(scale.dtype() == SINGA_ONNX_FLOAT,
                std::string("y_scale must be float, got ") + sdk::dtype_name(scale.dtype()));
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
        if constexpr (std::is_same<X, float>::value) {
          ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
            qdq::for_channel_runs(b, e, l.channels, l.inner, [&](int64_t i, int64_t len, int64_t c) {
              qdq::quantize(px + i, py + i, len, ps[c], pz ? int32_t(pz[c]) : 0);
            });
          });
          return;
        }
        ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
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
    SINGA_CHECK(scale.dtype() == SINGA_ONNX_FLOAT,
                std::string("x_scale must be float, got ") + sdk::dtype_name(scale.dtype()));
    if (zp.present())
      SINGA_CHECK(zp.dtype() == x.dtype(), std::string("x_zero_point has type ") + sdk::dtype_name(zp.dtype()) +
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
          SINGA_CHECK(pz[c] == 0, "x_zero_point must be 0 for int32 input, got " + std::to_string(int64_t(pz[c])));
      if constexpr (!std::is_same<X, int32_t>::value) {
        ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
          qdq::for_channel_runs(b, e, l.channels, l.inner, [&](int64_t i, int64_t len, int64_t c) {
            qdq::dequantize(px + i, py + i, len, ps[c], pz ? int32_t(pz[c]) : 0);
          });
        });
        return;
      }
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
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
    SINGA_CHECK(x.dtype() == SINGA_ONNX_FLOAT, std::string("x must be float, got ") + sdk::dtype_name(x.dtype()));
    int64_t n = x.numel();
    const float* px = x.data<float>();
    // Per-chunk ranges on the pool (vectorized, NaN counted apart).
    const int64_t grain = 1 << 15, chunks = (n + grain - 1) / grain;
    std::vector<float> los(size_t(std::max<int64_t>(chunks, 1)), 0.0f), his(los.size(), 0.0f);
    std::vector<int64_t> nans(los.size(), 0);
    ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c)
        qdq::range_with_zero(px + c * grain, std::min(n, (c + 1) * grain) - c * grain, los[size_t(c)], his[size_t(c)],
                             nans[size_t(c)]);
    });
    float lo = 0.0f, hi = 0.0f;
    for (size_t c = 0; c < los.size(); ++c) {
      check(nans[c] == 0, "x contains NaN");
      lo = std::min(lo, los[c]);
      hi = std::max(hi, his[c]);
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
      if (scale > 0.0f)
        qdq::quantize_u8(px + b, py + b, e - b, scale, zp);
      else
        std::fill(py + b, py + e, uint8_t(0));
    });
  }
};

constexpr uint64_t kQuantTypes = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);

// ---------------------------------------------------------------- opset 19+
//
// QuantizeLinear/DequantizeLinear-19..25: float16/bfloat16 inputs and
// scales, float8 (19), int16/uint16/int4/uint4 and blocked scales (21),
// float4e2m1 (23), float8e8m0 scales (24), int2/uint2 (25). Integer outputs
// round to nearest even and saturate; float8 outputs round to nearest even
// and saturate unless `saturate` is 0; float4 outputs always saturate.

// Integer range of a quantized integer type.
bool int_range(int32_t t, int32_t& lo, int32_t& hi) {
  switch (t) {
    case SINGA_ONNX_UINT8: lo = 0; hi = 255; return true;
    case SINGA_ONNX_INT8: lo = -128; hi = 127; return true;
    case SINGA_ONNX_UINT16: lo = 0; hi = 65535; return true;
    case SINGA_ONNX_INT16: lo = -32768; hi = 32767; return true;
    case SINGA_ONNX_UINT4: lo = 0; hi = 15; return true;
    case SINGA_ONNX_INT4: lo = -8; hi = 7; return true;
    case SINGA_ONNX_UINT2: lo = 0; hi = 3; return true;
    case SINGA_ONNX_INT2: lo = -2; hi = 1; return true;
    case SINGA_ONNX_INT32: lo = INT32_MIN; hi = INT32_MAX; return true;
    default: return false;
  }
}

bool is_packed(int32_t t) { return (sdk::kPackedTypes & bit(t)) != 0; }
bool is_small_float(int32_t t) { return t == SINGA_ONNX_FLOAT4E2M1 || sdk::minifloat::is_float8(t); }

// Element i of a quantized tensor (ints, packed ints, float8, float4) as a
// float (exact for all of them but int32 beyond 2^24).
float quant_value(const sdk::Tensor& t, int64_t i) {
  const int32_t d = t.dtype();
  const void* p = t.data_ptr();
  switch (d) {
    case SINGA_ONNX_UINT8: return float(static_cast<const uint8_t*>(p)[i]);
    case SINGA_ONNX_INT8: return float(static_cast<const int8_t*>(p)[i]);
    case SINGA_ONNX_UINT16: return float(static_cast<const uint16_t*>(p)[i]);
    case SINGA_ONNX_INT16: return float(static_cast<const int16_t*>(p)[i]);
    case SINGA_ONNX_INT32: return float(static_cast<const int32_t*>(p)[i]);
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2: {
      const int bits = sdk::dtype_bits(d);
      return float(sdk::packed_int(sdk::packed_get(p, i, bits), bits, d == SINGA_ONNX_INT4 || d == SINGA_ONNX_INT2));
    }
    case SINGA_ONNX_FLOAT4E2M1: return sdk::minifloat::from_float4e2m1(sdk::packed_get(p, i, 4));
    default:
      if (sdk::minifloat::is_float8(d)) return sdk::minifloat::from_float8(static_cast<const uint8_t*>(p)[i], d);
      sdk::fail(std::string("unsupported quantized element type ") + sdk::dtype_name(d));
  }
}

// A scale tensor (float, float16, bfloat16, float8e8m0) as floats.
std::vector<float> scale_values(const sdk::Tensor& t, const char* name) {
  std::vector<float> out(size_t(t.numel()));
  const void* p = t.data_ptr();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case SINGA_ONNX_FLOAT: out[i] = static_cast<const float*>(p)[i]; break;
      case SINGA_ONNX_FLOAT16: out[i] = float(static_cast<const half*>(p)[i]); break;
      case SINGA_ONNX_BFLOAT16: out[i] = float(static_cast<const bfloat16*>(p)[i]); break;
      case SINGA_ONNX_FLOAT8E8M0: out[i] = sdk::minifloat::from_float8(static_cast<const uint8_t*>(p)[i], SINGA_ONNX_FLOAT8E8M0); break;
      default: sdk::fail(std::string(name) + " has unsupported element type " + sdk::dtype_name(t.dtype()));
    }
  }
  return out;
}

// Which scale (and zero point) element serves each element of x: one for
// all, one per index of `axis`, or one per block of `block` indices of
// `axis` (the scale then has x's rank, with ceil(dim / block) along axis).
struct QuantMap {
  bool per_tensor = true;
  int64_t inner = 1, axis_dim = 1, scale_axis_dim = 1, block = 0;
  int64_t index(int64_t i) const {
    if (per_tensor) return 0;
    const int64_t in = i % inner, t = i / inner, a = t % axis_dim;
    if (block == 0) return a;
    return ((t / axis_dim) * scale_axis_dim + a / block) * inner + in;
  }
};

class QdqBase : public NodeKernel {
 public:
  explicit QdqBase(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", 1)), block_(node.attr_int("block_size", 0)) {
    if (block_ < 0) fail("attribute block_size must be >= 0, got " + std::to_string(block_));
  }

 protected:
  QuantMap map(const sdk::Tensor& x, const sdk::Tensor& scale, const sdk::Tensor& zp, const char* scale_name,
               const char* zp_name) const {
    QuantMap m;
    const bool scalar = scale.numel() == 1 && scale.ndim() <= 1;
    if (zp.present()) {
      const bool zp_scalar = zp.numel() == 1 && zp.ndim() <= 1;
      if (!(zp.shape() == scale.shape() || (scalar && zp_scalar)))
        fail(std::string(zp_name) + " shape " + shape_str(zp.shape()) + " differs from " + scale_name + " shape " +
             shape_str(scale.shape()));
    }
    if (block_ == 0 && scalar) return m;
    const int64_t r = x.ndim();
    if (axis_ < -r || axis_ >= r)
      fail("axis " + std::to_string(axis_) + " is out of range for input of rank " + std::to_string(r));
    const int axis = int(axis_ < 0 ? axis_ + r : axis_);
    m.per_tensor = false;
    m.axis_dim = x.dim(axis);
    for (int d = axis + 1; d < r; ++d) m.inner *= x.dim(d);
    if (block_ == 0) {
      if (scale.ndim() != 1 || scale.dim(0) != x.dim(axis))
        fail(std::string(scale_name) + " must be a scalar or a 1-D tensor of " + std::to_string(x.dim(axis)) +
             " elements (input dimension " + std::to_string(axis) + "), got shape " + shape_str(scale.shape()));
      m.scale_axis_dim = x.dim(axis);
      return m;
    }
    // Blocked: same rank, same dims except along axis.
    bool ok = scale.ndim() == r;
    for (int d = 0; ok && d < r; ++d)
      ok = d == axis ? scale.dim(d) == (x.dim(d) + block_ - 1) / block_ : scale.dim(d) == x.dim(d);
    if (!ok)
      fail(std::string(scale_name) + " shape " + shape_str(scale.shape()) + " does not fit input shape " +
           shape_str(x.shape()) + " with block_size " + std::to_string(block_) + " along axis " + std::to_string(axis));
    m.block = block_;
    m.scale_axis_dim = scale.dim(axis);
    return m;
  }

 private:
  int64_t axis_;
  int64_t block_;
};

class QuantizeLinear19 : public QdqBase {
 public:
  explicit QuantizeLinear19(const sdk::Node& node)
      : QdqBase(node), saturate_(node.attr_int("saturate", 1) != 0), output_dtype_(int32_t(node.attr_int("output_dtype", 0))) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    sdk::Tensor scale = required(ctx, 1, "y_scale");
    sdk::Tensor zp = ctx.input(2);
    int32_t out_type = output_dtype_ ? output_dtype_ : SINGA_ONNX_UINT8;
    if (zp.present()) {
      if (output_dtype_ && zp.dtype() != output_dtype_)
        fail(std::string("output_dtype ") + sdk::dtype_name(output_dtype_) + " differs from y_zero_point's type " +
             sdk::dtype_name(zp.dtype()));
      out_type = zp.dtype();
    }
    int32_t lo = 0, hi = 0;
    const bool is_int = int_range(out_type, lo, hi) && out_type != SINGA_ONNX_INT32;
    if (!is_int && !is_small_float(out_type))
      fail(std::string("cannot quantize to ") + sdk::dtype_name(out_type));
    const QuantMap m = map(x, scale, zp, "y_scale", "y_zero_point");
    const std::vector<float> s = scale_values(scale, "y_scale");
    for (float v : s)
      SINGA_CHECK(v != 0.0f && std::isfinite(v), "y_scale must be finite and non-zero, got " + std::to_string(v));
    std::vector<float> z(s.size(), 0.0f);
    if (zp.present())
      for (size_t i = 0; i < z.size(); ++i) z[i] = quant_value(zp, int64_t(i));

    const int64_t n = x.numel();
    sdk::Tensor y = ctx.output(0, x.shape(), out_type);
    // float to 8 bits, per tensor or per axis: the vector loops.
    if (x.dtype() == SINGA_ONNX_FLOAT && m.block == 0 && (out_type == SINGA_ONNX_UINT8 || out_type == SINGA_ONNX_INT8)) {
      const float* px = x.data<float>();
      const int64_t channels = m.per_tensor ? 1 : m.axis_dim;
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        qdq::for_channel_runs(b, e, channels, m.inner, [&](int64_t i, int64_t len, int64_t c) {
          const float sc = s[size_t(c)];
          const int32_t zc = int32_t(z[size_t(c)]);
          if (out_type == SINGA_ONNX_UINT8)
            qdq::quantize(px + i, y.data<uint8_t>() + i, len, sc, zc);
          else
            qdq::quantize(px + i, y.data<int8_t>() + i, len, sc, zc);
        });
      });
      return;
    }
    dispatch_among<float, half, bfloat16, int32_t>(x.dtype(), where(), [&](auto tag) {
      using X = decltype(tag);
      const X* px = x.data<X>();
      // The quantized value of element i: the integer, or the small float's code.
      auto q = [&](int64_t i) -> int32_t {
        const int64_t c = m.index(i);
        if (is_int) {
          double v;
          if (std::is_same<X, int32_t>::value)
            v = std::nearbyint(double(px[i]) / double(s[size_t(c)]));  // int32 keeps its digits in double
          else
            v = double(std::nearbyint(float(px[i]) / s[size_t(c)]));
          v += double(z[size_t(c)]);
          if (std::isnan(v)) return int32_t(z[size_t(c)]);  // NaN maps to the zero point, the image of 0
          return int32_t(std::min(std::max(v, double(lo)), double(hi)));
        }
        const double v = double(float(px[i]) / s[size_t(c)] + z[size_t(c)]);
        return out_type == SINGA_ONNX_FLOAT4E2M1 ? sdk::minifloat::to_float4e2m1(v)
                                                  : sdk::minifloat::to_float8(v, out_type, saturate_);
      };
      void* py = y.data_ptr();
      if (is_packed(out_type)) {
        const int bits = sdk::dtype_bits(out_type), per = 8 / bits;
        const uint32_t mask = (1u << bits) - 1;
        const int64_t nbytes = int64_t(sdk::dtype_nbytes(out_type, n));
        uint8_t* out = static_cast<uint8_t*>(py);
        ctx.parallel_for(nbytes, 4096, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) {
            uint32_t byte = 0;
            for (int k = 0; k < per && j * per + k < n; ++k) byte |= (uint32_t(q(j * per + k)) & mask) << (k * bits);
            out[j] = uint8_t(byte);
          }
        });
        return;
      }
      ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
        switch (out_type) {
          case SINGA_ONNX_INT8: for (int64_t i = b; i < e; ++i) static_cast<int8_t*>(py)[i] = int8_t(q(i)); break;
          case SINGA_ONNX_INT16: for (int64_t i = b; i < e; ++i) static_cast<int16_t*>(py)[i] = int16_t(q(i)); break;
          case SINGA_ONNX_UINT16: for (int64_t i = b; i < e; ++i) static_cast<uint16_t*>(py)[i] = uint16_t(q(i)); break;
          default: for (int64_t i = b; i < e; ++i) static_cast<uint8_t*>(py)[i] = uint8_t(q(i)); break;  // uint8, float8
        }
      });
    });
  }

 private:
  bool saturate_;
  int32_t output_dtype_;
};

class DequantizeLinear19 : public QdqBase {
 public:
  explicit DequantizeLinear19(const sdk::Node& node)
      : QdqBase(node), output_dtype_(int32_t(node.attr_int("output_dtype", 0))) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x");
    sdk::Tensor scale = required(ctx, 1, "x_scale");
    sdk::Tensor zp = ctx.input(2);
    if (zp.present())
      SINGA_CHECK(zp.dtype() == x.dtype(), std::string("x_zero_point has type ") + sdk::dtype_name(zp.dtype()) +
                                               " but x has type " + sdk::dtype_name(x.dtype()));
    const int32_t out_type = output_dtype_ ? output_dtype_ : scale.dtype() == SINGA_ONNX_FLOAT8E8M0 ? SINGA_ONNX_FLOAT : scale.dtype();
    SINGA_CHECK(out_type == SINGA_ONNX_FLOAT || out_type == SINGA_ONNX_FLOAT16 || out_type == SINGA_ONNX_BFLOAT16,
                std::string("cannot dequantize to ") + sdk::dtype_name(out_type));
    const QuantMap m = map(x, scale, zp, "x_scale", "x_zero_point");
    const std::vector<float> s = scale_values(scale, "x_scale");
    std::vector<float> z(s.size(), 0.0f);
    if (zp.present()) {
      for (size_t i = 0; i < z.size(); ++i) z[i] = quant_value(zp, int64_t(i));
      // int32 data comes from integer accumulators whose zero point is 0.
      if (x.dtype() == SINGA_ONNX_INT32)
        for (float v : z) SINGA_CHECK(v == 0.0f, "x_zero_point must be 0 for int32 input, got " + std::to_string(v));
    }
    const int64_t n = x.numel();
    sdk::Tensor y = ctx.output(0, x.shape(), out_type);
    // 8 bits to float, per tensor or per axis: the vector loops.
    if (out_type == SINGA_ONNX_FLOAT && m.block == 0 && (x.dtype() == SINGA_ONNX_UINT8 || x.dtype() == SINGA_ONNX_INT8)) {
      float* py = y.data<float>();
      const int64_t channels = m.per_tensor ? 1 : m.axis_dim;
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        qdq::for_channel_runs(b, e, channels, m.inner, [&](int64_t i, int64_t len, int64_t c) {
          const float sc = s[size_t(c)];
          const int32_t zc = int32_t(z[size_t(c)]);
          if (x.dtype() == SINGA_ONNX_UINT8)
            qdq::dequantize(x.data<uint8_t>() + i, py + i, len, sc, zc);
          else
            qdq::dequantize(x.data<int8_t>() + i, py + i, len, sc, zc);
        });
      });
      return;
    }
    // get(i): element i of x as a float (the byte and 16-bit types read
    // directly, the rest through quant_value).
    auto run = [&](auto get) {
      ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
        auto value = [&](int64_t i) {
          const size_t c = size_t(m.index(i));
          return (get(i) - z[c]) * s[c];
        };
        switch (out_type) {
          case SINGA_ONNX_FLOAT16: for (int64_t i = b; i < e; ++i) y.data<half>()[i] = half(value(i)); break;
          case SINGA_ONNX_BFLOAT16: for (int64_t i = b; i < e; ++i) y.data<bfloat16>()[i] = bfloat16(value(i)); break;
          default: for (int64_t i = b; i < e; ++i) y.data<float>()[i] = value(i); break;
        }
      });
    };
    switch (x.dtype()) {
      case SINGA_ONNX_UINT8: { const uint8_t* p = x.data<uint8_t>(); run([p](int64_t i) { return float(p[i]); }); break; }
      case SINGA_ONNX_INT8: { const int8_t* p = x.data<int8_t>(); run([p](int64_t i) { return float(p[i]); }); break; }
      case SINGA_ONNX_UINT16: { const uint16_t* p = x.data<uint16_t>(); run([p](int64_t i) { return float(p[i]); }); break; }
      case SINGA_ONNX_INT16: { const int16_t* p = x.data<int16_t>(); run([p](int64_t i) { return float(p[i]); }); break; }
      case SINGA_ONNX_INT32: {
        // The zero point is 0 (checked above); the value rounds to float once.
        const int32_t* p = x.data<int32_t>();
        run([p](int64_t i) { return float(p[i]); });
        break;
      }
      default: run([&](int64_t i) { return quant_value(x, i); }); break;
    }
  }

 private:
  int32_t output_dtype_;
};

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
  reg.kernel<DynamicQuantizeLinear>("", "DynamicQuantizeLinear", 11, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, f32}});

  // Opset 19 on: each version takes the types of the one before and more.
  const uint64_t x19 = f32 | bit(SINGA_ONNX_FLOAT16) | bit(SINGA_ONNX_BFLOAT16) | bit(SINGA_ONNX_INT32);
  const uint64_t s19 = f32 | bit(SINGA_ONNX_FLOAT16) | bit(SINGA_ONNX_BFLOAT16);
  const uint64_t q19 = kQuantTypes | bit(SINGA_ONNX_FLOAT8E4M3FN) | bit(SINGA_ONNX_FLOAT8E4M3FNUZ) |
                       bit(SINGA_ONNX_FLOAT8E5M2) | bit(SINGA_ONNX_FLOAT8E5M2FNUZ);
  const uint64_t q21 = q19 | bit(SINGA_ONNX_INT16) | bit(SINGA_ONNX_UINT16) | bit(SINGA_ONNX_INT4) | bit(SINGA_ONNX_UINT4);
  const uint64_t q23 = q21 | bit(SINGA_ONNX_FLOAT4E2M1);
  const uint64_t q25 = q23 | bit(SINGA_ONNX_INT2) | bit(SINGA_ONNX_UINT2);
  const uint64_t s24 = s19 | bit(SINGA_ONNX_FLOAT8E8M0);
  struct V {
    int since;
    uint64_t q, s;
  };
  for (V v : {V{19, q19, s19}, V{21, q21, s19}, V{23, q23, s19}, V{24, q23, s24}, V{25, q25, s24}}) {
    reg.kernel<QuantizeLinear19>("", "QuantizeLinear", v.since, SINGA_VERSION_OPEN, "cpu",
                                 {{"T1", 0, x19}, {"T2", 1, v.s}, {"T3", 2, v.q}, {"T3", -1, v.q}});
    reg.kernel<DequantizeLinear19>("", "DequantizeLinear", v.since, SINGA_VERSION_OPEN, "cpu",
                                   {{"T1", 0, v.q | bit(SINGA_ONNX_INT32)}, {"T2", 1, v.s},
                                    {"T1", 2, v.q | bit(SINGA_ONNX_INT32)}, {"T3", -1, s19}});
  }
}

}  // namespace nn
}  // namespace singa
