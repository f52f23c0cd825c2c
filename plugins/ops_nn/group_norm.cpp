// GroupNormalization: the channels of each sample split into num_groups
// groups; each group (its channels and all spatial positions) is normalised
// by its own mean and variance, then scaled and shifted. Opset 18 gives scale
// and bias one value per group, opset 21 one per channel (and adds
// stash_type, the precision of the statistics; they are taken in double here,
// which is at least as precise as any of them).
#include "norm_common.hpp"
#include "register.hpp"

#include <cmath>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

class GroupNorm : public NodeKernel {
 public:
  explicit GroupNorm(const sdk::Node& node)
      : NodeKernel(node),
        epsilon_(node.attr_float("epsilon", 1e-5f)),
        groups_(node.attr_int("num_groups", 0)),
        per_channel_(node.opset() >= 21) {
    if (!node.has_attr("num_groups")) fail("attribute num_groups is required");
    if (groups_ <= 0) fail("attribute num_groups must be positive, got " + std::to_string(groups_));
    if (!(epsilon_ >= 0)) fail("attribute epsilon must not be negative, got " + std::to_string(epsilon_));
    const int64_t stash = node.attr_int("stash_type", 1);
    if (stash != SINGA_ONNX_FLOAT && stash != SINGA_ONNX_DOUBLE && stash != SINGA_ONNX_FLOAT16 &&
        stash != SINGA_ONNX_BFLOAT16)
      fail("attribute stash_type must name a floating-point type, got " + std::to_string(stash));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor scale = required(ctx, 1, "scale");
    sdk::Tensor bias = required(ctx, 2, "bias");
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], G = groups_;
    SINGA_CHECK(C % G == 0, "the " + std::to_string(C) + " channels of X " + shape_str(xs) +
                                " do not split into num_groups = " + std::to_string(G) + " groups");
    const int64_t want = per_channel_ ? C : G;
    const char* per = per_channel_ ? " (one per channel)" : " (one per group)";
    SINGA_CHECK(scale.ndim() == 1 && scale.numel() == want && bias.ndim() == 1 && bias.numel() == want,
                "scale and bias must be 1-D with " + std::to_string(want) + " values" + per + ", got " +
                    shape_str(scale.shape()) + " and " + shape_str(bias.shape()));
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (N * C == 0) return;
    const int64_t S = x.numel() / (N * C);  // spatial size of one channel
    const int64_t CG = C / G;               // channels per group
    const int64_t len = CG * S;             // elements of one group
    std::vector<double> sc = real_values(scale, where()), b = real_values(bias, where());
    normalise_runs(ctx, x, y, N * G, len, where(), [&](int64_t ng, const auto* xg, auto* yg, double mean, double var) {
      using T = std::remove_pointer_t<decltype(yg)>;
      using A = acc_t<T>;
      const double inv = 1.0 / std::sqrt(var + double(epsilon_));
      const int64_t g = ng % G;
      for (int64_t c = 0; c < CG; ++c) {
        const size_t k = size_t(per_channel_ ? g * CG + c : g);
        const double a = sc[k] * inv;
        const A ap = A(a), cp = A(b[k] - mean * a);
        const T* xc = xg + c * S;
        T* yc = yg + c * S;
        for (int64_t i = 0; i < S; ++i) yc[i] = from_acc<T>(to_acc<A>(xc[i]) * ap + cp);
      }
    });
  }

 private:
  float epsilon_;
  int64_t groups_;
  bool per_channel_;
};

}  // namespace

void register_group_norm(sdk::Registrar& reg) {
  // 18: scale and bias per group; 21: per channel, plus stash_type.
  reg.kernel<GroupNorm>("", "GroupNormalization", 18, 18, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<GroupNorm>("", "GroupNormalization", 21, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
