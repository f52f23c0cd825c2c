// MaxPool, AveragePool and GlobalAveragePool (float).
//
// cuDNN pools with symmetric pads smaller than the window, no dilation and
// floor-mode output sizes; ONNX also allows asymmetric pads, dilations,
// ceil_mode and MaxPool's Indices output. A node cannot fall back to the CPU
// once its kernel is chosen, so those windows run on the plugin's own pooling
// kernels instead, which implement every case.
#include "cudnn_desc.hpp"
#include "handles.hpp"
#include "register.hpp"
#include "window.hpp"

namespace singa {
namespace cuda {

namespace {

class PoolBase : public NodeKernel {
 public:
  explicit PoolBase(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
  }

 protected:
  Window window(const sdk::Tensor& x) const {
    const std::vector<int64_t> in = spatial_dims(x.shape(), "X", *this);
    return resolve_window(attrs_, in, attrs_.kernel_shape, x.dim(0) * x.dim(1), *this);
  }

  static sdk::Shape out_shape(const sdk::Tensor& x, const Window& w) {
    sdk::Shape s{x.dim(0), x.dim(1)};
    for (int64_t d : w.out_dims()) s.push_back(d);
    return s;
  }

  static bool cudnn_fits(const Window& w) {
    if (!w.symmetric_pads() || !w.unit_dilations()) return false;
    const PoolGeometry& g = w.g;
    for (int i = 0; i < 3; ++i) {
      if (g.pb[i] >= g.k[i]) return false;
      if ((g.in[i] + 2 * g.pb[i] - g.k[i]) / g.s[i] + 1 != g.out[i]) return false;  // ceil_mode added a window
    }
    return true;
  }

  void cudnn_pool(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& y, const Window& w,
                  cudnnPoolingMode_t mode) const {
    const PoolGeometry& g = w.g;
    const int ns = w.rank < 2 ? 2 : w.rank, first = 3 - ns;
    const std::string who = where();
    std::vector<int> xd{to_int(x.dim(0), who + ": N"), to_int(x.dim(1), who + ": C")};
    std::vector<int> yd = xd, window, pads, strides;
    for (int i = first; i < 3; ++i) {
      xd.push_back(to_int(g.in[i], who + ": input size"));
      yd.push_back(to_int(g.out[i], who + ": output size"));
      window.push_back(to_int(g.k[i], who + ": kernel size"));
      pads.push_back(to_int(g.pb[i], who + ": pad"));
      strides.push_back(to_int(g.s[i], who + ": stride"));
    }
    TensorDesc xdesc(xd), ydesc(yd);
    PoolDesc pool("cudnnCreatePoolingDescriptor");
    check_cudnn(cudnnSetPoolingNdDescriptor(pool.get(), mode, CUDNN_NOT_PROPAGATE_NAN, ns, window.data(), pads.data(),
                                            strides.data()),
                who + ": cudnnSetPoolingNdDescriptor");
    const int dev = device_of(ctx);
    Cudnn h(dev, stream_of(ctx));
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnPoolingForward(h.get(), pool.get(), &one, xdesc.get(), x.data<float>(), &zero, ydesc.get(),
                                    y.data<float>()),
                who + ": cudnnPoolingForward");
  }

  WindowAttrs attrs_;
};

class MaxPool : public PoolBase {
 public:
  explicit MaxPool(const sdk::Node& node) : PoolBase(node) {
    const int64_t order = node.attr_int("storage_order", 0);
    if (order != 0 && order != 1) fail("attribute storage_order must be 0 or 1, got " + std::to_string(order));
    column_major_ = order == 1;
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    check_float(x, "X");
    const Window w = window(x);
    const sdk::Shape ys = out_shape(x, w);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    sdk::Tensor indices;
    if (ctx.num_outputs() > 1) indices = ctx.output(1, ys, SINGA_ONNX_INT64);
    if (y.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    if (!indices.present() && cudnn_fits(w)) return cudnn_pool(ctx, x, y, w, CUDNN_POOLING_MAX);
    check_launch(launch_max_pool(x.data<float>(), y.data<float>(), indices.present() ? indices.data<int64_t>() : nullptr,
                                 w.g, column_major_, stream_of(ctx)),
                 "max pooling kernel");
  }

 private:
  bool column_major_ = false;
};

class AveragePool : public PoolBase {
 public:
  explicit AveragePool(const sdk::Node& node)
      : PoolBase(node), count_include_pad_(node.attr_int("count_include_pad", 0) != 0) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    check_float(x, "X");
    const Window w = window(x);
    sdk::Tensor y = ctx.output(0, out_shape(x, w), x.dl_dtype());
    if (y.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    if (cudnn_fits(w))
      return cudnn_pool(ctx, x, y, w,
                        count_include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                           : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
    check_launch(launch_avg_pool(x.data<float>(), y.data<float>(), w.g, count_include_pad_, stream_of(ctx)),
                 "average pooling kernel");
  }

 private:
  bool count_include_pad_;
};

class GlobalAveragePool : public NodeKernel {
 public:
  explicit GlobalAveragePool(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    check_float(x, "X");
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    sdk::Shape ys{xs[0], xs[1]};
    int64_t len = 1;
    for (size_t i = 2; i < xs.size(); ++i) {
      len *= xs[i];
      ys.push_back(1);
    }
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (y.numel() == 0) return;
    check(len > 0, "cannot average over empty spatial dims of X " + shape_str(xs));
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_row_mean(x.data<float>(), y.data<float>(), xs[0] * xs[1], len, stream_of(ctx)),
                 "global average kernel");
  }
};

}  // namespace

void register_pool(sdk::Registrar& reg) {
  // MaxPool: 8 adds Indices and storage_order, 10 ceil_mode and dilations,
  // 11 pads defaults, 12 8-bit integers (those stay on the CPU).
  reg.kernel<MaxPool>("", "MaxPool", 1, 7, "cuda", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 8, 9, "cuda", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 10, 10, "cuda", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 11, 11, "cuda", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 12, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}});
  // AveragePool: 7 adds count_include_pad, 10 ceil_mode, 11 pads defaults.
  reg.kernel<AveragePool>("", "AveragePool", 1, 6, "cuda", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 7, 9, "cuda", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 10, 10, "cuda", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 11, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}});
  reg.kernel<GlobalAveragePool>("", "GlobalAveragePool", 1, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32}});
}

}  // namespace cuda
}  // namespace singa
