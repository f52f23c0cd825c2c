// ExpandDepthwiseProject (domain ai.singa, opset 1): the body of an inverted
// residual block, which plugins/ops_nn/passes/fuse_inverted_residual.cpp makes on the
// CPU from three float Convs (inverted_residual_f32.hpp says why):
//
//   ExpandDepthwiseProject(X, W1?, B1?, Wd, Bd?, W2, B2?) -> Y
//     Y = Conv(Conv(Conv(X, W1, B1), Wd, Bd, group = Me), W2, B2)
//   W1 [Me, C, 1, 1] (absent: no expand stage, Me = C), or a stem's
//   [Me, C, KH, KW] whose window attributes come as expand_kernel_shape,
//   expand_strides, expand_pads, expand_dilations (`expand_window` = 1 says
//   the stage has them, even where they are all defaults), Wd [Me, 1, K, K],
//   W2 [M, Me, 1, 1] (absent: no project stage, Y is the depthwise result
//   [N, Me, OH, OW], and B2, project_* and residual are not given: an
//   EfficientNet block's first two stages, whose result its
//   squeeze-and-excitation reads; an optional second output, Mean
//   [N, Me, 1, 1], then holds its GlobalAveragePool); the depthwise Conv's
//   window attributes (kernel_shape, strides, pads, dilations, auto_pad) as
//   they were, and each stage's fused
//   activation under the prefixes expand_, depthwise_ and project_
//   (fused_activation.hpp); `residual` (0 or 1): Y += X, the block's skip
//   connection's Add (stride 1 and M == C); `channels_last_input` and
//   `channels_last_output` (0 or 1): X and Y hold their logical NCHW shapes'
//   values channels-last, [N, H, W, C] (plugins/ops_nn/passes/channels_last_layout.cpp).
//
//   ExpandDepthwiseProject(X, W1?, B1?, Wd, Bd?, W2, B2?, S1, SB1?, S2, SB2?)
//   adds a squeeze-and-excitation between the depthwise and project stages:
//   the depthwise result D times gate = gate_act(Conv(squeeze_act(Conv(
//   GlobalAveragePool(D), S1, SB1)), S2, SB2)) per channel, S1 [R, Me, 1, 1],
//   S2 [Me, R, 1, 1], the activations under the prefixes squeeze_ and gate_.
//
//   With a project stage, the optional second output Mean is Y's mean over
//   H and W per image and channel, [N, M, 1, 1] (or [N, M] where attribute
//   mean_keepdims = 0): a ReduceMean head after the net's last block
//   (plugins/ops_nn/passes/fuse_conv_reduce_mean.cpp). Y may then be left
//   out (an empty name), and the block's result is summed without being stored.
#include "conv_nchw_f32.hpp"
#include <cpu_domain.hpp>
#include "inverted_residual_f32.hpp"
#include "layouts.hpp"
#include "register.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

