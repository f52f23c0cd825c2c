// ConvReluMaxPool (domain ai.singa): Conv -> Relu -> MaxPool in one pass per
// image (conv_relu_pool.hpp says why and what).
#include "conv_relu_pool.hpp"
#include "conv_gemm_f32.hpp"
#include "conv_impl.hpp"
#include "pool_f32.hpp"
#include "register.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {
namespace {

// The pooled windows of one conv output plane (pool pads are always zero, so
// every window lies inside it): y = the window's maximum (first tap on ties,
// strictly greater after, as MaxPool), idx = base + its row-major position.
template <class T>
void max_pool_plane(const T* x, const Geometry& pg, int64_t base, T* y, int64_t* idx) {
  const int64_t W = pg.in[2], PH = pg.out[1], PW = pg.out[2];
  for (int64_t ph = 0; ph < PH; ++ph)
    for (int64_t pw = 0; pw < PW; ++pw) {
      int64_t at = ph * pg.s[1] * W + pw * pg.s[2];
      T best = x[at];
      for (int64_t kh = 0; kh < pg.k[1]; ++kh)
        for (int64_t kw = 0; kw < pg.k[2]; ++kw) {
          const int64_t p = (ph * pg.s[1] + kh) * W + pw * pg.s[2] + kw;
          if (x[p] > best) best = x[p], at = p;
        }
      y[ph * PW + pw] = best;
      if (idx) idx[ph * PW + pw] = base + at;
    }
}

// Pools the M conv output planes of one image (`conv`) into `y` (and idx),
// then applies Relu to the pooled values (Relu commutes with the maximum).
template <class T>
void pool_image(const T* conv, const ConvReluPoolShape& s, int64_t n, T* y, int64_t* idx) {
  const int64_t P = s.conv_plane(), Q = s.pool_plane();
  const bool vector = std::is_same<T, float>::value && s.two_by_two() && fast::avx512() && P < (int64_t(1) << 31);
  for (int64_t m = 0; m < s.M; ++m) {
    const int64_t base = (n * s.M + m) * P;
    T* ym = y + (n * s.M + m) * Q;
    int64_t* im = idx ? idx + (n * s.M + m) * Q : nullptr;
    if constexpr (std::is_same<T, float>::value) {
      if (vector && s.pool.in[2] == 8) {
        max_pool_2x2_w8_f32(conv + m * P, s.pool.out[1], base, ym, im);
      } else if (vector) {
        max_pool_2x2_f32(conv + m * P, s.pool.in[2], s.pool.out[1], s.pool.out[2], base, ym, im);
      } else {
        max_pool_plane(conv + m * P, s.pool, base, ym, im);
      }
    } else {
      max_pool_plane(conv + m * P, s.pool, base, ym, im);
    }
    for (int64_t q = 0; q < Q; ++q) ym[q] = ym[q] < T(0) ? T(0) : ym[q];  // NaN passes through, as Relu
  }
}

class ConvReluMaxPool : public NodeKernel {
 public:
  explicit ConvReluMaxPool(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X"), w = required(ctx, 1, "W"), b = ctx.input(2);
    check(w.dtype() == x.dtype() && (!b.present() || b.dtype() == x.dtype()), "X, W and B must share one element type");
    const ConvReluPoolShape s = attrs_.resolve(x.shape(), w.shape(), *this);
    if (b.present())
      SINGA_CHECK(b.numel() == s.M, "B has " + std::to_string(b.numel()) + " values, expected " + std::to_string(s.M));
    sdk::Tensor y = ctx.output(0, s.out, x.dl_dtype());
    sdk::Tensor idx;
    if (ctx.num_outputs() > 1) idx = ctx.output(1, s.out, SINGA_ONNX_INT64);
    if (sdk::numel(s.out) == 0) return;
    int64_t* pi = idx.present() ? idx.data<int64_t>() : nullptr;
    if (x.dtype() == SINGA_ONNX_FLOAT && fast::avx512()) {
      run_f32(ctx, x.data<float>(), w.data<float>(), b.present() ? b.data<float>() : nullptr, s, y.data<float>(), pi);
      return;
    }
    dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      run_generic<T>(ctx, x.data<T>(), w.data<T>(), b.present() ? b.data<T>() : nullptr, s, y.data<T>(), pi);
    });
  }

 private:
  // Each task convolves one image into its own buffer and pools it there.
  static void run_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias,
                      const ConvReluPoolShape& s, float* y, int64_t* idx) {
    const int64_t in_size = s.conv.in_size(), P = s.conv_plane(), col_floats = conv_gemm_col_floats(s.conv, s.Cg);
    ctx.parallel_for(s.N, 1, [&](int64_t b, int64_t e) {
      thread_local std::vector<float> col, conv;
      if (col.size() < size_t(col_floats)) col.resize(size_t(col_floats));
      if (conv.size() < size_t(s.M * P)) conv.resize(size_t(s.M * P));
      for (int64_t n = b; n < e; ++n) {
        conv_gemm_image_f32(x + n * s.C * in_size, w, bias, conv.data(), s.conv, s.C, s.M, s.Cg, s.group, col.data());
        pool_image(conv.data(), s, n, y, idx);
      }
    });
  }

  // Without AVX-512, and for double: the whole conv output, then the pool.
  template <class T>
  static void run_generic(const sdk::Context& ctx, const T* x, const T* w, const T* bias, const ConvReluPoolShape& s,
                          T* y, int64_t* idx) {
    const std::vector<T> zeros(bias ? 0 : size_t(s.M), T(0));
    std::vector<T> conv(size_t(sdk::numel(s.conv_out)));
    conv_unfolded<T, T>(ctx, x, w, bias ? bias : zeros.data(), conv.data(), s.conv, s.N, s.C, s.M, s.Cg, s.group);
    ctx.parallel_for(s.N, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) pool_image(conv.data() + n * s.M * s.conv_plane(), s, n, y, idx);
    });
  }

  ConvReluPoolAttrs attrs_;
};

}  // namespace

void register_conv_relu_pool(sdk::Registrar& reg) {
  reg.kernel<ConvReluMaxPool>(kFusedDomain, "ConvReluMaxPool", 1, 1, "cpu",
                              {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE)}});
}

}  // namespace nn
}  // namespace singa
