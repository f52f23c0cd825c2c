// LayerNormalization (opset 17): normalise over the trailing dims from
// `axis`, scale and shift by tensors broadcast to those dims.
#include "norm_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <cmath>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

// One float row: sums in 16 independent lanes so the loops vectorize (a
// float reduction is not reassociated otherwise); the row's statistics in
// float, as ORT computes them, since stash_type is float.
SINGA_VEC_CLONES void layer_norm_row_f32(const float* x, float* y, int64_t D, const float* sc, const float* b, float eps,
                                         float& mean_out, float& inv_out) {
  constexpr int L = 16;
  float acc[L] = {};
  int64_t i = 0;
  for (; i + L <= D; i += L)
    for (int l = 0; l < L; ++l) acc[l] += x[i + l];
  float s = 0;
  for (int l = 0; l < L; ++l) s += acc[l];
  for (; i < D; ++i) s += x[i];
  const float mean = s / float(D);
  float sq[L] = {};
  for (i = 0; i + L <= D; i += L)
    for (int l = 0; l < L; ++l) {
      const float d = x[i + l] - mean;
      sq[l] += d * d;
    }
  float ss = 0;
  for (int l = 0; l < L; ++l) ss += sq[l];
  for (; i < D; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.f / std::sqrt(ss / float(D) + eps);
  for (i = 0; i < D; ++i) y[i] = (x[i] - mean) * inv * sc[i] + b[i];
  mean_out = mean;
  inv_out = inv;
}

class LayerNorm : public TrailingNorm {
 public:
  using TrailingNorm::TrailingNorm;

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "Scale");
    sdk::Tensor bias = ctx.input(2);
    const Shape xs = x.shape();
    const Split sp = split(x);
    const int64_t D = sp.D, outer = sp.outer;
    std::vector<double> sc = broadcast_values(scale, sp.norm, "Scale", where());
    std::vector<double> b =
        bias.present() ? broadcast_values(bias, sp.norm, "B", where()) : std::vector<double>(size_t(D), 0.0);

    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    Shape stat_shape(xs.begin(), xs.begin() + sp.axis);
    stat_shape.resize(xs.size(), 1);
    float* pmean = ctx.num_outputs() > 1 ? ctx.output(1, stat_shape, SINGA_ONNX_FLOAT).data<float>() : nullptr;
    float* pinv = ctx.num_outputs() > 2 ? ctx.output(2, stat_shape, SINGA_ONNX_FLOAT).data<float>() : nullptr;
    if (outer == 0 || D == 0) return;
    if (x.dtype() == SINGA_ONNX_FLOAT) {
      const std::vector<float> scf(sc.begin(), sc.end()), bf(b.begin(), b.end());
      const float* px = x.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(outer, std::max<int64_t>(1, 8192 / D), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          float mean, inv;
          layer_norm_row_f32(px + r * D, py + r * D, D, scf.data(), bf.data(), epsilon_, mean, inv);
          if (pmean) pmean[r] = mean;
          if (pinv) pinv[r] = inv;
        }
      });
      return;
    }
    normalise_runs(ctx, x, y, outer, D, where(), [&](int64_t r, const auto* xr, auto* yr, double mean, double var) {
      using T = std::remove_pointer_t<decltype(yr)>;
      using A = acc_t<T>;
      const double inv = 1.0 / std::sqrt(var + double(epsilon_));
      for (int64_t i = 0; i < D; ++i)
        yr[i] = from_acc<T>(A((to_acc<double>(xr[i]) - mean) * inv * sc[size_t(i)] + b[size_t(i)]));
      if (pmean) pmean[r] = float(mean);
      if (pinv) pinv[r] = float(inv);
    });
  }
};

}  // namespace

void register_layer_norm(sdk::Registrar& reg) {
  reg.kernel<LayerNorm>("", "LayerNormalization", 17, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
