// ConvInteger and QLinearConv: 8-bit convolutions; and QdqConv, the float
// Conv of dequantized 8-bit operands that passes/fuse_qdq_conv.cpp finds in
// QDQ models (and passes/fuse_dynq_conv.cpp in dynamic-quant ones, with a
// run-time x_scale).
//
// Both accumulate conv(x - x_zero_point, w - w_zero_point) in int32, padding
// behaving as the zero point. 2-D convolutions with constant weights and
// weight zero points run on oneDNN's int8 primitives (conv_integer_dnnl.hpp);
// the rest subtract the zero points and accumulate exactly in double through
// the float Conv's GEMM path (products of 8-bit values summed over any
// realistic window stay far below 2^53).
#include "conv_impl.hpp"
#include <cpu_domain.hpp>
#include "conv_integer_dnnl.hpp"
#include "layouts.hpp"
#include "qdq_convert.hpp"
#include "nn_common.hpp"
#include "register.hpp"
#include "spatial.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

namespace singa {
namespace nn {
namespace {

class QuantConvBase : public NodeKernel {
 public:
  // w_input / wz_input: the indices of the weights and their zero point.
  QuantConvBase(const sdk::Node& node, size_t w_input, size_t wz_input)
      : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ < 1) fail("attribute group must be positive, got " + std::to_string(group_));
    // cpu.int8_dnnl=0 keeps the exact reference path, to compare against.
    if (!node.option_bool("cpu.int8_dnnl", true)) return;
    sdk::Tensor w = node.constant(w_input), wz = node.constant(wz_input);
    if (!w.present() || w.ndim() != 4 || (node.has_input(wz_input) && !wz.present())) return;
    if (wz.present() && (wz.dtype() != w.dtype() || (wz.numel() != 1 && wz.numel() != w.dim(0)))) return;
    std::vector<int32_t> zero_points{0};
    if (wz.present()) {
      zero_points.resize(size_t(wz.numel()));
      for (int64_t i = 0; i < wz.numel(); ++i) zero_points[size_t(i)] = int32_t(wz.int_at(i));
    }
    fast_ = DnnlInt8Conv::create(w, zero_points, group_);
  }

