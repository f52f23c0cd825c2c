// BatchNormalization: inference with running statistics, and (opset 14+,
// training_mode=1) normalisation with batch statistics plus updated
// running mean and variance; and ai.singa.cpu::FusedBatchNorm, an inference
// one with the activation after it fused (passes/fuse_conv_activation.cpp)
// and, optionally, the AveragePool after that (pool_kernel_shape and
// pool_strides: whole windows only, passes/fuse_batch_norm_pool.cpp).
#include "affine_activation_f32.hpp"
#include "avg_pool_2d_f32.hpp"
#include "batch_norm_attrs.hpp"
#include "batch_norm_conv_f32.hpp"
#include <cpu_domain.hpp>
#include "fused_activation.hpp"
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <half_convert_f32.hpp>

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

using ops::FusedActivation;

class BatchNorm : public NodeKernel {
 public:
  explicit BatchNorm(const sdk::Node& node)
      : NodeKernel(node),
        attrs_(ops::read_batch_norm_attrs(node)),
        act_(node.op_type() == "FusedBatchNorm" ? FusedActivation(node) : FusedActivation()) {
    if (act_.kind != FusedActivation::kNone && attrs_.training)
      fail("a fused activation needs inference mode (training_mode=0)");
    if (node.op_type() == "FusedBatchNorm" && node.has_attr("pool_kernel_shape")) {
      pool_k_ = node.attr_ints("pool_kernel_shape");
      pool_s_ = node.has_attr("pool_strides") ? node.attr_ints("pool_strides") : std::vector<int64_t>{1, 1};
      if (pool_k_.size() != 2 || pool_s_.size() != 2 || std::min({pool_k_[0], pool_k_[1], pool_s_[0], pool_s_[1]}) < 1)
        fail("pool_kernel_shape and pool_strides must hold 2 positive values each, got " + shape_str(pool_k_) +
             " and " + shape_str(pool_s_));
      if (attrs_.training || !attrs_.spatial) fail("a fused pool needs inference mode with spatial statistics");
    }
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
    if (!pool_k_.empty()) SINGA_CHECK(xs.size() == 4 && x.dtype() == SINGA_ONNX_FLOAT,
                                      "a fused pool needs float X [N, C, H, W], got shape " + shape_str(xs));
    Shape ys = xs;
    if (!pool_k_.empty()) {
      SINGA_CHECK(xs[2] >= pool_k_[0] && xs[3] >= pool_k_[1],
                  "X " + shape_str(xs) + " is smaller than the fused pool's window " + shape_str(pool_k_));
      ys[2] = (xs[2] - pool_k_[0]) / pool_s_[0] + 1;
      ys[3] = (xs[3] - pool_k_[1]) / pool_s_[1] + 1;
    }
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
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
    if (!pool_k_.empty()) {
      pooled_f32(ctx, x.data<float>(), y.data<float>(), xs, ys, channels, a, c);
      return;
    }
    if (x.dtype() == SINGA_ONNX_FLOAT) {
      const float* px = x.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(N * channels, grain, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p)
          affine_activation_f32(px + p * inner, py + p * inner, inner, float(a[size_t(p % channels)]),
                           float(c[size_t(p % channels)]), act_);
      });
      return;
    }
    check(act_.kind == FusedActivation::kNone, "a fused activation needs float");
    if (x.dtype() == SINGA_ONNX_FLOAT16) {
      // Blocks widened (F16C) into the float kernel and rounded once: the
      // half loop's float arithmetic without its scalar conversions.
      const uint16_t* px = reinterpret_cast<const uint16_t*>(x.data<half>());
      uint16_t* py = reinterpret_cast<uint16_t*>(y.data<half>());
      ctx.parallel_for(N * channels, grain, [&](int64_t pb, int64_t pe) {
        constexpr int64_t kBlock = 1024;
        float xf[kBlock], yf[kBlock];
        for (int64_t p = pb; p < pe; ++p) {
          const float ap = float(a[size_t(p % channels)]), cp = float(c[size_t(p % channels)]);
          for (int64_t i = 0; i < inner; i += kBlock) {
            const int64_t n = std::min(kBlock, inner - i);
            vec::f16_to_f32(px + p * inner + i, xf, n);
            affine_activation_f32(xf, yf, n, ap, cp, act_);
            vec::f32_to_f16(yf, py + p * inner + i, n);
          }
        }
      });
      return;
    }
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
  // y = AveragePool(act(x * a + c)): each plane is normalized into a scratch
  // plane that stays in cache and pooled from there, so the full-size
  // activation never goes to memory (DenseNet's transitions).
  void pooled_f32(const sdk::Context& ctx, const float* px, float* py, const Shape& xs, const Shape& ys,
                  int64_t channels, const std::vector<double>& a, const std::vector<double>& c) const {
    const int64_t H = xs[2], W = xs[3], planes = xs[0] * xs[1], in = H * W, out = ys[2] * ys[3];
    const PoolAxis ph = pool_axis(H, ys[2], pool_k_[0], pool_s_[0], 1, 0, 0, false);
    const PoolAxis pw = pool_axis(W, ys[3], pool_k_[1], pool_s_[1], 1, 0, 0, false);
    const bool two_by_two = pool_k_ == std::vector<int64_t>{2, 2} && pool_s_ == std::vector<int64_t>{2, 2};
    ctx.parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, in)), [&](int64_t pb, int64_t pe) {
      std::vector<float> plane(static_cast<size_t>(in)), row(static_cast<size_t>(avg_pool_buffer_size(pw)));
      for (int64_t p = pb; p < pe; ++p) {
        affine_activation_f32(px + p * in, plane.data(), in, float(a[size_t(p % channels)]), float(c[size_t(p % channels)]),
                         act_);
        if (two_by_two) {
          avg_pool_2x2_plane_f32(plane.data(), W, ys[2], ys[3], py + p * out);
          continue;
        }
        for (int64_t oh = 0; oh < ys[2]; ++oh) avg_pool_row_f32(plane.data(), ph, pw, oh, row.data(), py + p * out + oh * ys[3]);
      }
    });
  }

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
  std::vector<int64_t> pool_k_, pool_s_;  // empty: no fused pool
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
  register_batch_norm_conv(reg);
}

}  // namespace nn
}  // namespace singa
