// ai.singa.cpu::BatchNormConv: an inference BatchNorm with its activation
// feeding a 1x1 Conv (stride 1, no padding, one group), as DenseNet's dense
// layers and pre-activation ResNets have it (passes/fuse_batch_norm_conv.cpp).
// Inputs X, scale, B, mean, var (the BatchNorm's), W [M, C, 1, 1] (constant)
// and an optional bias [M]; attributes epsilon, norm_activation* (the
// BatchNorm's activation, FusedActivation's names under the prefix "norm_")
// and activation* (the Conv's). Each task normalizes a block of columns of
// every input channel into a scratch block that stays in L2 and runs the
// direct 1x1 product (pointwise_direct_f32.hpp) on it: the normalized tensor
// is never written to memory and read back (DenseNet-121's 58 pre-activation
// BatchNorms moved about 70 MB per image).
#include "affine_activation_f32.hpp"
#include "batch_norm_conv_f32.hpp"
#include <cpu_domain.hpp>
#include "fused_activation.hpp"
#include "nn_common.hpp"
#include "pointwise_direct_f32.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace singa {
namespace nn {
namespace {

using ops::FusedActivation;

// y[p] = sum_k w[k] s[k * n + p], k < C (the path without AVX-512).
SINGA_VEC_CLONES void product_row(const float* w, int64_t C, const float* s, int64_t n, float* __restrict y) {
  std::fill(y, y + n, 0.f);
  for (int64_t k = 0; k < C; ++k) {
    const float wk = w[k];
    const float* __restrict sk = s + k * n;
    for (int64_t p = 0; p < n; ++p) y[p] += wk * sk[p];
  }
}

class BatchNormConv : public NodeKernel {
 public:
  explicit BatchNormConv(const sdk::Node& node)
      : NodeKernel(node), norm_act_(node, "norm_"), act_(node), epsilon_(node.attr_float("epsilon", 1e-5f)) {
    sdk::Tensor w = node.constant(5);
    if (!w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 4 || w.dim(2) != 1 || w.dim(3) != 1)
      fail("W (input 5) must be a constant float [M, C, 1, 1]");
    M_ = w.dim(0);
    C_ = w.dim(1);
    w_.assign(w.data<float>(), w.data<float>() + M_ * C_);
    if (pointwise_direct_on()) packed_ = std::make_unique<PointwiseWeights>(pointwise_weights(w_.data(), M_, C_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    const Shape xs = x.shape();
    SINGA_CHECK(x.dtype() == SINGA_ONNX_FLOAT && xs.size() == 4 && xs[1] == C_,
                "X must be float [N, " + std::to_string(C_) + ", H, W], got shape " + shape_str(xs));
    std::vector<double> v[4];
    const char* names[4] = {"scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 4; ++i) {
      sdk::Tensor t = required(ctx, i + 1, names[i]);
      SINGA_CHECK(t.numel() == C_, std::string(names[i]) + " must hold " + std::to_string(C_) + " values, got shape " +
                                       shape_str(t.shape()));
      v[i] = real_values(t, where());
    }
    std::vector<float> a(static_cast<size_t>(C_)), c(static_cast<size_t>(C_));
    for (size_t k = 0; k < a.size(); ++k) {
      const double s = v[0][k] / std::sqrt(v[3][k] + double(epsilon_));
      a[k] = float(s);
      c[k] = float(v[1][k] - v[2][k] * s);
    }
    const float* bias = nullptr;
    if (ctx.has_input(6)) {
      sdk::Tensor b = ctx.input(6);
      SINGA_CHECK(b.dtype() == SINGA_ONNX_FLOAT && b.numel() == M_,
                  "bias must be float with " + std::to_string(M_) + " values, got shape " + shape_str(b.shape()));
      bias = b.data<float>();
    }
    const int64_t N = xs[0], HW = xs[2] * xs[3];
    sdk::Tensor y = ctx.output(0, {N, M_, xs[2], xs[3]}, x.dl_dtype());
    if (N * HW == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();

    // Column blocks whose normalized C x nb floats fit in 256 KB of L2, in
    // whole tiles of the direct kernel; few blocks (small planes) also split
    // the output channels so that every thread has two parts, each part
    // normalizing its own block.
    const int64_t tile = kPointwiseTileCols, threads = std::max(1, ctx.num_threads());
    int64_t nb = std::max<int64_t>(tile, (int64_t(64) << 10) / C_ / tile * tile);
    nb = std::min(nb, HW);
    const int64_t blocks = (HW + nb - 1) / nb, parts = N * blocks;
    const int64_t slices = threads == 1 || parts >= 2 * threads
                               ? 1
                               : std::min((2 * threads + parts - 1) / parts, std::max<int64_t>(1, M_ / kPointwisePanel));
    const int64_t rows = ((M_ + slices - 1) / slices + kPointwisePanel - 1) / kPointwisePanel * kPointwisePanel;
    ctx.parallel_for(parts * slices, 1, [&](int64_t t0, int64_t t1) {
      thread_local std::vector<float> scratch;
      if (scratch.size() < size_t(C_ * nb)) scratch.resize(size_t(C_ * nb));
      float* s = scratch.data();
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / (blocks * slices), c0 = t / slices % blocks * nb, cn = std::min(nb, HW - c0);
        const int64_t m0 = std::min(M_, t % slices * rows), mn = std::min(rows, M_ - m0);
        if (mn <= 0) continue;
        for (int64_t k = 0; k < C_; ++k)
          affine_activation_f32(px + (n * C_ + k) * HW + c0, s + k * cn, cn, a[size_t(k)], c[size_t(k)], norm_act_);
        float* yb = py + (n * M_ + m0) * HW + c0;
        if (packed_) {
          pointwise_direct_f32(*packed_, m0, mn, s, cn, bias, yb, HW, cn, act_);
          continue;
        }
        for (int64_t m = 0; m < mn; ++m) product_row(w_.data() + (m0 + m) * C_, C_, s, cn, yb + m * HW);
        act_.apply_rows(yb, mn, cn, HW, bias ? bias + m0 : nullptr);
      }
    });
  }

 private:
  const FusedActivation norm_act_, act_;
  const float epsilon_;
  int64_t M_ = 0, C_ = 0;
  std::vector<float> w_;
  std::unique_ptr<PointwiseWeights> packed_;
};

}  // namespace

void register_batch_norm_conv(sdk::Registrar& reg) {
  reg.kernel<BatchNormConv>(ops::kCpuDomain, "BatchNormConv", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
