// ConvTranspose (1-D to 3-D, groups, dilations, strides, pads, auto_pad,
// output_padding, output_shape, bias).
//
// Per image and group: cols[Mg*k x P_in] = W_g^T * X_g by GEMM, then every
// column is scattered (col2im) into the output planes. Float windows that do
// not overlap (kernel <= stride, unit dilations) take conv_transpose_direct.hpp.
#include "blas.hpp"
#include "conv_transpose_direct.hpp"
#include "im2col.hpp"
#include "nn_common.hpp"
#include "register.hpp"
#include "spatial.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace singa {
namespace nn {
namespace {

constexpr int64_t kColBudget = int64_t(1) << 22;

class ConvTranspose : public NodeKernel {
 public:
  explicit ConvTranspose(const sdk::Node& node)
      : NodeKernel(node),
        attrs_(node, *this),
        group_(node.attr_int("group", 1)),
        output_padding_(node.attr_ints("output_padding")),
        output_shape_(node.attr_ints("output_shape")) {
    if (group_ < 1) fail("attribute group must be positive, got " + std::to_string(group_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor w = required(ctx, 1, "W");
    sdk::Tensor b = ctx.input(2);
    SINGA_CHECK(w.dtype() == x.dtype() && (!b.present() || b.dtype() == x.dtype()),
                std::string("X, W and B must share one element type, got ") + sdk::dtype_name(x.dtype()) + ", " +
                    sdk::dtype_name(w.dtype()) + (b.present() ? std::string(", ") + sdk::dtype_name(b.dtype()) : ""));
    const Shape xs = x.shape(), ws = w.shape();
    std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    SINGA_CHECK(ws.size() == xs.size(), "W of shape " + shape_str(ws) + " must have the rank of X " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1], Mg = ws[1], M = Mg * group_;
    SINGA_CHECK(ws[0] == C, "W " + shape_str(ws) + " must have X's " + std::to_string(C) + " input channels first");
    SINGA_CHECK(C % group_ == 0,
                "X has " + std::to_string(C) + " channels, not a multiple of group " + std::to_string(group_));
    std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    if (!attrs_.kernel_shape.empty())
      SINGA_CHECK(attrs_.kernel_shape == kernel,
                  "attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W " + shape_str(ws));
    if (b.present())
      SINGA_CHECK(b.numel() == M, "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(M));
    Geometry g = transpose_geometry(attrs_, in, kernel, output_padding_, output_shape_, *this);

    Shape ys{N, M};
    for (int64_t d : g.out_dims()) ys.push_back(d);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (sdk::numel(ys) == 0) return;
    if (x.dtype() == SINGA_ONNX_FLOAT && conv_transpose_no_overlap(g)) {
      std::vector<float> bias;
      if (b.present())
        for (double v : real_values(b, where())) bias.push_back(float(v));
      if (conv_transpose_direct(ctx, x.data<float>(), w.data<float>(), b.present() ? bias.data() : nullptr,
                                y.data<float>(), g, N, C, M, group_))
        return;
    }
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      run<T, acc_t<T>>(ctx, x, w, b, y, g, N, C, M);
    });
  }

 private:
  template <class T, class A>
  void run(const sdk::Context& ctx, const sdk::Tensor& x, const sdk::Tensor& w, const sdk::Tensor& b,
           const sdk::Tensor& y, const Geometry& g, int64_t N, int64_t C, int64_t M) const {
    constexpr bool kSame = std::is_same<T, A>::value;
    const int64_t Cg = C / group_, Mg = M / group_, ks = g.k_size();
    const int64_t Pin = g.in_size(), Pout = g.out_size(), R = Mg * ks;
    std::vector<A> bias(size_t(M), A(0));
    if (b.present()) {
      std::vector<double> bv = real_values(b, where());
      for (int64_t m = 0; m < M; ++m) bias[size_t(m)] = A(bv[size_t(m)]);
    }
    const A* wa = nullptr;
    const A* xa = nullptr;
    A* ya = nullptr;
    if constexpr (kSame) {
      wa = w.data<A>();
      xa = x.data<A>();
      ya = y.data<A>();
    } else {
      // 16-bit floats: widen the operands, accumulate in float, narrow at the end.
      A* wbuf = static_cast<A*>(ctx.workspace(size_t(w.numel()) * sizeof(A)));
      A* xbuf = static_cast<A*>(ctx.workspace(size_t(x.numel()) * sizeof(A)));
      widen(w.data<T>(), w.numel(), wbuf);
      widen(x.data<T>(), x.numel(), xbuf);
      wa = wbuf;
      xa = xbuf;
      ya = static_cast<A*>(ctx.workspace(size_t(N * M * Pout) * sizeof(A)));
    }
    // Outputs start at the bias; the scatter adds into them.
    ctx.parallel_for(N * M, std::max<int64_t>(1, 16384 / Pout), [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) std::fill(ya + p * Pout, ya + (p + 1) * Pout, bias[size_t(p % M)]);
    });
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(Pin, kColBudget / std::max<int64_t>(1, R)));
    A* col = static_cast<A*>(ctx.workspace(size_t(R * chunk) * sizeof(A)));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t gi = 0; gi < group_; ++gi) {
        const A* xg = xa + (n * C + gi * Cg) * Pin;
        const A* wg = wa + gi * Cg * R;  // [Cg x Mg*k] row-major
        A* yg = ya + (n * M + gi * Mg) * Pout;
        for (int64_t p0 = 0; p0 < Pin; p0 += chunk) {
          const int64_t cols = std::min(chunk, Pin - p0);
          gemm(true, false, R, cols, Cg, A(1), wg, R, xg + p0, Pin, A(0), col, cols);
          col2im_add<A>(ctx, col, g, Mg, p0, cols, yg);
        }
      }
    }
    if constexpr (!kSame) {
      T* yt = y.data<T>();
      const int64_t total = N * M * Pout;
      ctx.parallel_for(total, 16384, [&](int64_t bb, int64_t e) {
        for (int64_t i = bb; i < e; ++i) yt[i] = from_acc<T>(ya[i]);
      });
    }
  }

  template <class T, class A>
  static void widen(const T* src, int64_t n, A* dst) {
    for (int64_t i = 0; i < n; ++i) dst[i] = to_acc<A>(src[i]);
  }

  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_conv_transpose(sdk::Registrar& reg) {
  reg.kernel<ConvTranspose>("", "ConvTranspose", 1, 10, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<ConvTranspose>("", "ConvTranspose", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<ConvTranspose>("", "ConvTranspose", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});  // adds bfloat16
}

}  // namespace nn
}  // namespace singa
