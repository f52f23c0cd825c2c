// ConvGrad(dY, X, W) -> (dX, dW, dB) for Conv with groups, strides, pads,
// dilations and auto_pad (1 to 3 spatial dims): shapes checked here, the
// work done by conv_grad_f32.hpp (float on AVX-512 CPUs) or
// conv_grad_generic.hpp (everything else).
#include "conv_grad_f32.hpp"
#include "conv_grad_generic.hpp"
#include "register.hpp"

#include <sgemm.hpp>

#include <nn_common.hpp>
#include <spatial.hpp>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

class ConvGrad : public NodeKernel {
 public:
  explicit ConvGrad(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ < 1) fail("attribute group must be positive");
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), w = required(ctx, 2, "W");
    check(dy.dtype() == x.dtype() && w.dtype() == x.dtype(), "dY, X and W must share one element type");
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = nn::spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W must have the rank of X");
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    check(Cg * group_ == C && M % group_ == 0, "channels of X " + nn::shape_str(xs) + " and W " + nn::shape_str(ws) +
                                                   " do not fit group " + std::to_string(group_));
    Geometry g = nn::window_geometry(attrs_, in, std::vector<int64_t>(ws.begin() + 2, ws.end()), *this);
    Shape ys{N, M};
    for (int64_t d : g.out_dims()) ys.push_back(d);
    check(dy.shape() == ys, "dY has shape " + nn::shape_str(dy.shape()) + ", the convolution's output is " + nn::shape_str(ys));
    sdk::Tensor dx, dw, db;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) dw = ctx.output(1, ws, x.dl_dtype());
    if (want_[2]) db = ctx.output(2, Shape{M}, x.dl_dtype());
    if (x.dtype() == SINGA_ONNX_FLOAT && fast::avx512()) {
      conv_grad_f32(ctx, DyImages{dy.data<float>(), {}}, x.data<float>(), w.data<float>(), dx.present() ? dx.data<float>() : nullptr,
                    dw.present() ? dw.data<float>() : nullptr, db.present() ? db.data<float>() : nullptr, g, N, C, M,
                    Cg, group_);
      return;
    }
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      conv_grad_generic<T>(ctx, dy.data<T>(), x.data<T>(), w.data<T>(), dx.present() ? dx.data<T>() : nullptr,
                           dw.present() ? dw.data<T>() : nullptr, db.present() ? db.data<T>() : nullptr, g, N, C, M,
                           Cg, group_);
    });
  }

 private:
  nn::WindowAttrs attrs_;
  int64_t group_;
  bool want_[3] = {false, false, false};
};

}  // namespace

void register_conv_grad(sdk::Registrar& reg) {
  reg.kernel<ConvGrad>(kDomain, "ConvGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
