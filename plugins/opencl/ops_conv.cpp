// Conv (float, 1-D to 3-D, groups, pads, strides, dilations, auto_pad, bias):
// im2col into a workspace, then one batched GEMM over (image, group). A 1x1
// window with unit strides and no padding skips im2col: X already is the
// column matrix.
#include "gemm.hpp"
#include "register.hpp"
#include "window.hpp"

#include <algorithm>

namespace singa {
namespace opencl {

namespace {

// Column matrices of at most this many floats per launch (images are
// processed in chunks beyond it).
constexpr int64_t kMaxColumnFloats = int64_t(32) << 20;

class Conv : public NodeKernel {
 public:
  explicit Conv(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this), group_(node.attr_int("group", 1)) {
    if (group_ < 1) fail("attribute group must be positive, got " + std::to_string(group_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), w = required(ctx, 1, "W"), b = ctx.input(2);
    check_float(x, "X");
    check_float(w, "W");
    if (b.present()) check_float(b, "B");
    const sdk::Shape xs = x.shape(), ws = w.shape();
    const std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    check(ws.size() == xs.size(), "W of shape " + shape_str(ws) + " must have the rank of X " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
    check(Cg * group_ == C, "X has " + std::to_string(C) + " channels but W " + shape_str(ws) + " with group " +
                                std::to_string(group_) + " expects " + std::to_string(Cg * group_));
    check(M % group_ == 0,
          "W has " + std::to_string(M) + " output channels, not a multiple of group " + std::to_string(group_));
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      check(attrs_.kernel_shape == kernel,
            "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws));
    if (b.present()) check(b.numel() == M, "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(M));
    const Window win = resolve_window(attrs_, in, kernel, *this);
    sdk::Shape ys{N, M};
    for (int64_t d : win.out_dims()) ys.push_back(d);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (sdk::numel(ys) == 0) return;
    DeviceEnv& e = env(y);

    const int64_t P = win.out_size(), ksz = win.k_size(), Kc = Cg * ksz, Mg = M / group_;
    bool pointwise = ksz == 1;
    for (int i = 0; i < 3; ++i) pointwise = pointwise && win.s[i] == 1 && win.pb[i] == 0 && win.pe[i] == 0;
    const int64_t per_image = C * ksz * P;
    const int64_t chunk = pointwise ? N : std::max<int64_t>(1, std::min<int64_t>(N, kMaxColumnFloats / std::max<int64_t>(1, per_image)));
    cl_mem col = nullptr;
    if (!pointwise && Kc > 0) col = static_cast<cl_mem>(ctx.workspace(size_t(chunk * per_image) * sizeof(float)));

    GemmCall g;
    g.a = buf(w);
    g.M = to_int(Mg, "output channels per group");
    g.N = to_int(P, "output positions");
    g.K = to_int(Kc, "window size");
    g.sam = g.K;
    g.sak = 1;
    g.sbk = g.N;
    g.sbn = 1;
    g.nb2 = to_int(group_, "group");
    g.sa2 = to_int(Mg * Kc, "W group stride");
    g.sb2 = to_int(Kc * P, "column group stride");
    g.sb1 = to_int(per_image, "column image stride");
    if (b.present()) {
      g.bias = buf(b);
      g.beta = 1.0f;
      g.srm = 1;
      g.sr2 = g.M;
    }
    const Buf xb = buf(x), yb = buf(y);
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t count = std::min(chunk, N - n0);
      if (Kc == 0) {
        g.b = yb;  // never read: K == 0
      } else if (pointwise) {
        g.b = Buf{xb.mem, to_int(xb.offset + n0 * C * P, "X offset")};
      } else {
        Launch l = launch(e, Program::kConv, e.is_cpu ? "im2col_rows" : "im2col");
        l.arg(Buf{xb.mem, to_int(xb.offset + n0 * C * win.in_size(), "X offset")}).arg(Buf{col, 0});
        l.arg(to_int(count, "N")).arg(to_int(C, "C"));
        l.arg(int4_of(win.in, *this, "input dims")).arg(int4_of(win.out, *this, "output dims"));
        l.arg(int4_of(win.k, *this, "kernel")).arg(int4_of(win.s, *this, "strides"));
        l.arg(int4_of(win.d, *this, "dilations")).arg(int4_of(win.pb, *this, "pads"));
        if (e.is_cpu)
          l.run({size_t(C * ksz), size_t(count)});
        else
          l.run({size_t(P), size_t(C * ksz), size_t(count)});
        g.b = Buf{col, 0};
      }
      g.c = Buf{yb.mem, to_int(yb.offset + n0 * M * P, "Y offset")};
      if (!b.present()) g.bias = g.c;
      g.nb1 = to_int(count, "N");
      gemm(*this, e, g);
    }
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

void register_conv(sdk::Registrar& reg) {
  // Conv 11 only widens what auto_pad/pads may say (read alike here).
  reg.kernel<Conv>("", "Conv", 1, 10, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}});
  reg.kernel<Conv>("", "Conv", 11, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}});
}

}  // namespace opencl
}  // namespace singa