 protected:
  // A scalar or per-output-channel parameter (zero point, scale) as doubles;
  // absent means zero.
  std::vector<double> per_channel(const sdk::Tensor& t, int64_t M, const char* name) const {
    if (!t.present()) return {0.0};
    SINGA_CHECK(t.numel() == 1 || t.numel() == M, std::string(name) + " must hold 1 or " + std::to_string(M) +
                                                      " values, got shape " + shape_str(t.shape()));
    std::vector<double> v(static_cast<size_t>(t.numel()));
    dispatch_among<uint8_t, int8_t, int32_t, float>(t.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i < v.size(); ++i) v[i] = double(t.data<T>()[i]);
    });
    return v;
  }

  double scalar(const sdk::Tensor& t, const char* name) const {
    SINGA_CHECK(t.numel() == 1, std::string(name) + " must be a scalar, got shape " + shape_str(t.shape()));
    return per_channel(t, 1, name)[0];
  }

  // The window geometry of x and w, after checking that they fit together.
  Geometry geometry(const sdk::Tensor& x, const sdk::Tensor& w) const {
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = spatial_dims(xs, "x", *this);
    SINGA_CHECK(ws.size() == xs.size(), "w of shape " + shape_str(ws) + " must have the rank of x " + shape_str(xs));
    const int64_t C = xs[1], M = ws[0], Cg = ws[1];
    SINGA_CHECK(Cg * group_ == C, "x has " + std::to_string(C) + " channels but w " + shape_str(ws) + " with group " +
                                      std::to_string(group_) + " expects " + std::to_string(Cg * group_));
    SINGA_CHECK(M % group_ == 0,
                "w has " + std::to_string(M) + " output channels, not a multiple of group " + std::to_string(group_));
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == kernel,
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match w " + shape_str(ws));
    return window_geometry(attrs_, in, kernel, *this);
  }

  // acc[n, m, out...] = sum (x - xz) * (w - wz[m]); returns the output shape.
  Shape accumulate(const sdk::Context& ctx, const sdk::Tensor& x, double xz, const sdk::Tensor& w,
                   const std::vector<double>& wz, int32_t** acc) const {
    const Geometry g = geometry(x, w);
    const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), Cg = w.dim(1);
    SINGA_CHECK(wz.size() == 1 || int64_t(wz.size()) == M,
                "w zero point must hold 1 or " + std::to_string(M) + " values");
    Shape ys{N, M};
    for (int64_t d : g.out_dims()) ys.push_back(d);

    const int64_t count = sdk::numel(ys);
    *acc = static_cast<int32_t*>(ctx.workspace(size_t(std::max<int64_t>(1, count)) * sizeof(int32_t)));
    if (count == 0) return ys;
    if (fast_ && (x.dtype() == SINGA_ONNX_UINT8 || x.dtype() == SINGA_ONNX_INT8) &&
        fast_->run(ctx, x, int32_t(xz), g, *acc))
      return ys;
    double* xd = static_cast<double*>(ctx.workspace(size_t(x.numel()) * sizeof(double)));
    double* wd = static_cast<double*>(ctx.workspace(size_t(w.numel()) * sizeof(double)));
    double* accd = static_cast<double*>(ctx.workspace(size_t(count) * sizeof(double)));
    dispatch_among<uint8_t, int8_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) xd[i] = double(p[i]) - xz;
    });
    const int64_t per_m = M ? w.numel() / M : 0;
    dispatch_among<uint8_t, int8_t>(w.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = w.data<T>();
      for (int64_t i = 0; i < w.numel(); ++i) wd[i] = double(p[i]) - wz[wz.size() == 1 ? 0 : size_t(i / per_m)];
    });
    std::vector<double> zero(static_cast<size_t>(M), 0.0);
    conv_unfolded<double, double>(ctx, xd, wd, zero.data(), accd, g, N, C, M, Cg, group_);
    for (int64_t i = 0; i < count; ++i) {
      check(std::abs(accd[i]) <= double(std::numeric_limits<int32_t>::max()), "accumulator overflows int32");
      (*acc)[i] = int32_t(accd[i]);
    }
    return ys;
  }

 protected:
  std::unique_ptr<DnnlInt8Conv> fast_;  // null: the double GEMM path

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

// y (int32) = conv(x - x_zero_point, w - w_zero_point).
class ConvInteger : public QuantConvBase {
 public:
  explicit ConvInteger(const sdk::Node& node) : QuantConvBase(node, 1, 3) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x"), w = required(ctx, 1, "w");
    const double xz = ctx.has_input(2) ? scalar(ctx.input(2), "x_zero_point") : 0.0;
    std::vector<double> wz = per_channel(ctx.input(3), w.ndim() ? w.dim(0) : 0, "w_zero_point");
    int32_t* acc = nullptr;
    Shape ys = accumulate(ctx, x, xz, w, wz, &acc);
    sdk::Tensor y = ctx.output(0, ys, SINGA_ONNX_INT32);
    if (sdk::numel(ys)) std::copy(acc, acc + sdk::numel(ys), y.data<int32_t>());
  }
};

