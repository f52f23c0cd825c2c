// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2) + epsilon) * Scale,
// the mean over the trailing dims from `axis`; Scale broadcasts (numpy
// style) to those dims, and Y takes Scale's element type.
#include "norm_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <half_convert_f32.hpp>

#include <cmath>

namespace singa {
namespace nn {
namespace {

// One float row: the sum of squares in 16 independent lanes so the loop
// vectorizes; the statistic in float, as stash_type 1 asks.
SINGA_VEC_CLONES void rms_norm_row_f32(const float* x, float* y, int64_t D, const float* sc, float eps) {
  constexpr int L = 16;
  float acc[L] = {};
  int64_t i = 0;
  for (; i + L <= D; i += L)
    for (int l = 0; l < L; ++l) acc[l] += x[i + l] * x[i + l];
  float ss = 0;
  for (int l = 0; l < L; ++l) ss += acc[l];
  for (; i < D; ++i) ss += x[i] * x[i];
  const float inv = 1.f / std::sqrt(ss / float(D) + eps);
  for (i = 0; i < D; ++i) y[i] = x[i] * inv * sc[i];
}

class RmsNorm : public TrailingNorm {
 public:
  using TrailingNorm::TrailingNorm;

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "scale");
    const Split sp = split(x);
    const int64_t D = sp.D, outer = sp.outer;
    const std::vector<double> sc = broadcast_values(scale, sp.norm, "scale", where());
    sdk::Tensor y = ctx.output(0, x.shape(), scale.dl_dtype());
    if (outer == 0 || D == 0) return;
    if (x.dtype() == SINGA_ONNX_FLOAT && y.dtype() == SINGA_ONNX_FLOAT) {
      const std::vector<float> scf(sc.begin(), sc.end());
      const float* px = x.data<float>();
      float* py = y.data<float>();
      ctx.parallel_for(outer, std::max<int64_t>(1, 8192 / D), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) rms_norm_row_f32(px + r * D, py + r * D, D, scf.data(), epsilon_);
      });
      return;
    }
    if (x.dtype() == SINGA_ONNX_FLOAT16 && y.dtype() == SINGA_ONNX_FLOAT16) {
      // float16 rows through the float kernel: widened in blocks (F16C),
      // the statistic in float as the generic loop keeps it, rounded once.
      const std::vector<float> scf(sc.begin(), sc.end());
      const auto* px = reinterpret_cast<const uint16_t*>(x.data<sdk::half>());
      auto* py = reinterpret_cast<uint16_t*>(y.data<sdk::half>());
      ctx.parallel_for(outer, std::max<int64_t>(1, 8192 / D), [&](int64_t rb, int64_t re) {
        std::vector<float> buf(size_t(2 * D));
        for (int64_t r = rb; r < re; ++r) {
          vec::f16_to_f32(px + r * D, buf.data(), D);
          rms_norm_row_f32(buf.data(), buf.data() + D, D, scf.data(), epsilon_);
          vec::f32_to_f16(buf.data() + D, py + r * D, D);
        }
      });
      return;
    }
    dispatch_real(x.dtype(), where(), [&](auto xtag) {
      using T = decltype(xtag);
      dispatch_real(y.dtype(), where(), [&](auto ytag) {
        using V = decltype(ytag);
        // double X keeps double statistics; the others go through float.
        using A = acc_t<T>;
        const T* px = x.data<T>();
        V* py = y.data<V>();
        ctx.parallel_for(outer, std::max<int64_t>(1, 8192 / D), [&](int64_t rb, int64_t re) {
          for (int64_t r = rb; r < re; ++r) {
            const T* xr = px + r * D;
            V* yr = py + r * D;
            A ss = 0;
            for (int64_t i = 0; i < D; ++i) {
              const A v = to_acc<A>(xr[i]);
              ss += v * v;
            }
            const A inv = A(1) / std::sqrt(ss / A(D) + A(epsilon_));
            for (int64_t i = 0; i < D; ++i) yr[i] = from_acc<V>(to_acc<A>(xr[i]) * inv * A(sc[size_t(i)]));
          }
        });
      });
    });
  }
};

}  // namespace

void register_rms_norm(sdk::Registrar& reg) {
  reg.kernel<RmsNorm>("", "RMSNormalization", 23, SINGA_VERSION_OPEN, "cpu",
                      {{"T", 0, kRealTypes}, {"V", 1, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