class ExpandDepthwiseProject : public NodeKernel {
 public:
  explicit ExpandDepthwiseProject(const sdk::Node& node)
      : NodeKernel(node),
        attrs_(node, *this),
        stem_attrs_(node, *this, "expand_"),
        stem_(node.attr_int("expand_window", 0) != 0),
        residual_(node.attr_int("residual", 0) != 0),
        x_channels_last_(node.input_layout(0) == kChannelsLastLayout),
        y_channels_last_(node.output_layout(0) == kChannelsLastLayout),
        means_(node.has_output(1)),
        y_wanted_(node.has_output(0)),
        mean_keepdims_(node.attr_int("mean_keepdims", 1) != 0),
        expand_act_(node, "expand_"),
        dw_act_(node, "depthwise_"),
        project_act_(node, "project_"),
        squeeze_act_(node, "squeeze_"),
        gate_act_(node, "gate_"),
        band_tiles_(node.option_bool("cpu.band_tiles", true)),
        depthwise_blocked_(node.option_bool("cpu.depthwise_blocked", true)) {
    // A skip connection adds X in Y's layout (where Y is stored).
    if (residual_ && y_wanted_ && x_channels_last_ != y_channels_last_)
      fail("X is in layout '" + node.input_layout(0) + "' and Y in '" + node.output_layout(0) +
           "'; a residual node adds X in Y's layout");
    // The weights are initializers wherever the pass made the node: their
    // band layouts once here, not on every run.
    sdk::Tensor w1 = node.constant(1), wd = node.constant(3), w2 = node.constant(5);
    auto float4 = [](const sdk::Tensor& t) { return t.present() && t.dtype() == SINGA_ONNX_FLOAT && t.shape().size() == 4; };
    if (!float4(wd) || (node.has_input(5) && !float4(w2)) || (w1.present() && !float4(w1))) return;
    InvertedResidual s;
    s.band_tiles = band_tiles_;
    s.expand = w1.present();
    s.stem_conv = stem_ && s.expand;
    s.project = w2.present();
    s.Me = wd.shape()[0];
    s.C = s.expand ? w1.shape()[1] : s.Me;
    s.M = s.project ? w2.shape()[0] : s.Me;
    s.dw.k[1] = wd.shape()[2];
    s.dw.k[2] = wd.shape()[3];
    s.stem.k[1] = s.expand ? w1.shape()[2] : 1;
    s.stem.k[2] = s.expand ? w1.shape()[3] : 1;
    // compute() names a mismatch.
    if ((s.expand && w1.shape()[0] != s.Me) || (s.project && w2.shape()[1] != s.Me)) return;
    // The SE's second weights transposed, for its gates' row sums.
    sdk::Tensor s2 = node.constant(9);
    if (float4(s2) && s2.shape()[2] == 1 && s2.shape()[3] == 1) {
      const int64_t rows = s2.shape()[0], cols = s2.shape()[1];
      se_w2t_.resize(size_t(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) se_w2t_[size_t(c * rows + r)] = s2.data<float>()[r * cols + c];
      se_w2t_of_ = s2.data<float>();
    }
    prepared_ = inverted_residual_weights(s.expand ? w1.data<float>() : nullptr, wd.data<float>(),
                                          s.project ? w2.data<float>() : nullptr, s);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), w1 = ctx.input(1), b1 = ctx.input(2), wd = required(ctx, 3, "Wd"),
                bd = ctx.input(4), w2 = ctx.input(5), b2 = ctx.input(6);
    for (const sdk::Tensor* t : {&x, &w1, &b1, &wd, &bd, &w2, &b2})
      if (t->present()) check(t->dtype() == SINGA_ONNX_FLOAT, "every input must be float");
    const Shape xs = x.shape();
    SINGA_CHECK(xs.size() == 4, "X must be [N, C, H, W], got " + shape_str(xs));
    InvertedResidual s;
    s.N = xs[0];
    s.C = xs[1];
    s.expand = w1.present();
    check(s.expand || !b1.present(), "B1 is given without W1");
    s.Me = s.expand ? w1.shape()[0] : s.C;
    check(!stem_ || s.expand, "attribute expand_window is given without W1");
    s.stem_conv = stem_;
    if (s.stem_conv) {
      const Shape ws = w1.shape();
      SINGA_CHECK(ws.size() == 4 && ws[1] == s.C,
                  "W1 must be [Me, " + std::to_string(s.C) + ", KH, KW], got " + shape_str(ws));
      s.stem = window_geometry(stem_attrs_, {xs[2], xs[3]}, {ws[2], ws[3]}, *this);
    } else if (s.expand) {
      SINGA_CHECK((w1.shape() == Shape{s.Me, s.C, 1, 1}),
                  "W1 must be [Me, " + std::to_string(s.C) + ", 1, 1], got " + shape_str(w1.shape()));
    }
    const int64_t H = s.stem_conv ? s.stem.out[1] : xs[2], W = s.stem_conv ? s.stem.out[2] : xs[3];
    const Shape ds = wd.shape();
    SINGA_CHECK(ds.size() == 4 && ds[0] == s.Me && ds[1] == 1 && ds[2] == ds[3],
                "Wd must be [" + std::to_string(s.Me) + ", 1, K, K], got " + shape_str(ds));
    s.project = w2.present();
    if (s.project) {
      const Shape ps = w2.shape();
      SINGA_CHECK(ps.size() == 4 && ps[1] == s.Me && ps[2] == 1 && ps[3] == 1,
                  "W2 must be [M, " + std::to_string(s.Me) + ", 1, 1], got " + shape_str(ps));
      s.M = ps[0];
    } else {
      check(!b2.present(), "B2 is given without W2");
      check(!residual_, "attribute residual needs a project stage (W2)");
      check(project_act_.kind == ops::FusedActivation::kNone, "a project activation is given without W2");
      s.M = s.Me;
    }
    check(y_wanted_ || (means_ && s.project), "output Y may be left out only with a project stage (W2) and output Mean");
    check(mean_keepdims_ || s.project, "attribute mean_keepdims = 0 needs a project stage (W2)");
    SqueezeExcite se;
    const sdk::Tensor s1 = ctx.input(7), sb1 = ctx.input(8), s2 = ctx.input(9), sb2 = ctx.input(10);
    if (s1.present() || s2.present()) {
      check(s.project, "a squeeze-and-excitation (S1, S2) needs a project stage (W2)");
      check(s1.present() && s2.present(), "S1 and S2 come together");
      for (const sdk::Tensor* t : {&s1, &sb1, &s2, &sb2})
        if (t->present()) check(t->dtype() == SINGA_ONNX_FLOAT, "every input must be float");
      const Shape a = s1.shape(), b = s2.shape();
      SINGA_CHECK(a.size() == 4 && a[0] > 0 && a[1] == s.Me && a[2] == 1 && a[3] == 1,
                  "S1 must be [R, " + std::to_string(s.Me) + ", 1, 1], got " + shape_str(a));
      SINGA_CHECK((b == Shape{s.Me, a[0], 1, 1}),
                  "S2 must be [" + std::to_string(s.Me) + ", " + std::to_string(a[0]) + ", 1, 1], got " + shape_str(b));
      se.R = a[0];
      auto check_se_bias = [&](const sdk::Tensor& t, int64_t n, const char* name) {
        if (t.present())
          SINGA_CHECK(t.numel() == n, std::string(name) + " has " + std::to_string(t.numel()) + " values, expected " +
                                          std::to_string(n));
      };
      check_se_bias(sb1, se.R, "SB1");
      check_se_bias(sb2, s.Me, "SB2");
      se.w1 = s1.data<float>();
      se.b1 = sb1.present() ? sb1.data<float>() : nullptr;
      se.w2 = s2.data<float>();
      if (se.w2 == se_w2t_of_ && se_w2t_.size() == size_t(se.R * s.Me)) se.w2t = se_w2t_.data();
      se.b2 = sb2.present() ? sb2.data<float>() : nullptr;
      se.act = squeeze_act_;
      se.gate_act = gate_act_;
      s.se = &se;
    }
    auto check_bias = [&](const sdk::Tensor& b, int64_t n, const char* name) {
      if (b.present())
        SINGA_CHECK(b.numel() == n,
                    std::string(name) + " has " + std::to_string(b.numel()) + " values, expected " + std::to_string(n));
    };
    check_bias(b1, s.Me, "B1");
    check_bias(bd, s.Me, "Bd");
    check_bias(b2, s.M, "B2");
    s.dw = window_geometry(attrs_, {H, W}, {ds[2], ds[3]}, *this);
    check(depthwise_fits(s.dw, s.Me, s.Me, s.Me),
          "the depthwise window must be 3x3, 5x5 or 7x7 with stride 1 or 2, no dilation and pads below the kernel");
    s.residual = residual_;
    s.x_channels_last = x_channels_last_;
    s.y_channels_last = y_channels_last_;
    if (s.residual)
      SINGA_CHECK(!s.stem_conv && s.M == s.C && s.dw.out[1] == xs[2] && s.dw.out[2] == xs[3],
                  "attribute residual needs Y of X's shape " + shape_str(xs));
    s.expand_act = expand_act_;
    s.dw_act = dw_act_;
    s.project_act = project_act_;
    s.band_tiles = band_tiles_;
    s.depthwise_blocked = depthwise_blocked_;
    const int64_t y_count = s.N * s.M * s.dw.out[1] * s.dw.out[2];
    sdk::Tensor y;
    if (y_wanted_) y = ctx.output(0, Shape{s.N, s.M, s.dw.out[1], s.dw.out[2]}, x.dl_dtype());
    if (means_) {
      // The depthwise result's means without a project stage, else Y's.
      const int64_t channels = s.project ? s.M : s.Me;
      const Shape shape = mean_keepdims_ ? Shape{s.N, channels, 1, 1} : Shape{s.N, channels};
      sdk::Tensor mean = ctx.output(1, shape, x.dl_dtype());
      float* m = mean.numel() ? mean.data<float>() : nullptr;
      (s.project ? s.y_means : s.means) = m;
      if (y_count == 0 && m)  // no pixels: the mean of nothing
        std::fill(m, m + mean.numel(), std::numeric_limits<float>::quiet_NaN());
    }
    if (y_count == 0 || x.numel() == 0) return;
    auto ptr = [](const sdk::Tensor& t) { return t.present() ? t.data<float>() : nullptr; };
    inverted_residual_f32(ctx, x.data<float>(), ptr(w1), ptr(b1), wd.data<float>(), ptr(bd), ptr(w2), ptr(b2),
                          y_wanted_ ? y.data<float>() : nullptr, s, prepared_.fit(s) ? &prepared_ : nullptr);
  }

 private:
  WindowAttrs attrs_, stem_attrs_;
  bool stem_, residual_, x_channels_last_, y_channels_last_;
  bool means_;          // output 1, the depthwise result's or Y's means, is wanted
  bool y_wanted_;       // output 0, Y, is wanted (it may be left out where Mean is)
  bool mean_keepdims_;  // Mean [N, M, 1, 1], or [N, M] (attribute mean_keepdims = 0)
  ops::FusedActivation expand_act_, dw_act_, project_act_, squeeze_act_, gate_act_;
  bool band_tiles_, depthwise_blocked_;  // options cpu.band_tiles, cpu.depthwise_blocked
  InvertedResidualWeights prepared_;
  std::vector<float> se_w2t_;           // S2 transposed, [R, Me], where S2 is a constant
  const float* se_w2t_of_ = nullptr;    // the S2 data it was made from
};

}  // namespace

void register_expand_depthwise_project(sdk::Registrar& reg) {
  reg.kernel<ExpandDepthwiseProject>(ops::kCpuDomain, "ExpandDepthwiseProject", 1, 1, "cpu",
                                     {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}},
                                     {{0, kChannelsLastLayout}, {-1, kChannelsLastLayout}});
}

}  // namespace nn
}  // namespace singa
