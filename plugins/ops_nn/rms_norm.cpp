// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2) + epsilon) * Scale,
// the mean over the trailing dims from `axis`; Scale broadcasts (numpy
// style) to those dims, and Y takes Scale's element type.
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

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

class RmsNorm : public NodeKernel {
 public:
  explicit RmsNorm(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", -1)), epsilon_(node.attr_float("epsilon", 1e-5f)) {
    const int64_t stash = node.attr_int("stash_type", 1);
    if (stash != SINGA_ONNX_FLOAT)
      fail("attribute stash_type " + std::to_string(stash) + " is not supported (only 1, float)");
    if (!(epsilon_ >= 0)) fail("attribute epsilon must not be negative, got " + std::to_string(epsilon_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "scale");
    const Shape xs = x.shape();
    const int64_t rank = int64_t(xs.size());
    check(rank >= 1, "X must have at least one dim");
    check(axis_ >= -rank && axis_ < rank,
          "attribute axis " + std::to_string(axis_) + " is out of range for X of rank " + std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const Shape norm(xs.begin() + axis, xs.end());
    const int64_t D = sdk::numel(norm), outer = D ? x.numel() / D : 0;
    const std::vector<double> sc = expand(scale, norm);
    sdk::Tensor y = ctx.output(0, xs, scale.dl_dtype());
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

 private:
  // Scale broadcast (numpy-style) to the normalised shape, flattened.
  std::vector<double> expand(const sdk::Tensor& t, const Shape& target) const {
    const Shape ts = t.shape();
    bool ok = ts.size() <= target.size();
    for (size_t i = 0; ok && i < ts.size(); ++i) {
      const int64_t d = ts[ts.size() - 1 - i];
      ok = d == 1 || d == target[target.size() - 1 - i];
    }
    check(ok, "scale of shape " + shape_str(ts) + " does not broadcast to the normalised shape " + shape_str(target));
    std::vector<double> v = real_values(t, where());
    if (ts == target) return v;
    const int64_t n = sdk::numel(target);
    std::vector<double> out(static_cast<size_t>(n));
    const size_t r = target.size(), off = r - ts.size();
    std::vector<int64_t> stride(r, 0);
    for (int64_t i = int64_t(ts.size()) - 1, st = 1; i >= 0; --i) {
      stride[size_t(i) + off] = ts[size_t(i)] == 1 ? 0 : st;
      st *= ts[size_t(i)];
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, src = 0;
      for (size_t dd = r; dd-- > 0;) {
        src += (rem % target[dd]) * stride[dd];
        rem /= target[dd];
      }
      out[size_t(i)] = v[size_t(src)];
    }
    return out;
  }

  int64_t axis_;
  float epsilon_;
};

}  // namespace

void register_rms_norm(sdk::Registrar& reg) {
  reg.kernel<RmsNorm>("", "RMSNormalization", 23, SINGA_VERSION_OPEN, "cpu",
                      {{"T", 0, kRealTypes}, {"V", 1, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
