// MeanVarianceNormalization: y = (x - mean) / (std + 1e-9), with mean and
// (population) std taken over `axes`.
#include "moments_f32.hpp"
#include "nn_common.hpp"
#include "register.hpp"

#include <cmath>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

// Sum and sum of squared deviations of a contiguous run, in double.
template <typename T>
double run_sum(const T* x, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<T, float>::value)
    if (vec::unary_avx512()) return vec::sum_f32(x, n);
#endif
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += to_acc<double>(x[i]);
  return s;
}
template <typename T>
double run_sq_dev(const T* x, int64_t n, double mean) {
#ifdef SINGA_AVX512_BEGIN
  if constexpr (std::is_same<T, float>::value)
    if (vec::unary_avx512()) return vec::sum_sq_dev_f32(x, n, mean);
#endif
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = to_acc<double>(x[i]) - mean;
    s += d * d;
  }
  return s;
}

// When the kept axes (those of size > 1) are adjacent, X is [A, G, B] with
// the G groups kept: group g is the A runs x[a][g][0..B). Returns false for
// kept axes with a reduced one of size > 1 between them.
bool split_agb(const Shape& xs, const std::vector<bool>& reduced, int64_t& A, int64_t& G, int64_t& B) {
  int64_t k0 = -1, k1 = -1;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!reduced[d] && xs[d] != 1) {
      if (k0 < 0) k0 = int64_t(d);
      k1 = int64_t(d) + 1;
    }
  if (k0 < 0) k0 = k1 = 0;
  for (int64_t d = k0; d < k1; ++d)
    if (reduced[size_t(d)] && xs[size_t(d)] != 1) return false;
  A = G = B = 1;
  for (int64_t d = 0; d < int64_t(xs.size()); ++d) (d < k0 ? A : d < k1 ? G : B) *= xs[size_t(d)];
  return true;
}

class MeanVarianceNorm : public NodeKernel {
 public:
  explicit MeanVarianceNorm(const sdk::Node& node) : NodeKernel(node), axes_(node.attr_ints("axes", {0, 2, 3})) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    const Shape xs = x.shape();
    const int64_t rank = int64_t(xs.size());
    std::vector<bool> reduced(xs.size(), false);
    for (int64_t a : axes_) {
      SINGA_CHECK(a >= -rank && a < rank,
                  "axis " + std::to_string(a) + " is out of range for X of shape " + shape_str(xs));
      int64_t k = a < 0 ? a + rank : a;
      SINGA_CHECK(!reduced[size_t(k)], "axis " + std::to_string(a) + " is listed twice in axes");
      reduced[size_t(k)] = true;
    }
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    const int64_t n = x.numel();
    if (n == 0) return;
    int64_t A, G, B;
    if (split_agb(xs, reduced, A, G, B)) {
      // Each group's A runs of B contiguous elements, groups over the pool.
      dispatch_real(x.dtype(), where(), [&](auto tag) {
        using T = decltype(tag);
        using Acc = acc_t<T>;
        const T* px = x.data<T>();
        T* py = y.data<T>();
        const double count = double(A * B);
        ctx.parallel_for(G, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, A * B)), [&](int64_t gb, int64_t ge) {
          for (int64_t g = gb; g < ge; ++g) {
            double sum = 0, ss = 0;
            for (int64_t a = 0; a < A; ++a) sum += run_sum(px + (a * G + g) * B, B);
            const double mean = sum / count;
            for (int64_t a = 0; a < A; ++a) ss += run_sq_dev(px + (a * G + g) * B, B, mean);
            const double inv = 1.0 / (std::sqrt(ss / count) + 1e-9);
            const Acc scale = Acc(inv), shift = Acc(-mean * inv);
            for (int64_t a = 0; a < A; ++a) {
              const T* xr = px + (a * G + g) * B;
              T* yr = py + (a * G + g) * B;
              for (int64_t i = 0; i < B; ++i) yr[i] = from_acc<T>(to_acc<Acc>(xr[i]) * scale + shift);
            }
          }
        });
      });
      return;
    }
    // Each element's group: its coordinates on the kept axes, flattened.
    int64_t groups = 1;
    for (size_t d = 0; d < xs.size(); ++d)
      if (!reduced[d]) groups *= xs[d];
    const int64_t per_group = n / groups;
    std::vector<int64_t> group_of(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, gidx = 0, gstride = 1;
      for (size_t d = xs.size(); d-- > 0;) {
        const int64_t c = rem % xs[d];
        rem /= xs[d];
        if (!reduced[d]) {
          gidx += c * gstride;
          gstride *= xs[d];
        }
      }
      group_of[size_t(i)] = gidx;
    }
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0);
      for (int64_t i = 0; i < n; ++i) mean[size_t(group_of[size_t(i)])] += to_acc<double>(px[i]);
      for (double& m : mean) m /= double(per_group);
      for (int64_t i = 0; i < n; ++i) {
        const double d = to_acc<double>(px[i]) - mean[size_t(group_of[size_t(i)])];
        var[size_t(group_of[size_t(i)])] += d * d;
      }
      for (double& v : var) v = std::sqrt(v / double(per_group)) + 1e-9;  // now std + epsilon
      for (int64_t i = 0; i < n; ++i) {
        const size_t gi = size_t(group_of[size_t(i)]);
        py[i] = from_acc<T>(acc_t<T>((to_acc<double>(px[i]) - mean[gi]) / var[gi]));
      }
    });
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

void register_mvn(sdk::Registrar& reg) {
  reg.kernel<MeanVarianceNorm>("", "MeanVarianceNormalization", 9, 12, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<MeanVarianceNorm>("", "MeanVarianceNormalization", 13, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
