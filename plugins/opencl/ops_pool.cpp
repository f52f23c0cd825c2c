// MaxPool (with Indices), AveragePool, GlobalAveragePool and GlobalMaxPool
// (float, 1 to 3 spatial dims), one output element per work item.
#include "register.hpp"
#include "window.hpp"

namespace singa {
namespace opencl {

namespace {

class PoolBase : public NodeKernel {
 public:
  explicit PoolBase(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
    if (!attrs_.pads.empty() && attrs_.pads.size() != 2 * attrs_.kernel_shape.size())
      fail("attribute pads has " + std::to_string(attrs_.pads.size()) + " values, expected " +
           std::to_string(2 * attrs_.kernel_shape.size()));
  }

 protected:
  Window window(const sdk::Tensor& x) const {
    return resolve_window(attrs_, spatial_dims(x.shape(), "X", *this), attrs_.kernel_shape, *this);
  }
  static sdk::Shape out_shape(const sdk::Tensor& x, const Window& w) {
    sdk::Shape s{x.dim(0), x.dim(1)};
    for (int64_t d : w.out_dims()) s.push_back(d);
    return s;
  }
  void window_args(Launch& l, const Window& w, int64_t planes) const {
    l.arg(to_int(planes, "N * C")).arg(int4_of(w.in, *this, "input dims")).arg(int4_of(w.out, *this, "output dims"));
    l.arg(int4_of(w.k, *this, "kernel_shape")).arg(int4_of(w.s, *this, "strides")).arg(int4_of(w.d, *this, "dilations"));
    l.arg(int4_of(w.pb, *this, "pads")).arg(int4_of(w.pe, *this, "pads"));
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
    sdk::Tensor idx;
    if (ctx.num_outputs() > 1) idx = ctx.output(1, ys, SINGA_ONNX_INT64);
    const int64_t n = sdk::numel(ys);
    if (n == 0) return;
    to_int(x.numel(), "input size");  // indices are computed in int inside a plane
    Launch l = launch(env(y), Program::kPool, "maxpool");
    const Buf yb = buf(y);
    l.arg(buf(x)).arg(yb).arg(idx.present() ? buf(idx) : yb).arg(cl_int(idx.present() ? 1 : 0)).arg(cl_int(column_major_));
    window_args(l, w, ys[0] * ys[1]);
    l.run({size_t(to_int(n, "output size"))});
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
    const sdk::Shape ys = out_shape(x, w);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t n = sdk::numel(ys);
    if (n == 0) return;
    to_int(x.numel(), "input size");
    Launch l = launch(env(y), Program::kPool, "avgpool");
    l.arg(buf(x)).arg(buf(y)).arg(cl_int(count_include_pad_));
    window_args(l, w, ys[0] * ys[1]);
    l.run({size_t(to_int(n, "output size"))});
  }

 private:
  bool count_include_pad_;
};

template <bool kMax>
class GlobalPool : public NodeKernel {
 public:
  explicit GlobalPool(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    check_float(x, "X");
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    sdk::Shape ys{xs[0], xs[1]};
    int64_t size = 1;
    for (size_t i = 2; i < xs.size(); ++i) {
      ys.push_back(1);
      size *= xs[i];
    }
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t planes = xs[0] * xs[1];
    if (planes == 0) return;
    to_int(x.numel(), "input size");
    Launch l = launch(env(y), Program::kPool, "global_pool");
    l.arg(buf(x)).arg(buf(y)).arg(to_int(planes, "N * C")).arg(to_int(size, "spatial size")).arg(cl_int(kMax ? 1 : 0));
    l.run({size_t(planes)});
  }
};

}  // namespace

void register_pool(sdk::Registrar& reg) {
  // MaxPool: 8 adds Indices and storage_order, 10 ceil_mode and dilations,
  // 11 changes pads' defaults, 12 adds 8-bit integers (those stay on the CPU).
  reg.kernel<MaxPool>("", "MaxPool", 1, 7, "opencl", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 8, 9, "opencl", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 10, 10, "opencl", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 11, 11, "opencl", {{"T", 0, kF32}});
  reg.kernel<MaxPool>("", "MaxPool", 12, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
  // AveragePool: 7 adds count_include_pad, 10 ceil_mode, 11 pads' defaults.
  reg.kernel<AveragePool>("", "AveragePool", 1, 6, "opencl", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 7, 9, "opencl", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 10, 10, "opencl", {{"T", 0, kF32}});
  reg.kernel<AveragePool>("", "AveragePool", 11, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
  reg.kernel<GlobalPool<false>>("", "GlobalAveragePool", 1, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
  reg.kernel<GlobalPool<true>>("", "GlobalMaxPool", 1, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
}

}  // namespace opencl
}  // namespace singa
