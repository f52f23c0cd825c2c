// Backward kernels of the ai.singa.grad domain (opset 1) on the device:
// activations, Softmax/LogSoftmax, MaxPool/AveragePool, BatchNormalization
// and SoftmaxCrossEntropyLoss, with the inputs, outputs, attributes and
// checks of the CPU kernels (ops_grad/*.cpp). ConvGrad is in ops_conv_grad.cpp.
#include "kernels_nn.hpp"
#include "register.hpp"
#include "sce_grad_rules.hpp"
#include "window.hpp"

#include <cmath>

namespace singa {
namespace cuda {

namespace {

constexpr const char* kGradDomain = "ai.singa.grad";

RealVec real_vec(const sdk::Tensor& t) { return RealVec{t.data_ptr(), is_double(t)}; }

template <ActGrad Op>
class ActivationGrad : public NodeKernel {
 public:
  explicit ActivationGrad(const sdk::Node& node)
      : NodeKernel(node), alpha_(node.attr_float("alpha", Op == ActGrad::kLeakyRelu ? 0.01f : 1.0f)) {}

  void compute(sdk::Context& ctx) const {
    const bool from_y = Op == ActGrad::kRelu || Op == ActGrad::kSigmoid || Op == ActGrad::kTanh;
    sdk::Tensor dy = required(ctx, 0, "dY"), v = required(ctx, 1, from_y ? "Y" : "X");
    check(dy.shape() == v.shape() && dy.dtype() == v.dtype(), "dY and the saved value differ in shape or type");
    sdk::Tensor dx = ctx.output(0, v.shape(), v.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_act_grad(Op, dtype_of(v), dy.data_ptr(), v.data_ptr(), dx.data_ptr(), v.numel(), double(alpha_),
                                 stream_of(ctx)),
                 "activation gradient kernel");
  }

 private:
  float alpha_;
};

template <bool Log>
class SoftmaxGrad : public NodeKernel {
 public:
  explicit SoftmaxGrad(const sdk::Node& node)
      : NodeKernel(node), coerce_(node.attr_int("coerce_2d", 0) != 0), axis_(node.attr_int("axis", coerce_ ? 1 : -1)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), y = required(ctx, 1, "Y");
    check(dy.shape() == y.shape() && dy.dtype() == y.dtype(), "dY and Y differ in shape or type");
    const sdk::Shape s = y.shape();
    const int64_t r = int64_t(s.size());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    check(axis >= 0 && axis < std::max<int64_t>(r, 1),
          "axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? outer : i == axis || coerce_ ? n : inner) *= s[size_t(i)];
    sdk::Tensor dx = ctx.output(0, s, y.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_softmax_grad(Log, dtype_of(y), dy.data_ptr(), y.data_ptr(), dx.data_ptr(), outer, n, inner,
                                     stream_of(ctx)),
                 "softmax gradient kernel");
  }

