// ConvGrad(dY, X, W) -> (dX, dW, dB) of ai.singa.grad for float Conv with
// groups, strides, dilations, pads and auto_pad: cuDNN's backward data and
// backward filter, and dB as a sum over N and the spatial dims in double
// (as ops_grad/conv_grad.cpp). cuDNN pads symmetrically: with asymmetric
// pads X is copied into a zero-padded buffer first, and dX is computed for
// that buffer and cropped.
#include "cudnn_conv.hpp"
#include "handles.hpp"
#include "kernels_math.hpp"
#include "register.hpp"
#include "strided.hpp"
#include "window.hpp"

namespace singa {
namespace cuda {

namespace {

constexpr const char* kGradDomain = "ai.singa.grad";

class ConvGrad : public NodeKernel {
 public:
  explicit ConvGrad(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ < 1) fail("attribute group must be positive");
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), w = required(ctx, 2, "W");
    check_float(dy, "dY");
    check_float(x, "X");
    check_float(w, "W");
    const sdk::Shape xs = x.shape(), ws = w.shape();
    const std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W must have the rank of X");
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    check(Cg * group_ == C && M % group_ == 0, "channels of X " + shape_str(xs) + " and W " + shape_str(ws) +
                                                   " do not fit group " + std::to_string(group_));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    const Window win = resolve_window(attrs_, in, kernel, N * C, *this);
    sdk::Shape ys{N, M};
    for (int64_t d : win.out_dims()) ys.push_back(d);
    check(dy.shape() == ys, "dY has shape " + shape_str(dy.shape()) + ", the convolution's output is " + shape_str(ys));
    sdk::Tensor dx, dw, db;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) dw = ctx.output(1, ws, x.dl_dtype());
    if (want_[2]) db = ctx.output(2, sdk::Shape{M}, x.dl_dtype());
    const int dev = device_of(ctx);
    DeviceGuard guard(dev);
    const cudaStream_t stream = stream_of(ctx);
    if (db.present()) bias_grad(dy, db, N, M, dy.numel() / std::max<int64_t>(1, N * M), stream);
    if (!dx.present() && !dw.present()) return;
    if (dy.numel() == 0 || x.numel() == 0 || w.numel() == 0) {
      // Nothing flows back: the gradients that exist are zero.
      for (const sdk::Tensor* t : {&dx, &dw})
        if (t->present() && t->numel() > 0)
          check_launch(cudaMemsetAsync(t->data_ptr(), 0, size_t(t->numel()) * sizeof(float), stream), "cudaMemsetAsync");
      return;
    }
    const PoolGeometry& g = win.g;
    const int first = 3 - win.rank;
    const bool padded = !win.symmetric_pads();
    int64_t pin[3];
    for (int i = 0; i < 3; ++i) pin[i] = padded ? g.in[i] + g.pb[i] + g.pe[i] : g.in[i];
    std::vector<int64_t> x_sp, y_sp, pads, strides, dilations;
    for (int i = first; i < 3; ++i) {
      x_sp.push_back(pin[i]);
      y_sp.push_back(g.out[i]);
      pads.push_back(padded ? 0 : g.pb[i]);
      strides.push_back(g.s[i]);
      dilations.push_back(g.d[i]);
    }
    const CudnnConv conv(make_conv_problem(N, C, M, group_, x_sp, kernel, y_sp, pads, strides, dilations, *this), *this);
    Cudnn h(dev, stream);
    const int64_t planes = N * C, plane = pin[0] * pin[1] * pin[2];
    if (dw.present()) {
      const float* px = x.data<float>();
      if (padded) {
        float* buf = static_cast<float*>(ctx.workspace(size_t(planes * plane) * sizeof(float)));
        check_launch(launch_pad_planes(px, buf, planes, g.in, pin, g.pb, stream), "padding kernel");
        px = buf;
      }
      conv.backward_filter(ctx, h.get(), px, dy.data<float>(), dw.data<float>());
    }
    if (dx.present()) {
      if (!padded) {
        conv.backward_data(ctx, h.get(), w.data<float>(), dy.data<float>(), dx.data<float>());
        return;
      }
      float* buf = static_cast<float*>(ctx.workspace(size_t(planes * plane) * sizeof(float)));
      conv.backward_data(ctx, h.get(), w.data<float>(), dy.data<float>(), buf);
      // Crop the padded gradient back to X's extent.
      const int64_t offset = (g.pb[0] * pin[1] + g.pb[1]) * pin[2] + g.pb[2];
      const sdk::Shape view{planes, g.in[0], g.in[1], g.in[2]};
      strided_copy(ctx, *this, sizeof(float), view, dx.data_ptr(), contiguous_strides(view), buf + offset,
                   {plane, pin[1] * pin[2], pin[2], 1});
    }
  }

 private:
  // dB[m] = sum of dY[n, m, p] over n and p, accumulated in double.
  void bias_grad(const sdk::Tensor& dy, const sdk::Tensor& db, int64_t N, int64_t M, int64_t P,
                 cudaStream_t stream) const {
    if (M == 0) return;
    ReducePlan plan;
    plan.outputs = M;
    plan.count = N * P;
    plan.kept_rank = 1;
    plan.kept_dims[0] = M;
    plan.kept_strides[0] = P;
    plan.red_rank = 2;
    plan.red_dims[0] = N;
    plan.red_strides[0] = M * P;
    plan.red_dims[1] = P;
    plan.red_strides[1] = 1;
    if (plan.count == 0) {
      check_launch(cudaMemsetAsync(db.data_ptr(), 0, size_t(M) * sizeof(float), stream), "cudaMemsetAsync");
      return;
    }
    check_launch(launch_reduce(ReduceOp::kSum, kFloat, dy.data_ptr(), db.data_ptr(), plan, stream), "bias gradient kernel");
  }

  WindowAttrs attrs_;
  int64_t group_;
  bool want_[3] = {false, false, false};
};

}  // namespace

void register_conv_grad(sdk::Registrar& reg) {
  reg.kernel<ConvGrad>(kGradDomain, "ConvGrad", 1, 1, "cuda", {{"T", 1, kF32}});
}

}  // namespace cuda
}  // namespace singa