// y = saturate(round((acc + B) * x_scale * w_scale / y_scale) + y_zero_point).
class QLinearConv : public QuantConvBase {
 public:
  explicit QLinearConv(const sdk::Node& node) : QuantConvBase(node, 3, 5) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x"), w = required(ctx, 3, "w");
    const double xs = scalar(required(ctx, 1, "x_scale"), "x_scale");
    const double xz = scalar(required(ctx, 2, "x_zero_point"), "x_zero_point");
    const int64_t M = w.ndim() ? w.dim(0) : 0;
    std::vector<double> ws = per_channel(required(ctx, 4, "w_scale"), M, "w_scale");
    std::vector<double> wz = per_channel(required(ctx, 5, "w_zero_point"), M, "w_zero_point");
    const double ysc = scalar(required(ctx, 6, "y_scale"), "y_scale");
    sdk::Tensor yzt = required(ctx, 7, "y_zero_point");
    const double yz = scalar(yzt, "y_zero_point");
    check(ysc != 0.0, "y_scale must not be 0");
    std::vector<double> bias(static_cast<size_t>(M), 0.0);
    if (ctx.has_input(8)) {
      sdk::Tensor b = ctx.input(8);
      SINGA_CHECK(b.dtype() == SINGA_ONNX_INT32 && b.numel() == M, "B must be int32 with " + std::to_string(M) +
                                                                       " values, got " + sdk::dtype_name(b.dtype()) +
                                                                       " " + shape_str(b.shape()));
      for (int64_t m = 0; m < M; ++m) bias[size_t(m)] = double(b.data<int32_t>()[m]);
    }
    int32_t* acc = nullptr;
    Shape ys = accumulate(ctx, x, xz, w, wz, &acc);
    sdk::Tensor y = ctx.output(0, ys, yzt.dtype());
    int64_t P = 1;
    for (size_t i = 2; i < ys.size(); ++i) P *= ys[i];
    dispatch_among<uint8_t, int8_t>(yzt.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      T* py = y.data<T>();
      const double lo = double(std::numeric_limits<T>::lowest()), hi = double(std::numeric_limits<T>::max());
      const int64_t n = sdk::numel(ys);
      for (int64_t i = 0; i < n; ++i) {
        const size_t m = size_t((i / P) % M);
        const double scale = xs * ws[ws.size() == 1 ? 0 : m] / ysc;
        // Round half to even, as the default floating-point rounding mode does.
        double v = std::nearbyint((double(acc[i]) + bias[m]) * scale) + yz;
        py[i] = T(std::min(hi, std::max(lo, v)));
      }
    });
  }
};