 private:
  bool coerce_;
  int64_t axis_;
};

// MaxPool's Indices (row-major, from the start of the tensor) say where each
// output came from. A bad index is reported, as on the CPU, which costs one
// wait for the stream.
class MaxPoolGrad : public NodeKernel {
 public:
  explicit MaxPoolGrad(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), idx = required(ctx, 1, "Indices"), x = required(ctx, 2, "X");
    check(idx.dtype() == SINGA_ONNX_INT64 && idx.shape() == dy.shape(), "Indices must be int64 of dY's shape");
    check(dy.dtype() == x.dtype(), "dY and X differ in type");
    const sdk::Shape xs = x.shape(), ys = dy.shape();
    check(xs.size() >= 3 && ys.size() == xs.size(), "X and dY must be [N, C, ...] of one rank");
    const int64_t planes = xs[0] * xs[1], in_size = x.numel() / std::max<int64_t>(1, planes);
    const int64_t out_size = dy.numel() / std::max<int64_t>(1, planes);
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    if (dx.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    const cudaStream_t stream = stream_of(ctx);
    int* bad = static_cast<int*>(ctx.workspace(sizeof(int)));
    check_launch(cudaMemsetAsync(bad, 0, sizeof(int), stream), "cudaMemsetAsync");
    check_launch(launch_max_pool_grad(dtype_of(x), dy.data_ptr(), idx.data<int64_t>(), dx.data_ptr(), planes, in_size,
                                      out_size, bad, stream),
                 "max pooling gradient kernel");
    int host_bad = 0;
    check_launch(cudaMemcpyAsync(&host_bad, bad, sizeof(int), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check_launch(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check(host_bad == 0, "Indices point outside their (n, c) plane");
  }
};

class AveragePoolGrad : public NodeKernel {
 public:
  explicit AveragePoolGrad(const sdk::Node& node)
      : NodeKernel(node), attrs_(node, *this), include_pad_(node.attr_int("count_include_pad", 0) != 0) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X");
    check(dy.dtype() == x.dtype(), "dY and X differ in type");
    const sdk::Shape xs = x.shape();
    const Window win = resolve_window(attrs_, spatial_dims(xs, "X", *this), attrs_.kernel_shape, xs[0] * xs[1], *this);
    sdk::Shape ys{xs[0], xs[1]};
    for (int64_t d : win.out_dims()) ys.push_back(d);
    check(dy.shape() == ys, "dY has shape " + shape_str(dy.shape()) + ", the pooling's output is " + shape_str(ys));
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_avg_pool_grad(dtype_of(x), dy.data_ptr(), dx.data_ptr(), win.g, include_pad_, stream_of(ctx)),
                 "average pooling gradient kernel");
  }

 private:
  WindowAttrs attrs_;
  bool include_pad_;
};

// BatchNormalizationGrad(dY, X, scale, mean, var) -> (dX, dScale, dB).
// training_mode=1: the batch's own statistics (recomputed here) were used,
// so dX also flows through them; otherwise the running ones were constants.
class BatchNormGrad : public NodeKernel {
 public:
  explicit BatchNormGrad(const sdk::Node& node)
      : NodeKernel(node), eps_(node.attr_float("epsilon", 1e-5f)), training_(node.attr_int("training_mode", 0) != 0) {
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), scale = required(ctx, 2, "scale");
    sdk::Tensor mean = ctx.input(3), var = ctx.input(4);
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2 && dy.shape() == xs && dy.dtype() == x.dtype(), "dY and X must be [N, C, ...] of one shape");
    const int64_t N = xs[0], C = xs[1], S = x.numel() / std::max<int64_t>(1, N * C);
    check_real(scale, "scale");
    check(scale.numel() == C, "scale must hold one value per channel");
    check(training_ || (mean.present() && var.present()), "inference mode needs the running mean and var");
    if (!training_) {
      check_real(mean, "mean");
      check_real(var, "var");
      check(mean.numel() == C && var.numel() == C, "mean and var must hold one value per channel");
    }
    sdk::Tensor dx, ds, db;
    if (want_[0]) dx = ctx.output(0, xs, x.dl_dtype());
    if (want_[1]) ds = ctx.output(1, sdk::Shape{C}, scale.dl_dtype());
    if (want_[2]) db = ctx.output(2, sdk::Shape{C}, scale.dl_dtype());
    if (C == 0) return;
    DeviceGuard guard(device_of(ctx));
    const cudaStream_t stream = stream_of(ctx);
    double* stats = static_cast<double*>(ctx.workspace(size_t(4 * C) * sizeof(double)));
    const RealVec mv = training_ ? RealVec{} : real_vec(mean), vv = training_ ? RealVec{} : real_vec(var);
    check_launch(launch_bn_grad_stats(dtype_of(x), dy.data_ptr(), x.data_ptr(), mv, vv, double(eps_), training_, N, C, S,
                                      stats, stream),
                 "batch norm gradient statistics kernel");
    if (dx.present())
      check_launch(launch_bn_grad_dx(dtype_of(x), dy.data_ptr(), x.data_ptr(), real_vec(scale), stats, training_, N, C, S,
                                     dx.data_ptr(), stream),
                   "batch norm input gradient kernel");
    check_launch(launch_bn_grad_params(stats, C, is_double(scale), ds.present() ? ds.data_ptr() : nullptr,
                                       db.present() ? db.data_ptr() : nullptr, stream),
                 "batch norm parameter gradient kernel");
  }

