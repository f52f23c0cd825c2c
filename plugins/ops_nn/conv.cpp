// Conv (1-D to 3-D, groups, dilations, strides, pads, auto_pad, bias), plus
// the activation a graph pass may have fused into it (plugins/common/fused_activation.hpp),
// and ai.singa.cpu::ConvAdd (plugins/ops_nn/passes/fuse_conv_add.cpp), a float Conv with a
// fourth input Z of the output's shape: Y = activation(Conv(X, W, B) + Z),
// and ai.singa.cpu::ConvMeanGemm (plugins/ops_nn/passes/fuse_conv_mean_gemm.cpp), a Conv
// with a fused GlobalAveragePool whose means go through a Gemm.
// float32 2-D convolutions of inputs with at most 4 channels (a network's
// stem) run through conv_thin_f32.hpp; the others whose input shape is known
// at create time through oneDNN (conv_dnnl.hpp); the rest, and any run whose
// input shape differs from the planned one, through im2col + OpenBLAS or the
// direct loop.
#include "blas_threads.hpp"
#include "blocked16_f32.hpp"
#include "classifier_head_f32.hpp"
#include "fused_activation.hpp"
#include "conv_dnnl.hpp"
#include "conv_gemm_f32.hpp"
#include "conv_impl.hpp"
#include "conv_nchw_f32.hpp"
#include "conv_relu_pool.hpp"
#include <cpu_domain.hpp>
#include "conv_thin_f32.hpp"
#include "depthwise_1d_f32.hpp"
#include "layouts.hpp"
#include "nn_common.hpp"
#include "pointwise_mean_f32.hpp"
#include "pool_f32.hpp"
#include "register.hpp"
#include "spatial.hpp"
#include "winograd_f32.hpp"

#include <line_aligned.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

using ops::FusedActivation;

// The fused ops of the CPU domain (plugins/ops_nn/passes) carry the fused
// activation, pool, mean and layout attributes; a standard Conv is read as
// ONNX defines it, whatever else it carries.
bool fused_op(const sdk::Node& node) { return node.op_type() != "Conv"; }

// The paths a Conv may take, from the prepare's named options
// (docs/options.md). Each is on by default; =0 turns it off, to time or
// check a fast path against the one it replaced.
struct ConvSwitches {
  explicit ConvSwitches(const sdk::Node& node)
      : dnnl(node.option_bool("cpu.dnnl", true)),
        thin(node.option_bool("cpu.conv_thin", true)),
        nchw(node.option_bool("cpu.conv_nchw", true)),
        pointwise_direct(node.option_bool("cpu.pointwise_direct", true)),
        depthwise_blocked(node.option_bool("cpu.depthwise_blocked", true)),
        winograd(node.option_bool("cpu.winograd", true)),
        winograd_tile(int(node.option_int("cpu.winograd_tile", 0, 0, 4))) {
    if (winograd_tile != 0 && winograd_tile != 2 && winograd_tile != 4)
      node.fail("option cpu.winograd_tile=" + std::to_string(winograd_tile) + ": expected 0 (chosen per shape), 2 or 4");
    dnnl_switches.winograd = node.option_bool("cpu.dnnl_winograd", true);
    dnnl_switches.unblock16 = node.option_bool("cpu.dnnl_unblock16", true);
    dnnl_switches.winograd_part_bytes = size_t(node.option_int("cpu.dnnl_winograd_part_mib", 16, 1, 1 << 20)) << 20;
  }
  bool dnnl, thin, nchw, pointwise_direct, depthwise_blocked, winograd;
  int winograd_tile;  // 0: chosen per shape
  DnnlSwitches dnnl_switches;
};