// ai.singa.cpu QdqConv (opset 1): Conv(DequantizeLinear(x), DequantizeLinear(w), B)
// [then Relu] [then QuantizeLinear], with inputs x (u8/s8), x_scale,
// x_zero_point, w (u8/s8), w_scale (1 or M), w_zero_point (1 or M), B
// (float), y_scale, y_zero_point (u8/s8), all but x optional past w_scale,
// and the Conv's attributes plus activation = "Relu" when fused:
//   v[n, m] = x_scale * w_scale[m] * acc + B[m],  acc = conv(x - xz, w - wz[m]),
//   y = Relu(v), or with y_scale: saturate(round_half_even(Relu(v) / y_scale) + y_zero_point).
// With constant parameters oneDNN writes y directly (scales, bias, Relu and
// zero point applied to its accumulator); otherwise the int32 accumulator
// gets the same formula here.
class QdqConv : public QuantConvBase {
 public:
  explicit QdqConv(const sdk::Node& node) : QuantConvBase(node, 3, 5) {
    const std::string act = node.attr_string("activation", "");
    if (!act.empty() && act != "Relu") fail("unsupported activation " + act + " (only Relu fuses into QdqConv)");
    relu_ = act == "Relu";
    x_nhwc_ = node.input_layout(0) == kChannelsLastLayout;
    y_nhwc_ = node.output_layout(0) == kChannelsLastLayout;
    sdk::Tensor xs = node.constant(1), ws = node.constant(4), b = node.constant(6);
    sdk::Tensor ys = node.constant(7), yz = node.constant(8);
    if (!fast_ || !xs.present() || !ws.present() || (node.has_input(6) && !b.present())) return;
    if (node.has_input(7) && (!ys.present() || ys.dtype() != SINGA_ONNX_FLOAT || ys.numel() != 1)) return;
    if (node.has_input(8) && !yz.present()) return;
    if (xs.dtype() != SINGA_ONNX_FLOAT || ws.dtype() != SINGA_ONNX_FLOAT || xs.numel() != 1) return;
    if (b.present() && (b.dtype() != SINGA_ONNX_FLOAT || b.numel() != node.constant(3).dim(0))) return;
    // 8-bit output: scales and bias in steps of y_scale.
    const float ydiv = ys.present() ? ys.data<float>()[0] : 1.0f;
    std::vector<float> scale(size_t(ws.numel())), bias;
    for (size_t m = 0; m < scale.size(); ++m) scale[m] = xs.data<float>()[0] * ws.data<float>()[m] / ydiv;
    if (b.present())
      for (int64_t m = 0; m < b.numel(); ++m) bias.push_back(b.data<float>()[m] / ydiv);
    const int32_t out = !ys.present() ? SINGA_ONNX_FLOAT : yz.present() ? yz.dtype() : SINGA_ONNX_UINT8;
    fast_->set_scaled_output(scale, bias, relu_, out, yz.present() ? int32_t(yz.int_at(0)) : 0, x_nhwc_, y_nhwc_);
    direct_ = true;
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "x"), w = required(ctx, 3, "w");
    sdk::Tensor xst = required(ctx, 1, "x_scale"), wst = required(ctx, 4, "w_scale");
    SINGA_CHECK(xst.dtype() == SINGA_ONNX_FLOAT && wst.dtype() == SINGA_ONNX_FLOAT, "x_scale and w_scale must be float");
    const float xs = float(scalar(xst, "x_scale"));
    const double xz = ctx.has_input(2) ? scalar(ctx.input(2), "x_zero_point") : 0.0;
    const int64_t M = w.ndim() ? w.dim(0) : 0;
    std::vector<double> ws = per_channel(wst, M, "w_scale");
    std::vector<double> wz = per_channel(ctx.input(5), M, "w_zero_point");
    const float* bias = nullptr;
    if (ctx.has_input(6)) {
      sdk::Tensor b = ctx.input(6);
      SINGA_CHECK(b.dtype() == SINGA_ONNX_FLOAT && b.numel() == M,
                  "B must be float with " + std::to_string(M) + " values, got " + sdk::dtype_name(b.dtype()) + " " +
                      shape_str(b.shape()));
      bias = b.data<float>();
    }
    // The 8-bit output's parameters, when y_scale is given.
    const bool quantized = ctx.has_input(7);
    float ys = 1.0f;
    int32_t yz = 0, out_type = SINGA_ONNX_FLOAT;
    if (quantized) {
      sdk::Tensor yst = ctx.input(7);
      SINGA_CHECK(yst.dtype() == SINGA_ONNX_FLOAT, "y_scale must be float");
      ys = float(scalar(yst, "y_scale"));
      SINGA_CHECK(ys > 0.0f && std::isfinite(ys), "y_scale must be positive and finite");
      out_type = SINGA_ONNX_UINT8;
      if (ctx.has_input(8)) {
        sdk::Tensor yzt = ctx.input(8);
        SINGA_CHECK(yzt.dtype() == SINGA_ONNX_UINT8 || yzt.dtype() == SINGA_ONNX_INT8, "y_zero_point must be u8 or s8");
        yz = int32_t(scalar(yzt, "y_zero_point"));
        out_type = yzt.dtype();
      }
    }
    if (direct_ && x.ndim() == 4) {
      const Geometry g = geometry(x, w);
      Shape shape{x.dim(0), M, g.out[1], g.out[2]};
      sdk::Tensor y = ctx.output(0, shape, out_type);
      if (sdk::numel(shape) == 0 || fast_->run_scaled(ctx, x, int32_t(xz), g, y.data_ptr())) return;
    }
    if (x_nhwc_ || y_nhwc_) {
      SINGA_CHECK(x.ndim() == 4, "a channels-last x must be 4-D, got " + shape_str(x.shape()));
      const Geometry g = geometry(x, w);
      sdk::Tensor y = ctx.output(0, {x.dim(0), M, g.out[1], g.out[2]}, out_type);
      Epilogue ep{xs, ws, bias, ys, yz, out_type};
      return channels_last_reference(ctx, x, int32_t(xz), w, wz, g, ep, y);
    }
    int32_t* acc = nullptr;
    Shape shape = accumulate(ctx, x, xz, w, wz, &acc);
    sdk::Tensor y = ctx.output(0, shape, out_type);
    int64_t P = 1;
    for (size_t i = 2; i < shape.size(); ++i) P *= shape[i];
    const int64_t planes = shape[0] * M;
    float* tmp = quantized ? static_cast<float*>(ctx.workspace(size_t(std::max<int64_t>(1, planes * P)) * sizeof(float)))
                           : y.data<float>();
    ctx.parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const size_t m = size_t(q % M);
        const float sc = xs * float(ws[ws.size() == 1 ? 0 : m]), add = bias ? bias[m] : 0.0f;
        float* row = tmp + q * P;
        for (int64_t i = 0; i < P; ++i) {
          const float v = float(acc[q * P + i]) * sc + add;
          row[i] = relu_ ? std::max(v, 0.0f) : v;
        }
        if (out_type == SINGA_ONNX_UINT8) qdq::quantize(row, y.data<uint8_t>() + q * P, P, ys, yz);
        if (out_type == SINGA_ONNX_INT8) qdq::quantize(row, y.data<int8_t>() + q * P, P, ys, yz);
      }
    });
  }

 private:
  struct Epilogue {
    float xs;
    const std::vector<double>& ws;
    const float* bias;
    float ys;
    int32_t yz, out_type;
  };

  // The exact path for channels-last values, when oneDNN refused the shape:
  // a plain loop (slow, but only a fallback; the pass sets the layout only
  // where the oneDNN path is expected).
  void channels_last_reference(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const sdk::Tensor& w,
                               const std::vector<double>& wz, const Geometry& g, const Epilogue& ep,
                               sdk::Tensor& y) const {
    const int64_t N = x.dim(0), C = x.dim(1), H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    const int64_t M = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3), Mg = M / (C / Cg);
    auto xv = [&](int64_t n, int64_t c, int64_t ih, int64_t iw) {
      const int64_t i = x_nhwc_ ? ((n * H + ih) * W + iw) * C + c : ((n * C + c) * H + ih) * W + iw;
      return x.dtype() == SINGA_ONNX_UINT8 ? int32_t(x.data<uint8_t>()[i]) : int32_t(x.data<int8_t>()[i]);
    };
    auto wv = [&](int64_t i) {
      return w.dtype() == SINGA_ONNX_UINT8 ? int32_t(w.data<uint8_t>()[i]) : int32_t(w.data<int8_t>()[i]);
    };
    ctx.parallel_for(N * M, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / M, m = q % M, c0 = (m / Mg) * Cg;
        const int32_t z = int32_t(wz[wz.size() == 1 ? 0 : size_t(m)]);
        const float sc = ep.xs * float(ep.ws[ep.ws.size() == 1 ? 0 : size_t(m)]), add = ep.bias ? ep.bias[m] : 0.0f;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t acc = 0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1], iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  acc += int64_t(xv(n, c0 + c, ih, iw) - xz) * (wv(((m * Cg + c) * KH + kh) * KW + kw) - z);
                }
            float v = float(acc) * sc + add;
            if (relu_) v = std::max(v, 0.0f);
            const int64_t at = y_nhwc_ ? ((n * OH + oh) * OW + ow) * M + m : ((n * M + m) * OH + oh) * OW + ow;
            if (ep.out_type == SINGA_ONNX_UINT8)
              qdq::quantize(&v, y.data<uint8_t>() + at, 1, ep.ys, ep.yz);
            else if (ep.out_type == SINGA_ONNX_INT8)
              qdq::quantize(&v, y.data<int8_t>() + at, 1, ep.ys, ep.yz);
            else
              y.data<float>()[at] = v;
          }
      }
    });
  }

  bool relu_ = false;
  bool direct_ = false;  // fast_ writes the output itself
  bool x_nhwc_ = false, y_nhwc_ = false;  // channels-last x / y (the pass cpu.qdq_layout)
};

}  // namespace

void register_quant_conv(sdk::Registrar& reg) {
  const uint64_t q8 = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);
  reg.kernel<ConvInteger>("", "ConvInteger", 10, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, q8}, {"T2", 1, q8}});
  reg.kernel<QLinearConv>("", "QLinearConv", 10, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, q8}, {"T2", 3, q8}, {"T3", 7, q8}});
  reg.kernel<QdqConv>(ops::kCpuDomain, "QdqConv", 1, 1, "cpu", {{"T1", 0, q8}, {"T2", 3, q8}},
                      {{0, kChannelsLastLayout}, {-1, kChannelsLastLayout}});
}

}  // namespace nn
}  // namespace singa