 private:
  float eps_;
  bool training_;
  bool want_[3] = {false, false, false};
};

// SoftmaxCrossEntropyLossGrad(dLoss, log_prob, labels[, weights]) -> dScores.
// Labels and weights are read on the host, where they are checked and the
// mean's denominator is formed (plugins/common/sce_grad_rules.hpp, as on the CPU).
class SceGrad : public NodeKernel {
 public:
  explicit SceGrad(const sdk::Node& node) : NodeKernel(node), rules_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dl = required(ctx, 0, "dLoss"), lp = required(ctx, 1, "log_prob"), lab = required(ctx, 2, "labels");
    sdk::Tensor wt = ctx.input(3);
    check_real(dl, "dLoss");
    std::vector<double> w;
    if (wt.present()) {
      check_real(wt, "weights");
      check(wt.raw()->device.device_type == kDLCPU, "weights must be on the host");
      for (int64_t i = 0; i < wt.numel(); ++i) w.push_back(is_double(wt) ? wt.data<double>()[i] : wt.data<float>()[i]);
    }
    check(lab.raw()->device.device_type == kDLCPU, "labels must be on the host");
    const ops::SceGradRules::Plan plan = rules_.plan(dl, lp, lab, w);
    sdk::Tensor ds = ctx.output(0, lp.shape(), lp.dl_dtype());
    if (ds.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    SceGradArgs a;
    a.dloss = real_vec(dl);
    a.per_item = rules_.per_item();
    a.mean = rules_.mean();
    a.has_ignore = rules_.has_ignore();
    a.ignore = rules_.ignore_index();
    a.denom = plan.denom;
    a.labels = static_cast<const int64_t*>(upload(ctx, plan.labels.data(), plan.labels.size() * sizeof(int64_t), where()));
    if (!w.empty()) a.weights = static_cast<const double*>(upload(ctx, w.data(), w.size() * sizeof(double), where()));
    a.N = plan.N;
    a.C = plan.C;
    a.D = plan.D;
    check_launch(launch_sce_grad(dtype_of(lp), lp.data_ptr(), ds.data_ptr(), a, stream_of(ctx)),
                 "cross entropy gradient kernel");
  }

 private:
  ops::SceGradRules rules_;
};

}  // namespace

void register_grad(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<ActivationGrad<ActGrad::kRelu>>(kGradDomain, "ReluGrad", 1, 1, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<ActivationGrad<ActGrad::kSigmoid>>(kGradDomain, "SigmoidGrad", 1, 1, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<ActivationGrad<ActGrad::kTanh>>(kGradDomain, "TanhGrad", 1, 1, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<ActivationGrad<ActGrad::kLeakyRelu>>(kGradDomain, "LeakyReluGrad", 1, 1, "cuda", {{"T", 0, kF32F64}},
                                                  inplace);
  reg.kernel<ActivationGrad<ActGrad::kElu>>(kGradDomain, "EluGrad", 1, 1, "cuda", {{"T", 0, kF32F64}}, inplace);
  reg.kernel<ActivationGrad<ActGrad::kSoftplus>>(kGradDomain, "SoftplusGrad", 1, 1, "cuda", {{"T", 0, kF32F64}},
                                                 inplace);
  reg.kernel<SoftmaxGrad<false>>(kGradDomain, "SoftmaxGrad", 1, 1, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<SoftmaxGrad<true>>(kGradDomain, "LogSoftmaxGrad", 1, 1, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<MaxPoolGrad>(kGradDomain, "MaxPoolGrad", 1, 1, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<AveragePoolGrad>(kGradDomain, "AveragePoolGrad", 1, 1, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<BatchNormGrad>(kGradDomain, "BatchNormalizationGrad", 1, 1, "cuda", {{"T", 1, kF32F64}});
  reg.kernel<SceGrad>(kGradDomain, "SoftmaxCrossEntropyLossGrad", 1, 1, "cuda", {{"T", 1, kF32F64}}, 0,
                      input_bit(2) | input_bit(3));
}

}  // namespace cuda
}  // namespace singa
