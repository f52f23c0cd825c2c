// norm_common.hpp - what the normalisation kernels share: a scale or bias
// broadcast to the normalised shape, the mean and variance of a run of
// values, the driver over contiguous runs normalised each by its own
// statistics (GroupNormalization, InstanceNormalization, LayerNormalization
// outside its float path), and the base of the kernels over the trailing dims
// from `axis` (LayerNormalization, RMSNormalization).
#ifndef SINGA_OPS_NN_NORM_COMMON_HPP
#define SINGA_OPS_NN_NORM_COMMON_HPP

#include <half_convert_f32.hpp>
#include "moments_f32.hpp"
#include "nn_common.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace nn {

// A small real tensor (a scale, a bias) broadcast numpy-style to `target` and
// read as doubles, flattened row-major; `name` is what a shape error names.
inline std::vector<double> broadcast_values(const sdk::Tensor& t, const Shape& target, const char* name,
                                            const std::string& where) {
  const Shape ts = t.shape();
  bool ok = ts.size() <= target.size();
  for (size_t i = 0; ok && i < ts.size(); ++i) {
    const int64_t d = ts[ts.size() - 1 - i];
    ok = d == 1 || d == target[target.size() - 1 - i];
  }
  if (!ok)
    sdk::fail(std::string(name) + " of shape " + shape_str(ts) + " does not broadcast to the normalised shape " +
              shape_str(target));
  std::vector<double> v = real_values(t, where);
  if (ts == target) return v;
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

// The mean and (biased) variance of n values, summed in double in two passes;
// both 0 for n = 0.
template <class T>
void mean_var(const T* x, int64_t n, double& mean, double& var) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<T, float>::value) {
    if (n > 0 && vec::unary_avx512()) {
      mean = vec::sum_f32(x, n) / double(n);
      var = vec::sum_sq_dev_f32(x, n, mean) / double(n);
      return;
    }
  }
#endif
  double s = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) s += to_acc<double>(x[i]);
  mean = n ? s / double(n) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = to_acc<double>(x[i]) - mean;
    ss += d * d;
  }
  var = n ? ss / double(n) : 0.0;
}

// x and y (of one real type) as `runs` contiguous runs of `len` elements,
// split over the intra-op pool; f(run, xr, yr, mean, var) writes run `run`
// (xr, yr its elements) from its mean and variance (mean_var).
template <class F>
void normalise_runs(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& y, int64_t runs, int64_t len,
                    const std::string& where, F&& f) {
  dispatch_real(x.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    ctx.parallel_for(runs, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, len)), [&](int64_t rb, int64_t re) {
      if constexpr (std::is_same<T, sdk::half>::value) {
        // float16 runs on the float kernels: widened (F16C), normalised in
        // float as the half loop computes, rounded once on the way out.
        std::vector<float> xf(static_cast<size_t>(len)), yf(static_cast<size_t>(len));
        for (int64_t r = rb; r < re; ++r) {
          vec::f16_to_f32(reinterpret_cast<const uint16_t*>(px + r * len), xf.data(), len);
          double mean, var;
          mean_var(xf.data(), len, mean, var);
          f(r, static_cast<const float*>(xf.data()), yf.data(), mean, var);
          vec::f32_to_f16(yf.data(), reinterpret_cast<uint16_t*>(py + r * len), len);
        }
        return;
      }
      for (int64_t r = rb; r < re; ++r) {
        const T* xr = px + r * len;
        T* yr = py + r * len;
        double mean, var;
        mean_var(xr, len, mean, var);
        f(r, xr, yr, mean, var);
      }
    });
  });
}

// The base of LayerNormalization and RMSNormalization: the attributes axis,
// epsilon and stash_type (float only), and the split of X into `outer` rows
// of the D elements of the trailing dims from `axis`.
class TrailingNorm : public NodeKernel {
 public:
  explicit TrailingNorm(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", -1)), epsilon_(node.attr_float("epsilon", 1e-5f)) {
    const int64_t stash = node.attr_int("stash_type", 1);
    if (stash != SINGA_ONNX_FLOAT)
      fail("attribute stash_type " + std::to_string(stash) + " is not supported (only 1, float)");
    if (!(epsilon_ >= 0)) fail("attribute epsilon must not be negative, got " + std::to_string(epsilon_));
  }

 protected:
  struct Split {
    int64_t axis;   // in [0, rank)
    Shape norm;     // the normalised (trailing) dims
    int64_t D;      // their element count
    int64_t outer;  // rows of D (0 when D is)
  };

  Split split(const sdk::Tensor& x) const {
    const Shape xs = x.shape();
    const int64_t rank = int64_t(xs.size());
    check(rank >= 1, "X must have at least one dim");
    SINGA_CHECK(axis_ >= -rank && axis_ < rank,
                "attribute axis " + std::to_string(axis_) + " is out of range for X of rank " + std::to_string(rank));
    Split s;
    s.axis = axis_ < 0 ? axis_ + rank : axis_;
    s.norm.assign(xs.begin() + s.axis, xs.end());
    s.D = sdk::numel(s.norm);
    s.outer = s.D ? x.numel() / s.D : 0;
    return s;
  }

  int64_t axis_;
  float epsilon_;
};

}  // namespace nn
}  // namespace singa

#endif
