// ConvReluMaxPoolGrad(dY, Indices, Y, X, W) -> (dX, dW, dB): the gradient of
// ConvReluMaxPool (plugins/ops_nn/conv_relu_pool.hpp). The conv output's
// gradient is dY at each window's maximum (Indices) where the pooled value
// is positive (Relu's mask) and 0 elsewhere; it is rebuilt one image at a
// time where the conv gradient reads it, instead of as a whole tensor.
#include "conv_grad_f32.hpp"
#include "conv_grad_generic.hpp"
#include "conv_relu_pool_sparse_f32.hpp"
#include "register.hpp"

#include <conv_relu_pool.hpp>
#include <pool_f32.hpp>
#include <sgemm.hpp>
#include <vec_math.hpp>  // SINGA_VEC_CLONES

#include <algorithm>
#include <atomic>
#include <vector>

namespace singa {
namespace grad {
namespace {

using nn::ConvReluPoolShape;
using nn::NodeKernel;
using nn::Shape;

class ConvReluMaxPoolGrad : public NodeKernel {
 public:
  explicit ConvReluMaxPoolGrad(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {
    for (size_t i = 0; i < 3; ++i) want_[i] = node.has_output(i);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), idx = required(ctx, 1, "Indices"), y = required(ctx, 2, "Y");
    sdk::Tensor x = required(ctx, 3, "X"), w = required(ctx, 4, "W");
    check(dy.dtype() == x.dtype() && y.dtype() == x.dtype() && w.dtype() == x.dtype(),
          "dY, Y, X and W must share one element type");
    check(idx.dtype() == SINGA_ONNX_INT64, "Indices must be int64");
    const ConvReluPoolShape s = attrs_.resolve(x.shape(), w.shape(), *this);
    for (const auto& [t, name] : {std::pair<const sdk::Tensor*, const char*>{&dy, "dY"}, {&idx, "Indices"}, {&y, "Y"}})
      check(t->shape() == s.out, std::string(name) + " has shape " + nn::shape_str(t->shape()) +
                                     ", the pooled output is " + nn::shape_str(s.out));
    sdk::Tensor dx, dw, db;
    if (want_[0]) dx = ctx.output(0, x.shape(), x.dl_dtype());
    if (want_[1]) dw = ctx.output(1, w.shape(), x.dl_dtype());
    if (want_[2]) db = ctx.output(2, Shape{s.M}, x.dl_dtype());
    std::atomic<bool> bad{false};
    if (x.dtype() == SINGA_ONNX_FLOAT && fast::avx512()) {
      const float *g = dy.data<float>(), *py = y.data<float>();
      const int64_t* pi = idx.data<int64_t>();
      if (conv_relu_pool_sparse_fits(s)) {
        if (!conv_relu_pool_sparse_f32(
                ctx, g, py, pi, x.data<float>(), w.data<float>(), s, dx.present() ? dx.data<float>() : nullptr,
                dw.present() ? dw.data<float>() : nullptr, db.present() ? db.data<float>() : nullptr))
          bad = true;
      } else {
        DyImages images;
        images.fill = [&](int64_t n, float* buf) {
          if (!unpool_image(g, py, pi, s, n, buf)) bad = true;
        };
        conv_grad_f32(ctx, images, x.data<float>(), w.data<float>(), dx.present() ? dx.data<float>() : nullptr,
                      dw.present() ? dw.data<float>() : nullptr, db.present() ? db.data<float>() : nullptr, s.conv, s.N,
                      s.C, s.M, s.Cg, s.group);
      }
    } else {
      nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> dconv(size_t(sdk::numel(s.conv_out)));
        const int64_t per_image = s.M * s.conv_plane();
        ctx.parallel_for(s.N, 1, [&](int64_t b, int64_t e) {
          for (int64_t n = b; n < e; ++n)
            if (!unpool_image(dy.data<T>(), y.data<T>(), idx.data<int64_t>(), s, n, dconv.data() + n * per_image))
              bad = true;
        });
        conv_grad_generic<T>(ctx, dconv.data(), x.data<T>(), w.data<T>(), dx.present() ? dx.data<T>() : nullptr,
                             dw.present() ? dw.data<T>() : nullptr, db.present() ? db.data<T>() : nullptr, s.conv, s.N,
                             s.C, s.M, s.Cg, s.group);
      });
    }
    check(!bad, "Indices hold a position outside its window's conv output plane (not this op's Indices)");
  }

 private:
  // Image n's conv output gradient [M, OH, OW] into out. False when an index
  // lies outside its own plane (that plane's gradient is then left zero).
  template <class T>
  static bool unpool_image(const T* dy, const T* y, const int64_t* idx, const ConvReluPoolShape& s, int64_t n, T* out) {
    const int64_t P = s.conv_plane(), Q = s.pool_plane();
    const bool vector = std::is_same<T, float>::value && s.two_by_two() && fast::avx512();
    thread_local std::vector<T> masked;
    masked.resize(size_t(s.M * Q));
    relu_mask(dy + n * s.M * Q, y + n * s.M * Q, s.M * Q, masked.data());
    bool ok = true;
    for (int64_t m = 0; m < s.M; ++m) {
      const int64_t base = (n * s.M + m) * P;
      const T* g = masked.data() + m * Q;
      const int64_t* at = idx + (n * s.M + m) * Q;
      T* o = out + m * P;
      if constexpr (std::is_same<T, float>::value) {
        if (vector && s.pool.in[2] == 8 && nn::max_pool_2x2_grad_w8_f32(g, at, base, s.pool.in[1], s.pool.out[1], o))
          continue;
        if (vector && s.pool.in[2] != 8 &&
            nn::max_pool_2x2_grad_f32(g, at, base, s.pool.in[1], s.pool.in[2], s.pool.out[1], s.pool.out[2], o))
          continue;
      }
      std::fill(o, o + P, T(0));
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t p = at[q] - base;
        if (p < 0 || p >= P) {
          ok = false;
          std::fill(o, o + P, T(0));
          break;
        }
        o[p] += g[q];  // += : overlapping windows may share a maximum
      }
    }
    return ok;
  }

  // Relu's mask: the gradient passes where the pooled value is positive.
  template <class T>
  SINGA_VEC_CLONES static void relu_mask(const T* __restrict g, const T* __restrict y, int64_t n, T* __restrict out) {
    for (int64_t i = 0; i < n; ++i) out[i] = y[i] > T(0) ? g[i] : T(0);
  }

  nn::ConvReluPoolAttrs attrs_;
  bool want_[3] = {false, false, false};
};

}  // namespace

void register_conv_relu_pool_grad(sdk::Registrar& reg) {
  reg.kernel<ConvReluMaxPoolGrad>(kDomain, "ConvReluMaxPoolGrad", 1, 1, "cpu", {{"T", 3, kGradTypes}});
}

}  // namespace grad
}  // namespace singa
