// MeanVarianceNormalization: y = (x - mean) / (std + 1e-9), with mean and
// (population) std taken over `axes`.
#include "nn_common.hpp"
#include "register.hpp"

#include <cmath>

namespace singa {
namespace nn {
namespace {

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
