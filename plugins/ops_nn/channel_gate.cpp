// ai.singa.cpu ChannelGate(X, G) -> Y: the end of a squeeze-and-excitation
// block, Y[n, c, ...] = X[n, c, ...] * act(G[n, c]), with X of shape
// [N, C, spatial...] and G of [N, C, 1, ...] or [1, C, 1, ...] (one gate per
// channel). The attribute `activation` (fused_activation.hpp; the SE pass
// puts Sigmoid or HardSigmoid there) applies to the N*C gates only, and each
// plane is scaled in one pass: no [N, C, H, W] broadcast Mul, and no Sigmoid
// node between (passes/fuse_squeeze_excite.cpp).
#include "fused_activation.hpp"
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"

#include <cpu_domain.hpp>

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {
namespace {

SINGA_VEC_CLONES void scale_plane(const float* x, float s, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

class ChannelGate : public NodeKernel {
 public:
  explicit ChannelGate(const sdk::Node& node) : NodeKernel(node), act_(node) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = required(ctx, 0, "X"), g = required(ctx, 1, "G");
    check(x.dtype() == SINGA_ONNX_FLOAT && g.dtype() == SINGA_ONNX_FLOAT, "X and G must be float");
    const Shape& xs = x.shape();
    const Shape& gs = g.shape();
    SINGA_CHECK(xs.size() >= 2 && gs.size() == xs.size(),
                "X " + shape_str(xs) + " and G " + shape_str(gs) + " must have one rank, at least 2");
    const int64_t N = xs[0], C = xs[1];
    bool ok = (gs[0] == N || gs[0] == 1) && gs[1] == C;
    for (size_t d = 2; d < gs.size(); ++d) ok = ok && gs[d] == 1;
    SINGA_CHECK(
        ok, "G " + shape_str(gs) + " must hold one gate per channel of X " + shape_str(xs) + " ([N or 1, C, 1, ...])");
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    const int64_t plane = N * C == 0 ? 0 : x.numel() / (N * C);
    if (x.numel() == 0) return;
    // The gates through the activation first: N*C values.
    const int64_t gates = gs[0] * C;
    std::vector<float> s(g.data<float>(), g.data<float>() + gates);
    act_.apply_rows(s.data(), 1, gates, gates, nullptr);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool per_image = gs[0] == N;
    ctx.parallel_for(N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane, 1)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) scale_plane(px + p * plane, s[size_t(per_image ? p : p % C)], py + p * plane, plane);
    });
  }

 private:
  ops::FusedActivation act_;
};

}  // namespace

void register_channel_gate(sdk::Registrar& reg) {
  reg.kernel<ChannelGate>(ops::kCpuDomain, "ChannelGate", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
