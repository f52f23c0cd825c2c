// BatchNormalization: inference with running statistics, and (opset 14+,
// training_mode=1) normalisation with batch statistics plus updated
// running mean and variance; and ai.singa.cpu::FusedBatchNorm, an inference
// one with the activation after it fused (passes/fuse_conv_activation.cpp).
#include "batch_norm_attrs.hpp"
#include <cpu_domain.hpp>
#include "fused_activation.hpp"
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

using ops::FusedActivation;

// y = act(x * a + c) over one float plane, one loop per kind so that each
// vectorizes (the build's baseline is SSE2; the clones take AVX-512).
SINGA_VEC_CLONES void affine_plane_f32(const float* __restrict x, float* __restrict y, int64_t n, float a, float c,
                                       const FusedActivation& act) {
  switch (act.kind) {
    case FusedActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i] * a + c, 0.f);
      return;
    case FusedActivation::kClip:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i] * a + c, act.lo), act.hi);
      return;
    case FusedActivation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i] * a + c;
        y[i] = v >= 0.f ? v : act.alpha * v;
      }
      return;
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + c;
      if (act.kind != FusedActivation::kNone) act.apply_smooth(y, n);
  }
}

class BatchNorm : public NodeKernel {
 public:
  explicit BatchNorm(const sdk::Node& node)
      : NodeKernel(node),
        attrs_(ops::read_batch_norm_attrs(node)),
        act_(node.op_type() == "FusedBatchNorm" ? FusedActivation(node) : FusedActivation()) {
    if (act_.kind != FusedActivation::kNone && attrs_.training)
      fail("a fused activation needs inference mode (training_mode=0)");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "scale");
    sdk::Tensor bias = required(ctx, 2, "B");
    sdk::Tensor mean = required(ctx, 3, "input_mean");
    sdk::Tensor var = required(ctx, 4, "input_var");
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], S = N ? x.numel() / (N * std::max<int64_t>(1, C)) : 0;
    // Statistics per channel, or per (channel, position) without `spatial`.
    const int64_t channels = attrs_.spatial ? C : C * S, inner = attrs_.spatial ? S : 1;
    for (auto* t : {&scale, &bias, &mean, &var})
      SINGA_CHECK(t->numel() == channels, "scale, B, mean and var must hold " + std::to_string(channels) +
                                              " values for X " + shape_str(xs) + ", got shape " +
                                              shape_str(t->shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    std::vector<double> sc = real_values(scale, where()), b = real_values(bias, where());
    std::vector<double> mu = real_values(mean, where()), vr = real_values(var, where());

    if (attrs_.training) {
      SINGA_CHECK(N * inner > 0, "training mode needs a non-empty batch, got X " + shape_str(xs));
      std::vector<double> bm(static_cast<size_t>(channels)), bv(static_cast<size_t>(channels));
      batch_stats(ctx, x, N, channels, inner, bm, bv);
      if (ctx.num_outputs() > 1) write_running(ctx, 1, mean, mu, bm);
      if (ctx.num_outputs() > 2) write_running(ctx, 2, var, vr, bv);
      mu = bm;
      vr = bv;
    }
    // y = x * a + c per channel.
    std::vector<double> a(static_cast<size_t>(channels)), c(static_cast<size_t>(channels));
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = sc[i] / std::sqrt(vr[i] + double(attrs_.epsilon));
      c[i] = b[i] - mu[i] * a[i];
    }
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner));
    if (x.dtype() == SINGA_ONNX_FLOAT) {
      const float* px = x.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(N * channels, grain, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p)
          affine_plane_f32(px + p * inner, py + p * inner, inner, float(a[size_t(p % channels)]),
                           float(c[size_t(p % channels)]), act_);
      });
      return;
    }
    check(act_.kind == FusedActivation::kNone, "a fused activation needs float");
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(N * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)), [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          const A ap = A(a[size_t(p % channels)]), cp = A(c[size_t(p % channels)]);
          const T* xp = px + p * inner;
          T* yp = py + p * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] = from_acc<T>(to_acc<A>(xp[i]) * ap + cp);
        }
      });
    });
  }

 private:
  // Mean and (population) variance of each channel over the batch and positions.
  void batch_stats(const sdk::Context& ctx, const sdk::Tensor& x, int64_t N, int64_t channels, int64_t inner,
                   std::vector<double>& mean, std::vector<double>& var) const {
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      ctx.parallel_for(channels, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          double s = 0, ss = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* xp = px + (n * channels + c) * inner;
            for (int64_t i = 0; i < inner; ++i) s += to_acc<double>(xp[i]);
          }
          const double m = s / double(N * inner);
          for (int64_t n = 0; n < N; ++n) {
            const T* xp = px + (n * channels + c) * inner;
            for (int64_t i = 0; i < inner; ++i) {
              const double d = to_acc<double>(xp[i]) - m;
              ss += d * d;
            }
          }
          mean[size_t(c)] = m;
          var[size_t(c)] = ss / double(N * inner);
        }
      });
    });
  }

  // running = input * momentum + batch * (1 - momentum), in the input's type.
  void write_running(const sdk::Context& ctx, size_t out, const sdk::Tensor& like, const std::vector<double>& input,
                     const std::vector<double>& batch) const {
    sdk::Tensor r = ctx.output(out, like.shape(), like.dl_dtype());
    const double m = attrs_.momentum;
    dispatch_real(like.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      T* p = r.data<T>();
      for (size_t i = 0; i < input.size(); ++i) p[i] = from_acc<T>(acc_t<T>(input[i] * m + batch[i] * (1 - m)));
    });
  }

  const ops::BatchNormAttrs attrs_;
  const FusedActivation act_;
};

}  // namespace

void register_batch_norm(sdk::Registrar& reg) {
  const uint64_t f = sdk::kFloatTypes;
  // 6 drops consumed_inputs, 7 is_test, 9 spatial; 14 adds training_mode and a
  // separate type for the statistics; 15 separates scale/B from mean/var.
  reg.kernel<BatchNorm>("", "BatchNormalization", 1, 5, "cpu", {{"T", 0, f}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 6, 6, "cpu", {{"T", 0, f}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 7, 8, "cpu", {{"T", 0, f}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 9, 13, "cpu", {{"T", 0, f}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 14, 14, "cpu", {{"T", 0, kRealTypes}, {"U", 3, kRealTypes}});
  reg.kernel<BatchNorm>("", "BatchNormalization", 15, SINGA_VERSION_OPEN, "cpu",
                        {{"T", 0, kRealTypes}, {"T1", 1, kRealTypes}, {"T2", 3, kRealTypes}});
  reg.kernel<BatchNorm>(ops::kCpuDomain, "FusedBatchNorm", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