class Conv : public NodeKernel {
 public:
  explicit Conv(const sdk::Node& node)
      : NodeKernel(node),
        switches_(node),
        attrs_(node, *this),
        group_(node.attr_int("group", 1)),
        act_(fused_op(node) ? FusedActivation(node) : FusedActivation()),
        sum_(node.op_type() == "ConvAdd"),
        conv_act_(sum_ ? FusedActivation() : act_) {
    if (group_ < 1) fail("attribute group must be positive, got " + std::to_string(group_));
    // A MaxPool fused by plugins/ops_nn/passes/fuse_conv_pool.cpp: its window under
    // pool_kernel_shape, pool_strides, pool_pads and pool_ceil_mode.
    if (fused_op(node)) pool_.kernel_shape = node.attr_ints("pool_kernel_shape");
    pooled_ = !pool_.kernel_shape.empty();
    if (pooled_) {
      pool_.strides = node.attr_ints("pool_strides");
      pool_.pads = node.attr_ints("pool_pads");
      pool_.ceil_mode = node.attr_int("pool_ceil_mode", 0) != 0;
      if (pool_.kernel_shape.size() != 2) fail("attribute pool_kernel_shape must hold 2 values");
      if (sum_) fail("a ConvAdd does not take a fused MaxPool");
    }
    // A GlobalAveragePool fused by plugins/ops_nn/passes/fuse_conv_mean.cpp: the Conv
    // writes each output channel's mean over the plane.
    mean_ = fused_op(node) && node.attr_int("global_average_pool", 0) != 0;
    if (mean_ && (sum_ || pooled_)) fail("a Conv with global_average_pool takes neither Z nor a fused MaxPool");
    // A classifier head (plugins/ops_nn/passes/fuse_conv_mean_gemm.cpp): the means go
    // through a Gemm with inputs 3 (Wfc) and 4 (its bias row, optional).
    classifier_ = node.op_type() == "ConvMeanGemm";
    classifier_trans_b_ = node.attr_int("transB", 0) != 0;
    if (classifier_ && !mean_) fail("a ConvMeanGemm needs global_average_pool = 1");
    // Activations in 16-channel blocks (plugins/ops_nn/passes/blocked_layout.cpp):
    // the values' layouts, which the host lets through only to the fused
    // ops that declare them (register_conv).
    layout_.in = node.input_layout(0) == kBlocked16Layout;
    layout_.out = node.output_layout(0) == kBlocked16Layout;
    // The kernel adds Z in Y's layout, or in blocks before Y leaves them.
    layout_.z = sum_ && node.num_inputs() > 3 && node.input_layout(3) == kBlocked16Layout && !layout_.out;
    if (sum_ && node.num_inputs() > 3 && node.input_layout(3) != node.output_layout(0) && !layout_.z)
      fail("Z is in layout '" + node.input_layout(3) + "' and Y in '" + node.output_layout(0) +
           "'; a ConvAdd adds Z in Y's layout or Z in blocks to Y in NCHW");
    if ((layout_.in || layout_.out) && group_ != 1) fail("a blocked layout needs group 1");
    if ((layout_.in || layout_.out) && mean_) fail("a Conv with global_average_pool takes no blocked layout");
    pack_thin(node);
    pack_winograd(node);
    plan_dnnl(node);
    pack_pointwise(node);
    // 16-bit float weights are widened once here instead of on every run.
    sdk::Tensor w = node.constant(1);
    if (w.present() && (w.dtype() == SINGA_ONNX_FLOAT16 || w.dtype() == SINGA_ONNX_BFLOAT16)) {
      dispatch_among<half, bfloat16>(w.dtype(), where(), [&](auto tag) {
        using T = decltype(tag);
        const T* p = w.data<T>();
        wide_weights_.resize(size_t(w.numel()));
        for (size_t i = 0; i < wide_weights_.size(); ++i) wide_weights_[i] = to_acc<float>(p[i]);
      });
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor z = sum_ ? required(ctx, 3, "Z") : sdk::Tensor();
    if (sum_)
      SINGA_CHECK(x.dtype() == SINGA_ONNX_FLOAT && z.dtype() == SINGA_ONNX_FLOAT,
                  std::string("X and Z must be float, got ") + sdk::dtype_name(x.dtype()) + " and " +
                      sdk::dtype_name(z.dtype()));
    const DnnlConv* dnnl = dnnl_for(ctx, x);
    if (dnnl && x.dtype() == SINGA_ONNX_FLOAT && x.shape() == dnnl->input_shape()) {
      if (sum_) check_summand(z, dnnl->output_shape());
      sdk::Tensor y = ctx.output(0, dnnl->output_shape(), x.dl_dtype());
      dnnl->run(ctx, x.data<float>(), required(ctx, 1, "W").data<float>(), y.data<float>(),
                sum_ ? z.data<float>() : nullptr);
      return;
    }
    if (layout_.in || layout_.out || layout_.z) return compute_unblocked(ctx, x, z);
    compute_nchw(ctx, x, z, nullptr);
  }

 private:
  // The paths other than oneDNN's, on NCHW tensors; returns Y, NCHW unless
  // conv_thin_f32 wrote it in blocks (then *blocked is set).
  sdk::Tensor compute_nchw(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& z, bool* blocked) const {
    ops::use_blas_threads(ctx);
    sdk::Tensor w = required(ctx, 1, "W");
    sdk::Tensor b = ctx.input(2);
    SINGA_CHECK(w.dtype() == x.dtype() && (!b.present() || b.dtype() == x.dtype()),
                std::string("X, W and B must share one element type, got ") + sdk::dtype_name(x.dtype()) + ", " +
                    sdk::dtype_name(w.dtype()) + (b.present() ? std::string(", ") + sdk::dtype_name(b.dtype()) : ""));
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    SINGA_CHECK(ws.size() == xs.size(), "W of shape " + shape_str(ws) + " must have the rank of X " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    SINGA_CHECK(Cg * group_ == C, "X has " + std::to_string(C) + " channels but W " + shape_str(ws) + " with group " +
                                      std::to_string(group_) + " expects " + std::to_string(Cg * group_));
    SINGA_CHECK(M % group_ == 0,
                "W has " + std::to_string(M) + " output channels, not a multiple of group " + std::to_string(group_));
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == kernel,
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws));
    if (b.present())
      SINGA_CHECK(b.numel() == M, "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(M));
    Geometry g = window_geometry(attrs_, in, kernel, *this);

    Shape ys{N, M};
    for (int64_t d : g.out_dims()) ys.push_back(d);
    const Geometry pg = pooled_ ? pool_geometry(ys) : Geometry();
    if (x.dtype() == SINGA_ONNX_FLOAT && thin_takes(xs, ws, g, pooled_ ? &pg : nullptr)) {
      sdk::Tensor y = ctx.output(0, pooled_ ? Shape{N, M, pg.out[1], pg.out[2]} : ys, x.dl_dtype());
      conv_thin_f32(ctx, x.data<float>(), *thin_, b.present() ? b.data<float>() : nullptr, y.data<float>(), N, g, act_,
                    pooled_ ? &pg : nullptr, layout_.out);
      if (blocked) *blocked = layout_.out;
      return y;
    }
    if (mean_) return compute_mean(ctx, x, w, b, g, ys, Cg);
    if (pooled_) return compute_pooled(ctx, x, w, b, g, ys, pg, Cg);
    if (sum_) check_summand(z, ys);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (sdk::numel(ys) == 0) return y;
    if (sum_) {
      float* yp = y.data<float>();
      const float* zp = z.data<float>();
      // The pointwise products add Z while each block is in cache.
      if (x.dtype() == SINGA_ONNX_FLOAT && nchw_fast(g, C, M) && pointwise_fits(g, group_)) {
        conv_pointwise_strided_f32(ctx, x.data<float>(), w.data<float>(), b.present() ? b.data<float>() : nullptr, yp,
                                   N, C, M, g, act_, pointwise_.get(), zp);
        return y;
      }
      convolve<float>(ctx, x, w, b, yp, g, N, C, M, Cg);
      ctx.parallel_for(y.numel(), 16384, [&](int64_t i0, int64_t i1) { sum_activation(act_, yp + i0, zp + i0, i1 - i0); });
      return y;
    }
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      convolve<T>(ctx, x, w, b, y.data<T>(), g, N, C, M, Cg);
    });
    return y;
  }

  // A Conv with a blocked input or output that oneDNN does not run (a stem
  // that conv_thin_f32 takes, another input shape than the planned one, a
  // layer oneDNN refused): X (and Z) back to NCHW copies, the NCHW paths,
  // then Y into blocks in place where they wrote NCHW.
  void compute_unblocked(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& z) const {
    auto blocked_4d = [&](const sdk::Tensor& t, const char* name) {
      SINGA_CHECK(t.dtype() == SINGA_ONNX_FLOAT && t.ndim() == 4 && t.dim(1) % 16 == 0,
                  std::string(name) + " in 16-channel blocks must be float [N, C, H, W] with C a multiple of 16, got " +
                      sdk::dtype_name(t.dtype()) + " " + shape_str(t.shape()));
    };
    auto unblocked = [&](const sdk::Tensor& t, DLTensor& view) {
      view = *t.raw();
      float* p = static_cast<float*>(ctx.workspace(size_t(t.numel()) * sizeof(float)));
      blocked16_to_nchw(t.data<float>(), p, t.dim(0), t.dim(1), t.dim(2) * t.dim(3));
      view.data = p;
      view.byte_offset = 0;
      return sdk::Tensor(&view);
    };
    DLTensor xv{}, zv{};
    sdk::Tensor xn = x, zn = z;
    if (layout_.in) {
      blocked_4d(x, "X");
      xn = unblocked(x, xv);
    }
    if (sum_ && (layout_.out || layout_.z)) {
      blocked_4d(z, "Z");
      zn = unblocked(z, zv);
    }
    bool blocked = false;
    sdk::Tensor y = compute_nchw(ctx, xn, zn, &blocked);
    if (!layout_.out || blocked || y.numel() == 0) return;
    blocked_4d(y, "Y");
    float* tmp = static_cast<float*>(ctx.workspace(size_t(y.numel()) * sizeof(float)));
    std::copy(y.data<float>(), y.data<float>() + y.numel(), tmp);
    nchw_to_blocked16(tmp, y.data<float>(), y.dim(0), y.dim(1), y.dim(2) * y.dim(3));
  }

  // The convolution into y ([N, M, output dims]) with the fused activation,
  // through whichever path the shape and type take (oneDNN aside).
  template <class T>
  void convolve(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& b, T* y,
                const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg) const {
    if constexpr (std::is_same<T, float>::value) {
      if (winograd_ && winograd_->C == C && winograd_->M == M && winograd_fits(g, group_)) {
        conv_winograd(ctx, *winograd_, x.data<float>(), b.present() ? b.data<float>() : nullptr, y, N, g, conv_act_);
        return;
      }
      if (depthwise_1d_fits(g, C, M, group_))
        return conv_depthwise_1d_f32(ctx, x.data<float>(), w.data<float>(), b.present() ? b.data<float>() : nullptr, y,
                                     N, C, g, conv_act_);
      if (nchw_fast(g, C, M)) {
        const float* bias = b.present() ? b.data<float>() : nullptr;
        if (pointwise_fits(g, group_))
          conv_pointwise_strided_f32(ctx, x.data<float>(), w.data<float>(), bias, y, N, C, M, g, conv_act_,
                                     pointwise_.get());
        else
          conv_depthwise_f32(ctx, x.data<float>(), w.data<float>(), bias, y, N, C, g, conv_act_,
                             switches_.depthwise_blocked);
        return;
      }
    }
    run<T, acc_t<T>>(ctx, x, w, b, y, g, N, C, M, Cg);
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value)
      conv_act_.apply(ctx, y, N * M * g.out_size());
    else
      check(conv_act_.kind == FusedActivation::kNone, "a fused activation needs float or double");
  }

  void check_summand(const sdk::Tensor& z, const Shape& ys) const {
    SINGA_CHECK(z.shape() == ys,
                "Z of shape " + shape_str(z.shape()) + " must have the output's shape " + shape_str(ys));
  }

  // The pool's window over a conv output of shape ys.
  Geometry pool_geometry(const Shape& ys) const {
    check(ys.size() == 4, "a fused MaxPool needs a 2-D convolution");
    return window_geometry(pool_, {ys[2], ys[3]}, pool_.kernel_shape, *this);
  }

  // A Conv with a fused GlobalAveragePool: [N, M, 1...] means of the conv
  // output ys. Pointwise products of packed weights never write ys; other
  // windows, and weights that came as inputs, convolve into a buffer first.
  sdk::Tensor compute_mean(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& b,
                           const Geometry& g, const Shape& ys, int64_t Cg) const {
    SINGA_CHECK(x.dtype() == SINGA_ONNX_FLOAT,
                std::string("a fused GlobalAveragePool needs float, got ") + sdk::dtype_name(x.dtype()));
    const int64_t N = ys[0], M = ys[1], C = x.dim(1), P = g.out_size();
    const ClassifierHead head = classifier_ ? classifier_head(ctx, M) : ClassifierHead();
    Shape ms(ys.begin(), ys.begin() + 2);
    ms.resize(ys.size(), 1);
    sdk::Tensor y = ctx.output(0, classifier_ ? Shape{N, head.outputs} : ms, x.dl_dtype());
    if (y.numel() == 0) return y;
    std::vector<float> means_buf(classifier_ ? size_t(N * M) : 0);
    float* yp = classifier_ ? means_buf.data() : y.data<float>();
    const float* bias = b.present() ? b.data<float>() : nullptr;
    const bool mean_tiles = mean_weights_ && mean_weights_->M == M && mean_weights_->C == C && P > 0 &&
                            pointwise_fits(g, group_) && !strided(g);
    if (mean_tiles && N == 1 && panels_ && panels_->M == M && panels_->outputs == head.outputs) {
      classifier_by_panels(ctx, x.data<float>(), P, bias, yp, head.bias, y.data<float>());
      return y;
    }
    if (mean_tiles) {
      const int64_t panels = (M + kMeanPanel - 1) / kMeanPanel;
      // The last image's panels bring the head's weights in, a share each.
      const char* wfc = reinterpret_cast<const char*>(head.w);
      const int64_t wfc_bytes = head.outputs * M * int64_t(sizeof(float));
      ctx.parallel_for(N * panels, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t n = t / panels, j = t % panels;
          PrefetchRange pf;
          if (head.w && n == N - 1) pf = {wfc + wfc_bytes * j / panels, wfc + wfc_bytes * (j + 1) / panels};
          pointwise_mean_f32(*mean_weights_, j, x.data<float>() + n * C * P, P, bias, act_, yp + n * M, pf);
        }
      });
    } else {
      std::vector<float> conv(size_t(sdk::numel(ys)));
      convolve<float>(ctx, x, w, b, conv.data(), g, N, C, M, Cg);
      ctx.parallel_for(N * M, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          yp[r] = P > 0 ? float(plane_sum(conv.data() + r * P, P) / double(P))
                        : std::numeric_limits<float>::quiet_NaN();
      });
    }
    if (classifier_)
      classifier_head_f32(ctx, yp, N, M, head.w, classifier_trans_b_, head.outputs, head.bias, y.data<float>());
    return y;
  }

  // One image's means and classifier panel by panel (classifier_head_f32.hpp):
  // each task a run of panels, its partial sums of the classifier its own.
  void classifier_by_panels(const sdk::Context& ctx, const float* x, int64_t P, const float* bias, float* means,
                            const float* fc_bias, float* y) const {
    const ClassifierPanels& c = *panels_;
    const int64_t panels = c.panels(), parts = std::clamp<int64_t>(ctx.num_threads(), 1, panels);
    float* partials = fast::line_start(static_cast<float*>(
        ctx.workspace((size_t(parts * c.padded) + fast::kLineSlack) * sizeof(float))));
    ctx.parallel_for(parts, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t first = panels * t / parts, last = panels * (t + 1) / parts;
        for (int64_t j = first; j < last; ++j) {
          const char* block = reinterpret_cast<const char*>(c.block(j));
          pointwise_mean_f32(*mean_weights_, j, x, P, bias, act_, means, {block, block + c.block_bytes(), true});
          classifier_panel_f32(c, j, means + j * kMeanPanel, std::min(kMeanPanel, c.M - j * kMeanPanel),
                               partials + t * c.padded, j != first);
        }
      }
    });
    classifier_sum_f32(c, partials, parts, fc_bias, y);
  }

  // A ConvMeanGemm's Gemm inputs, checked against the conv's M outputs.
  struct ClassifierHead {
    const float* w = nullptr;
    const float* bias = nullptr;
    int64_t outputs = 0;
  };

  ClassifierHead classifier_head(const sdk::Context& ctx, int64_t M) const {
    sdk::Tensor w = required(ctx, 3, "Wfc"), c = ctx.input(4);
    const Shape ws = w.shape();
    const std::string want = classifier_trans_b_ ? "N, " + std::to_string(M) : std::to_string(M) + ", N";
    SINGA_CHECK(w.dtype() == SINGA_ONNX_FLOAT && ws.size() == 2 && ws[classifier_trans_b_ ? 1 : 0] == M,
                "Wfc must be float [" + want + "] (transB = " + std::to_string(int(classifier_trans_b_)) + "), got " +
                    sdk::dtype_name(w.dtype()) + " " + shape_str(ws));
    ClassifierHead h;
    h.w = w.data<float>();
    h.outputs = ws[classifier_trans_b_ ? 0 : 1];
    if (c.present()) {
      SINGA_CHECK(c.dtype() == SINGA_ONNX_FLOAT && c.numel() == h.outputs && c.ndim() >= 1 && c.ndim() <= 2 &&
                      c.dim(c.ndim() - 1) == h.outputs,
                  "Cfc must be a float row of " + std::to_string(h.outputs) + " values, got " +
                      sdk::dtype_name(c.dtype()) + " " + shape_str(c.shape()));
      h.bias = c.data<float>();
    }
    return h;
  }

  // A Conv with a fused MaxPool (window pg over the conv output ys) that
  // neither oneDNN nor conv_thin_f32 runs pooled: the float convolution into
  // a buffer of its own, then MaxPool's 2-D path.
  sdk::Tensor compute_pooled(sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& b,
                             const Geometry& g, const Shape& ys, const Geometry& pg, int64_t Cg) const {
    check(x.dtype() == SINGA_ONNX_FLOAT, "a fused MaxPool needs float");
    const int64_t N = ys[0], M = ys[1], C = x.dim(1);
    sdk::Tensor y = ctx.output(0, Shape{N, M, pg.out[1], pg.out[2]}, x.dl_dtype());
    if (y.numel() == 0) return y;
    std::vector<float> conv(size_t(sdk::numel(ys)));
    convolve<float>(ctx, x, w, b, conv.data(), g, N, C, M, Cg);
    max_pool_2d_f32(ctx, pg, N * M, conv.data(), y.data<float>());
    return y;
  }

  // The NCHW paths of conv_nchw_f32.hpp take pointwise and depthwise float
  // convs ahead of oneDNN (option cpu.conv_nchw=0 turns them off, to compare).
  bool nchw_fast(const Geometry& g, int64_t C, int64_t M) const {
    return switches_.nchw && (pointwise_fits(g, group_) || depthwise_fits(g, C, M, group_));
  }

  template <class T, class A>
  const A* weights(const sdk::Context& ctx, const sdk::Tensor& w) const {
    if constexpr (std::is_same<T, A>::value) {
      return w.data<A>();
    } else {
      if (size_t(w.numel()) == wide_weights_.size()) return wide_weights_.data();
      A* p = static_cast<A*>(ctx.workspace(size_t(w.numel()) * sizeof(A)));
      const T* src = w.data<T>();
      for (int64_t i = 0; i < w.numel(); ++i) p[i] = to_acc<A>(src[i]);
      return p;
    }
  }

  template <class T, class A>
  void run(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& b, T* y,
           const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg) const {
    const A* wa = weights<T, A>(ctx, w);
    std::vector<A> bias(size_t(M), A(0));
    if (b.present()) {
      std::vector<double> bv = real_values(b, where());
      for (int64_t m = 0; m < M; ++m) bias[size_t(m)] = A(bv[size_t(m)]);
    }
    if constexpr (std::is_same<T, float>::value) {
      // Depthwise convs keep the direct loop: their products would be a
      // single row each.
      if (fast::avx512() && !(Cg == 1 && group_ > 1)) {
        conv_gemm_f32(ctx, x.data<float>(), wa, b.present() ? bias.data() : nullptr, y, g, N, C, M, Cg, group_);
        return;
      }
    }
    if (Cg == 1 && group_ > 1)
      conv_direct<T, A>(ctx, x.data<T>(), wa, bias.data(), y, g, N, C, M, group_);
    else
      conv_unfolded<T, A>(ctx, x.data<T>(), wa, bias.data(), y, g, N, C, M, Cg, group_);
  }

  // Constant float weights of a conv that conv_thin_f32 may take (its
  // geometry is checked per run, in thin_takes).
  void pack_thin(const sdk::Node& node) {
    if (!switches_.thin) return;
    sdk::Tensor w = node.constant(1);
    if (sum_ || group_ != 1 || !w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 4) return;
    if (mean_ || w.dim(1) > 4 || w.dim(0) % 32 != 0) return;
    thin_ = std::make_unique<ThinConvWeights>(
        conv_thin_weights(w.data<float>(), w.dim(0), w.dim(1), w.dim(2), w.dim(3)));
  }

  // Constant float 1x1 weights of one group that oneDNN's plan did not take,
  // read packed by conv_pointwise_f32's direct kernel, or by
  // pointwise_mean_f32 under a fused GlobalAveragePool.
  void pack_pointwise(const sdk::Node& node) {
    sdk::Tensor w = node.constant(1);
    if (dnnl_ || !switches_.pointwise_direct || !pointwise_direct_on() || group_ != 1 || !w.present() || w.dtype() != SINGA_ONNX_FLOAT ||
        w.ndim() < 3)
      return;
    for (int i = 2; i < w.ndim(); ++i)
      if (w.dim(i) != 1) return;
    if (mean_) {
      mean_weights_ = std::make_unique<PointwiseWeights>(pointwise_mean_weights(w.data<float>(), w.dim(0), w.dim(1)));
      pack_classifier(node, w.dim(0));
    } else {
      pointwise_ = std::make_unique<PointwiseWeights>(pointwise_weights(w.data<float>(), w.dim(0), w.dim(1)));
    }
  }

  // A ConvMeanGemm's constant float Wfc over the conv's M outputs, for
  // classifier_by_panels (a Wfc of another shape fails at run time).
  void pack_classifier(const sdk::Node& node, int64_t M) {
    sdk::Tensor w = node.constant(3);
    if (!classifier_ || !w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 2 ||
        w.dim(classifier_trans_b_ ? 1 : 0) != M)
      return;
    panels_ = std::make_unique<ClassifierPanels>(
        classifier_panels(w.data<float>(), classifier_trans_b_, M, w.dim(classifier_trans_b_ ? 0 : 1), kMeanPanel));
  }

  // Constant float 3x3 weights of a plain conv (no fused pool, mean, Z or
  // blocked layout; one group, unit strides and dilations) on up to 64 input
  // channels, which conv_winograd takes instead of oneDNN.
  void pack_winograd(const sdk::Node& node) {
    if (!switches_.winograd || !winograd_on() || sum_ || pooled_ || mean_ || layout_.in || layout_.out || group_ != 1) return;
    sdk::Tensor w = node.constant(1);
    if (!w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 4 || w.dim(2) != 3 || w.dim(3) != 3) return;
    for (const auto* v : {&attrs_.strides, &attrs_.dilations})
      for (int64_t s : *v)
        if (s != 1) return;
    // The tile and whether it pays follow the input's shape (the output
    // plane is about the input's).
    const singa_value_info xi = node.input_info(0);
    if (xi.ndim != 4) return;
    const int tile = switches_.winograd_tile ? switches_.winograd_tile : winograd_tile(xi.dims[2], xi.dims[3]);
    if (!winograd_pays(w.dim(1), w.dim(0), tile, xi.dims[0], xi.dims[2], xi.dims[3])) return;
    winograd_ = std::make_unique<WinogradWeights>(winograd_weights(w.data<float>(), w.dim(0), w.dim(1), tile));
  }

  // Whether conv_thin_f32 takes a float input of shape xs (with W of the
  // packed weights' shape ws, window g and the fused pool's window pg, null
  // when there is none).
  bool thin_takes(const Shape& xs, const Shape& ws, const Geometry& g, const Geometry* pg) const {
    if (!thin_ || xs.size() != 4 || ws != Shape{thin_->M, thin_->C, thin_->KH, thin_->KW} || xs[1] != thin_->C)
      return false;
    return conv_thin_fits(g, thin_->C, thin_->M, group_, act_, pg);
  }

  // oneDNN needs constant weights (and bias) and a known input shape.
  void plan_dnnl(const sdk::Node& node) {
    if (mean_ || winograd_ || !switches_.dnnl) return;  // cpu.dnnl=0: to compare against the im2col path
    singa_value_info xi = node.input_info(0);
    sdk::Tensor w = node.constant(1);
    if (xi.ndim != 4 || xi.onnx_dtype != SINGA_ONNX_FLOAT || !w.present() || w.ndim() != 4) return;
    sdk::Tensor b = node.has_input(2) ? node.constant(2) : sdk::Tensor();
    if (node.has_input(2) && !b.present()) return;
    Shape xs(xi.dims, xi.dims + 4);
    for (int64_t d : xs)
      if (d <= 0) {
        // Shape inference ran before the passes folded what it needed (a Pad
        // whose pads were computed, in Tiny-YOLO): plan on the first run.
        late_ = std::make_unique<Late>();
        return;
      }
    dnnl_ = make_dnnl(xs, w, b);
  }

  std::unique_ptr<DnnlConv> make_dnnl(const Shape& xs, const sdk::Tensor& w, const sdk::Tensor& b) const {
    const Shape ws = w.shape();
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (xs.size() != 4 || (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel)) return nullptr;
    try {
      Geometry g = window_geometry(attrs_, {xs[2], xs[3]}, kernel, *this);
      // A blocked neighbour makes oneDNN's 1x1 code the cheaper one: no reorders.
      if (!layout_.in && !layout_.out && nchw_fast(g, xs[1], ws[0]) &&
          !pointwise_prefers_dnnl(g, group_, xs[1], ws[0]))
        return nullptr;
      const Geometry pg = pooled_ ? pool_geometry(Shape{xs[0], ws[0], g.out[1], g.out[2]}) : Geometry();
      if (thin_takes(xs, ws, g, pooled_ ? &pg : nullptr)) return nullptr;
      return DnnlConv::plan(xs, w, b, g, group_, act_, pooled_ ? &pg : nullptr, sum_, layout_,
                            switches_.dnnl_switches);
    } catch (const std::exception&) {
      return nullptr;  // bad window attributes: compute() reports them with the shapes involved
    }
  }

  // The plan for this run's input: made at create time, or on the first run
  // (for the shape seen then; other shapes take the im2col path).
  const DnnlConv* dnnl_for(const sdk::Context& ctx, const sdk::Tensor& x) const {
    if (dnnl_ || !late_) return dnnl_.get();
    std::call_once(late_->once, [&] {
      if (x.dtype() == SINGA_ONNX_FLOAT) late_->plan = make_dnnl(x.shape(), required(ctx, 1, "W"), ctx.input(2));
    });
    return late_->plan.get();
  }

  struct Late {
    std::once_flag once;
    std::unique_ptr<DnnlConv> plan;
  };

  ConvSwitches switches_;
  WindowAttrs attrs_;
  int64_t group_;
  FusedActivation act_;
  bool sum_;                   // a ConvAdd: act_ follows the sum
  FusedActivation conv_act_;   // what the convolution itself applies: act_, or none for a ConvAdd
  bool pooled_ = false;
  WindowAttrs pool_;
  bool mean_ = false;          // a fused GlobalAveragePool
  bool classifier_ = false;    // ... and a Gemm after it (ConvMeanGemm)
  bool classifier_trans_b_ = false;
  std::unique_ptr<PointwiseWeights> mean_weights_;  // pointwise_mean_f32's weights, where it may take the conv
  std::unique_ptr<ClassifierPanels> panels_;         // a ConvMeanGemm's constant Wfc, with mean_weights_
  BlockedLayout layout_;
  std::vector<float> wide_weights_;
  std::unique_ptr<ThinConvWeights> thin_;  // conv_thin_f32's weights, where it may take the conv
  std::unique_ptr<PointwiseWeights> pointwise_;  // conv_pointwise_f32's packed weights, where it may take the conv
  std::unique_ptr<WinogradWeights> winograd_;    // conv_winograd's weights, where it takes the conv
  std::unique_ptr<DnnlConv> dnnl_;
  std::unique_ptr<Late> late_;
};

}  // namespace

void register_conv(sdk::Registrar& reg) {
  const uint64_t types = sdk::kFloatTypes;
  reg.kernel<Conv>("", "Conv", 1, 10, "cpu", {{"T", 0, types}});
  reg.kernel<Conv>("", "Conv", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, types}});
  reg.kernel<Conv>("", "Conv", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});  // adds bfloat16
  reg.kernel<Conv>(ops::kCpuDomain, "FusedConv", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}},
                   {{0, kBlocked16Layout}, {-1, kBlocked16Layout}});
  reg.kernel<Conv>(ops::kCpuDomain, "ConvAdd", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}},
                   {{0, kBlocked16Layout}, {3, kBlocked16Layout}, {-1, kBlocked16Layout}});
  reg.kernel<Conv>(ops::kCpuDomain, "ConvMeanGemm", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
