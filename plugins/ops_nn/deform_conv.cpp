// DeformConv (opset 19): a 2-D convolution whose kernel taps are moved by
// learned offsets (and, optionally, weighted by a mask) per output position.
// Tap (i, j) of output (oh, ow) reads X at
//   (oh * stride_h - pad_h + i * dilation_h + offset_h, likewise for w)
// by bilinear interpolation, with zeros outside the image. offset holds, per
// offset group, kernel tap and axis (h then w), one plane of output size;
// the channels of X split evenly into offset groups.
//
// The backward (deform_conv_grad.cpp) gives the gradients of every input.
#include "deform_conv.hpp"
#include "register.hpp"
#include "spatial.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

class DeformConv : public NodeKernel {
 public:
  explicit DeformConv(const sdk::Node& node)
      : NodeKernel(node),
        attrs_(node, *this),
        group_(node.attr_int("group", 1)),
        offset_group_(node.attr_int("offset_group", 1)) {
    if (group_ <= 0) fail("attribute group must be positive, got " + std::to_string(group_));
    if (offset_group_ <= 0) fail("attribute offset_group must be positive, got " + std::to_string(offset_group_));
    if (attrs_.auto_pad != AutoPad::NotSet) fail("DeformConv has no auto_pad attribute");
  }

  void compute(sdk::Context& ctx) const {
    Geometry g;
    const DeformConvDims d = checked(ctx, ctx.num_inputs(), g);
    sdk::Tensor x = ctx.input(0);
    sdk::Tensor y = ctx.output(0, {d.N, d.M, d.OH, d.OW}, x.dl_dtype());
    if (d.N * d.M * d.positions() == 0) return;
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      run<T, acc_t<T>>(ctx, x, ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), y, g);
    });
  }

  // Inputs: the forward's, then Y and dY; outputs: their gradients (one per
  // forward input, which is how many forward inputs there are).
  void backward(sdk::Context& ctx) const {
    Geometry g;
    deform_conv_backward(ctx, checked(ctx, ctx.num_outputs(), g), where());
  }

 private:
  // Checks the forward's `nin` inputs (the first of ctx's) and returns the sizes.
  DeformConvDims checked(const sdk::Context& ctx, size_t nin, Geometry& g) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor w = required(ctx, 1, "W");
    sdk::Tensor off = required(ctx, 2, "offset");
    sdk::Tensor b = nin > 3 ? ctx.input(3) : sdk::Tensor();
    sdk::Tensor mask = nin > 4 ? ctx.input(4) : sdk::Tensor();
    const Shape xs = x.shape(), ws = w.shape();
    SINGA_CHECK(xs.size() == 4,
                "X must be 4-D (N, C, H, W): only 2-D DeformConv is implemented, got shape " + shape_str(xs));
    SINGA_CHECK(ws.size() == 4, "W must be 4-D (oC, C / group, kH, kW), got shape " + shape_str(ws));
    for (const sdk::Tensor* t : {&w, &off})
      SINGA_CHECK(t->dtype() == x.dtype(),
                  std::string("W and offset must have X's type ") + sdk::dtype_name(x.dtype()));
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0];
    const int64_t G = group_, OG = offset_group_;
    SINGA_CHECK(ws[1] * G == C, "W " + shape_str(ws) + " with group " + std::to_string(G) + " does not match X's " +
                                    std::to_string(C) + " channels");
    SINGA_CHECK(M % G == 0,
                "W's " + std::to_string(M) + " output channels are not a multiple of group " + std::to_string(G));
    SINGA_CHECK(C % OG == 0,
                "X's " + std::to_string(C) + " channels are not a multiple of offset_group " + std::to_string(OG));
    std::vector<int64_t> kernel{ws[2], ws[3]};
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == kernel,
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws));
    g = window_geometry(attrs_, {H, W}, kernel, *this);
    const int64_t OH = g.out[1], OW = g.out[2], KH = g.k[1], KW = g.k[2], K = KH * KW;
    const Shape want_off{N, OG * K * 2, OH, OW};
    SINGA_CHECK(off.shape() == want_off,
                "offset must have shape " + shape_str(want_off) + ", got " + shape_str(off.shape()));
    if (b.present())
      SINGA_CHECK(b.dtype() == x.dtype() && b.numel() == M,
                  "B must hold " + std::to_string(M) + " values of X's type, got " + shape_str(b.shape()));
    if (mask.present()) {
      const Shape want_mask{N, OG * K, OH, OW};
      SINGA_CHECK(mask.dtype() == x.dtype() && mask.shape() == want_mask,
                  "mask must have shape " + shape_str(want_mask) + " and X's type, got " + shape_str(mask.shape()));
    }
    DeformConvDims d;
    d.N = N, d.C = C, d.H = H, d.W = W, d.M = M, d.G = G, d.OG = OG;
    d.OH = OH, d.OW = OW, d.KH = KH, d.KW = KW;
    d.SH = g.s[1], d.SW = g.s[2], d.DH = g.d[1], d.DW = g.d[2], d.PH = g.pb[1], d.PW = g.pb[2];
    return d;
  }

  template <class T, class A>
  void run(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& off,
           const sdk::Tensor& b, const sdk::Tensor& mask, const sdk::Tensor& y, const Geometry& g) const {
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0);
    const int64_t G = group_, OG = offset_group_, Cg = C / G, Mg = M / G, Cog = C / OG;
    const int64_t OH = g.out[1], OW = g.out[2], KH = g.k[1], KW = g.k[2], K = KH * KW, P = OH * OW;
    const int64_t SH = g.s[1], SW = g.s[2], DH = g.d[1], DW = g.d[2], PH = g.pb[1], PW = g.pb[2];
    const int64_t R = Cg * K;  // rows of one group's column matrix
    std::vector<A> wa(size_t(w.numel()));
    {
      const T* pw = w.data<T>();
      for (size_t i = 0; i < wa.size(); ++i) wa[i] = to_acc<A>(pw[i]);
    }
    std::vector<A> bias(size_t(M), A(0));
    if (b.present()) {
      std::vector<double> bv = real_values(b, where());
      for (int64_t m = 0; m < M; ++m) bias[size_t(m)] = A(bv[size_t(m)]);
    }
    const T* px = x.data<T>();
    const T* po = off.data<T>();
    const T* pm = mask.present() ? mask.data<T>() : nullptr;
    T* py = y.data<T>();
    // Columns of one image: row (c, i, j), column (oh, ow), the masked sample.
    std::vector<A> col(size_t(C * K * P));
    std::vector<A> out(size_t(M * P));
    for (int64_t n = 0; n < N; ++n) {
      ctx.parallel_for(C * K, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, P)), [&](int64_t rb, int64_t re) {
        for (int64_t row = rb; row < re; ++row) {
          const int64_t c = row / K, k = row % K, ki = k / KW, kj = k % KW, og = c / Cog;
          const T* plane = px + (n * C + c) * H * W;
          const T* oh_plane = po + ((n * OG + og) * K * 2 + 2 * k) * P;
          const T* ow_plane = oh_plane + P;
          const T* m_plane = pm ? pm + ((n * OG + og) * K + k) * P : nullptr;
          A* dst = col.data() + row * P;
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t p = oh * OW + ow;
              const A yy = A(oh * SH - PH + ki * DH) + to_acc<A>(oh_plane[p]);
              const A xx = A(ow * SW - PW + kj * DW) + to_acc<A>(ow_plane[p]);
              A v = bilinear(plane, H, W, yy, xx);
              if (m_plane) v *= to_acc<A>(m_plane[p]);
              dst[p] = v;
            }
        }
      });
      // out[g] (Mg x P) = W[g] (Mg x R) * col[g] (R x P) + bias.
      ctx.parallel_for(M, 1, [&](int64_t mb, int64_t me) {
        for (int64_t m = mb; m < me; ++m) {
          const int64_t gi = m / Mg;
          const A* wr = wa.data() + m * R;
          const A* cg = col.data() + gi * R * P;
          A* o = out.data() + m * P;
          std::fill(o, o + P, bias[size_t(m)]);
          for (int64_t r = 0; r < R; ++r) {
            const A wv = wr[r];
            const A* cr = cg + r * P;
            for (int64_t p = 0; p < P; ++p) o[p] += wv * cr[p];
          }
        }
      });
      T* yn = py + n * M * P;
      for (int64_t i = 0; i < M * P; ++i) yn[i] = from_acc<T>(out[size_t(i)]);
    }
  }

  // X at (y, x) by bilinear interpolation; taps outside the image read 0.
  template <class T, class A>
  static A bilinear(const T* plane, int64_t H, int64_t W, A y, A x) {
    if (!(y > A(-1) && y < A(H) && x > A(-1) && x < A(W))) return A(0);  // also NaN
    const A y0f = std::floor(y), x0f = std::floor(x);
    const int64_t y0 = int64_t(y0f), x0 = int64_t(x0f);
    const A ty = y - y0f, tx = x - x0f;
    auto at = [&](int64_t r, int64_t c) {
      return (r >= 0 && r < H && c >= 0 && c < W) ? to_acc<A>(plane[r * W + c]) : A(0);
    };
    return (A(1) - ty) * ((A(1) - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
           ty * ((A(1) - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
  }

  WindowAttrs attrs_;
  int64_t group_, offset_group_;
};

}  // namespace

void register_deform_conv(sdk::Registrar& reg) {
  // 22 adds bfloat16.
  reg.kernel<DeformConv>("", "DeformConv", 19, 19, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<DeformConv>("", "DeformConv", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
