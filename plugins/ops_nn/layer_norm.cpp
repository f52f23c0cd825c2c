// LayerNormalization (opset 17): normalise over the trailing dims from
// `axis`, scale and shift by tensors broadcast to those dims.
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <cmath>

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

class LayerNorm : public NodeKernel {
 public:
  explicit LayerNorm(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", -1)), epsilon_(node.attr_float("epsilon", 1e-5f)) {
    int64_t stash = node.attr_int("stash_type", 1);
    if (stash != SINGA_ONNX_FLOAT)
      fail("attribute stash_type " + std::to_string(stash) + " is not supported (only 1, float)");
    if (!(epsilon_ >= 0)) fail("attribute epsilon must not be negative, got " + std::to_string(epsilon_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "Scale");
    sdk::Tensor bias = ctx.input(2);
    const Shape xs = x.shape();
    const int64_t rank = int64_t(xs.size());
    check(rank >= 1, "X must have at least one dim");
    check(axis_ >= -rank && axis_ < rank,
          "attribute axis " + std::to_string(axis_) + " is out of range for X of rank " + std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const Shape norm(xs.begin() + axis, xs.end());
    const int64_t D = sdk::numel(norm), outer = D ? x.numel() / D : 0;
    std::vector<double> sc = expand(scale, norm, "Scale");
    std::vector<double> b = bias.present() ? expand(bias, norm, "B") : std::vector<double>(size_t(D), 0.0);

    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    Shape stat_shape(xs.begin(), xs.begin() + axis);
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
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.parallel_for(outer, std::max<int64_t>(1, 8192 / D), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          const T* xr = px + r * D;
          T* yr = py + r * D;
          double s = 0, ss = 0;
          for (int64_t i = 0; i < D; ++i) s += to_acc<double>(xr[i]);
          const double mean = s / double(D);
          for (int64_t i = 0; i < D; ++i) {
            const double d = to_acc<double>(xr[i]) - mean;
            ss += d * d;
          }
          const double inv = 1.0 / std::sqrt(ss / double(D) + double(epsilon_));
          for (int64_t i = 0; i < D; ++i)
            yr[i] = from_acc<T>(A((to_acc<double>(xr[i]) - mean) * inv * sc[size_t(i)] + b[size_t(i)]));
          if (pmean) pmean[r] = float(mean);
          if (pinv) pinv[r] = float(inv);
        }
      });
    });
  }

 private:
  // A parameter tensor broadcast (numpy-style, towards `target`) to the
  // normalised shape, flattened.
  std::vector<double> expand(const sdk::Tensor& t, const Shape& target, const char* name) const {
    const Shape ts = t.shape();
    bool ok = ts.size() <= target.size();
    for (size_t i = 0; ok && i < ts.size(); ++i) {
      const int64_t d = ts[ts.size() - 1 - i];
      ok = d == 1 || d == target[target.size() - 1 - i];
    }
    check(ok, std::string(name) + " of shape " + shape_str(ts) + " does not broadcast to the normalised shape " +
                  shape_str(target));
    std::vector<double> v = real_values(t, where());
    if (ts.size() == target.size() && ts == target) return v;
    const int64_t n = sdk::numel(target);
    std::vector<double> out(static_cast<size_t>(n));
    // Row-major strides of t aligned to target, 0 where t broadcasts.
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

void register_layer_norm(sdk::Registrar& reg) {
  reg.kernel<LayerNorm>("", "LayerNormalization", 17, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
