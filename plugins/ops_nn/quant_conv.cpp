// ConvInteger and QLinearConv: 8-bit convolutions.
//
// Both accumulate conv(x - x_zero_point, w - w_zero_point) in int32, padding
// behaving as the zero point. 2-D convolutions with constant weights and
// weight zero points run on oneDNN's int8 primitives (conv_integer_dnnl.hpp);
// the rest subtract the zero points and accumulate exactly in double through
// the float Conv's GEMM path (products of 8-bit values summed over any
// realistic window stay far below 2^53).
#include "conv_impl.hpp"
#include "conv_integer_dnnl.hpp"
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

  // acc[n, m, out...] = sum (x - xz) * (w - wz[m]); returns the output shape.
  Shape accumulate(const sdk::Context& ctx, const sdk::Tensor& x, double xz, const sdk::Tensor& w,
                   const std::vector<double>& wz, int32_t** acc) const {
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = spatial_dims(xs, "x", *this);
    SINGA_CHECK(ws.size() == xs.size(), "w of shape " + shape_str(ws) + " must have the rank of x " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    SINGA_CHECK(Cg * group_ == C, "x has " + std::to_string(C) + " channels but w " + shape_str(ws) + " with group " +
                                      std::to_string(group_) + " expects " + std::to_string(Cg * group_));
    SINGA_CHECK(M % group_ == 0,
                "w has " + std::to_string(M) + " output channels, not a multiple of group " + std::to_string(group_));
    SINGA_CHECK(wz.size() == 1 || int64_t(wz.size()) == M,
                "w zero point must hold 1 or " + std::to_string(M) + " values");
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == kernel,
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match w " + shape_str(ws));
    Geometry g = window_geometry(attrs_, in, kernel, *this);
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

 private:
  WindowAttrs attrs_;
  int64_t group_;
  std::unique_ptr<DnnlInt8Conv> fast_;  // null: the double GEMM path
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

}  // namespace

void register_quant_conv(sdk::Registrar& reg) {
  const uint64_t q8 = bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_INT8);
  reg.kernel<ConvInteger>("", "ConvInteger", 10, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, q8}, {"T2", 1, q8}});
  reg.kernel<QLinearConv>("", "QLinearConv", 10, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, q8}, {"T2", 3, q8}, {"T3", 7, q8}});
}

}  // namespace nn
}  // namespace singa
