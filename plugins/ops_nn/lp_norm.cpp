// LpNormalization: x divided by its L1 or L2 norm along one axis. A lane
// whose norm is 0 (all zeros) gives zeros rather than 0/0.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace singa {
namespace nn {
namespace {

class LpNorm : public NodeKernel {
 public:
  explicit LpNorm(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", -1)), p_(node.attr_int("p", 2)) {
    if (p_ != 1 && p_ != 2) fail("attribute p must be 1 or 2, got " + std::to_string(p_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const Shape xs = x.shape();
    const int64_t r = int64_t(xs.size());
    check(r >= 1, "input must have at least one dim");
    SINGA_CHECK(axis_ >= -r && axis_ < r,
                "attribute axis " + std::to_string(axis_) + " is out of range for input of shape " + shape_str(xs));
    const size_t a = size_t(axis_ < 0 ? axis_ + r : axis_);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < a; ++i) outer *= xs[i];
    for (size_t i = a + 1; i < xs.size(); ++i) inner *= xs[i];
    const int64_t len = xs[a];
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (x.numel() == 0) return;
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const bool l1 = p_ == 1;
      ctx.parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, len)), [&](int64_t b, int64_t e) {
        for (int64_t lane = b; lane < e; ++lane) {
          const int64_t base = (lane / inner) * len * inner + lane % inner;
          double s = 0;
          for (int64_t k = 0; k < len; ++k) {
            const double v = to_acc<double>(px[base + k * inner]);
            s += l1 ? std::fabs(v) : v * v;
          }
          const double norm = l1 ? s : std::sqrt(s);
          const A inv = norm != 0 ? A(1.0 / norm) : A(0);
          for (int64_t k = 0; k < len; ++k) py[base + k * inner] = from_acc<T>(to_acc<A>(px[base + k * inner]) * inv);
        }
      });
    });
  }

 private:
  int64_t axis_, p_;
};

}  // namespace

void register_lp_norm(sdk::Registrar& reg) {
  // 22 adds bfloat16.
  reg.kernel<LpNorm>("", "LpNormalization", 1, 1, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<LpNorm>("", "LpNormalization", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
