// Convs whose weights outweigh their activations (few pixels, many channels:
// crnn's 512-channel 3x3 layers on 4x32 planes) with a fused MaxPool. At
// 2+ threads oneDNN's pooled plan splits them by output channels, each part
// convolving and pooling all rows of its own 16-channel blocks; the output
// must be the same as convolving everything and pooling after. A family:
// 3x3 (Winograd), 1x1, 5x5 and 3x1 kernels, channel counts from 32 to 512 (and
// one not a multiple of 16, which takes another path), (2,1), (2,2) and
// padded 3x3/2 pools, with and without bias and Relu, batch 1 and 2, with a
// Conv before (input in 16-channel blocks) and after (output in blocks).
// Checked against a plain double evaluation at 1 to 3 threads. Last, the
// same rule for MatMul with a few rows: parts of B's columns.
#include "model_builder.hpp"
#include "run_threads.hpp"

#include <singa/onnx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::random_values;
using testing_util::run_threads;

namespace {

struct Case {
  int64_t N, C, M, H, W, kh, kw;  // the pooled conv: C -> M, kh x kw, "same"-ish pads for odd kernels
  int64_t ph, pw, ps_h, ps_w, ppad;  // MaxPool window, strides, pads (all sides)
  bool bias, relu;
  int64_t pre = 0;   // channels of a 1x1 Conv before (0: none)
  int64_t post = 0;  // channels of a 1x1 Conv after (0: none)
};

// Values y [N, M, H', W'] of a conv with weights w [M, C, kh, kw] (pads kh/2,
// kw/2, stride 1), and beside them the sums of |terms| for the tolerance.
struct Planes {
  std::vector<double> v, mag;
  int64_t N = 0, C = 0, H = 0, W = 0;
  double at(int64_t n, int64_t c, int64_t h, int64_t w) const { return v[size_t(((n * C + c) * H + h) * W + w)]; }
  double mag_at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return mag[size_t(((n * C + c) * H + h) * W + w)];
  }
};

Planes conv_ref(const Planes& x, const std::vector<float>& w, const std::vector<float>* b, int64_t M, int64_t kh,
                int64_t kw, bool relu) {
  Planes y;
  y.N = x.N, y.C = M, y.H = x.H + 2 * (kh / 2) - kh + 1, y.W = x.W + 2 * (kw / 2) - kw + 1;
  y.v.assign(size_t(y.N * M * y.H * y.W), 0.0);
  y.mag.assign(y.v.size(), 0.0);
  for (int64_t n = 0; n < x.N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < y.H; ++oh)
        for (int64_t ow = 0; ow < y.W; ++ow) {
          double s = b ? (*b)[size_t(m)] : 0.0, a = std::abs(s);
          for (int64_t c = 0; c < x.C; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = oh + i - kh / 2, iw = ow + j - kw / 2;
                if (ih < 0 || ih >= x.H || iw < 0 || iw >= x.W) continue;
                const double wv = w[size_t(((m * x.C + c) * kh + i) * kw + j)];
                s += wv * x.at(n, c, ih, iw);
                a += std::abs(wv) * x.mag_at(n, c, ih, iw);
              }
          const size_t at = size_t(((n * M + m) * y.H + oh) * y.W + ow);
          y.v[at] = relu ? std::max(0.0, s) : s;
          y.mag[at] = a;
        }
  return y;
}

Planes pool_ref(const Planes& x, const Case& c) {
  Planes y;
  y.N = x.N, y.C = x.C;
  y.H = (x.H + 2 * c.ppad - c.ph) / c.ps_h + 1, y.W = (x.W + 2 * c.ppad - c.pw) / c.ps_w + 1;
  y.v.assign(size_t(y.N * y.C * y.H * y.W), 0.0);
  y.mag.assign(y.v.size(), 0.0);
  for (int64_t n = 0; n < y.N; ++n)
    for (int64_t ch = 0; ch < y.C; ++ch)
      for (int64_t oh = 0; oh < y.H; ++oh)
        for (int64_t ow = 0; ow < y.W; ++ow) {
          double best = -std::numeric_limits<double>::infinity(), mag = 0;
          for (int64_t i = 0; i < c.ph; ++i)
            for (int64_t j = 0; j < c.pw; ++j) {
              const int64_t ih = oh * c.ps_h + i - c.ppad, iw = ow * c.ps_w + j - c.ppad;
              if (ih < 0 || ih >= x.H || iw < 0 || iw >= x.W) continue;
              best = std::max(best, x.at(n, ch, ih, iw));
              mag = std::max(mag, x.mag_at(n, ch, ih, iw));
            }
          const size_t at = size_t(((n * y.C + ch) * y.H + oh) * y.W + ow);
          y.v[at] = best;
          y.mag[at] = mag;
        }
  return y;
}

void add_conv(ModelBuilder& m, const std::string& x, const std::string& y, const std::string& name, int64_t C,
              int64_t M, int64_t kh, int64_t kw, const std::vector<float>& w, const std::vector<float>* b) {
  m.initializer(name + "_w", f32_tensor({M, C, kh, kw}, w));
  std::vector<std::string> ins{x, name + "_w"};
  if (b) {
    m.initializer(name + "_b", f32_tensor({M}, *b));
    ins.push_back(name + "_b");
  }
  m.node("Conv", ins, {y}, name);
  add_ints(m.last(), "kernel_shape", {kh, kw});
  add_ints(m.last(), "pads", {kh / 2, kw / 2, kh / 2, kw / 2});
}

void check_case(const Case& c, unsigned seed) {
  SCOPED_TRACE("N " + std::to_string(c.N) + " C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " " +
               std::to_string(c.H) + "x" + std::to_string(c.W) + " kernel " + std::to_string(c.kh) + "x" +
               std::to_string(c.kw) + " pool " + std::to_string(c.ph) + "x" + std::to_string(c.pw) + "/" +
               std::to_string(c.ps_h) + "x" + std::to_string(c.ps_w) + " pad " + std::to_string(c.ppad) +
               (c.bias ? " bias" : "") + (c.relu ? " relu" : "") + " pre " + std::to_string(c.pre) + " post " +
               std::to_string(c.post));
  const int64_t Cin = c.pre ? c.pre : c.C;
  const singa::Shape xs{c.N, Cin, c.H, c.W};
  const std::vector<float> x = random_values(size_t(c.N * Cin * c.H * c.W), seed, 1.f);
  Planes p;
  p.N = c.N, p.C = Cin, p.H = c.H, p.W = c.W;
  p.v.assign(x.begin(), x.end());
  p.mag.assign(x.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) p.mag[i] = std::abs(p.v[i]);

  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, xs);
  std::string cur = "x";
  if (c.pre) {
    const std::vector<float> w0 = random_values(size_t(c.C * c.pre), seed + 1, 0.5f);
    add_conv(m, cur, "a", "pre", c.pre, c.C, 1, 1, w0, nullptr);
    m.node("Relu", {"a"}, {"ar"});
    cur = "ar";
    p = conv_ref(p, w0, nullptr, c.C, 1, 1, true);
  }
  const float scale = 1.f / std::sqrt(float(c.C * c.kh * c.kw));
  const std::vector<float> w = random_values(size_t(c.M * c.C * c.kh * c.kw), seed + 2, scale);
  const std::vector<float> b = random_values(size_t(c.M), seed + 3, 0.5f);
  add_conv(m, cur, "c", "conv", c.C, c.M, c.kh, c.kw, w, c.bias ? &b : nullptr);
  cur = "c";
  if (c.relu) {
    m.node("Relu", {"c"}, {"cr"});
    cur = "cr";
  }
  m.node("MaxPool", {cur}, {"p"}, "pool");
  add_ints(m.last(), "kernel_shape", {c.ph, c.pw});
  add_ints(m.last(), "strides", {c.ps_h, c.ps_w});
  add_ints(m.last(), "pads", {c.ppad, c.ppad, c.ppad, c.ppad});
  cur = "p";
  p = pool_ref(conv_ref(p, w, c.bias ? &b : nullptr, c.M, c.kh, c.kw, c.relu), c);
  if (c.post) {
    const std::vector<float> w2 = random_values(size_t(c.post * c.M), seed + 4, 1.f / std::sqrt(float(c.M)));
    add_conv(m, cur, "q", "post", c.M, c.post, 1, 1, w2, nullptr);
    cur = "q";
    p = conv_ref(p, w2, nullptr, c.post, 1, 1, false);
  }
  const singa::Shape ys{p.N, p.C, p.H, p.W};
  m.output(cur, SINGA_ONNX_FLOAT, ys);
  run_threads(m, f32_tensor(xs, x), {}, [&](const Tensor& y, const singa::onnx::Rep&) {
    ASSERT_EQ(y.shape(), ys);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double got = y.data<float>()[i], want = p.v[size_t(i)], tol = 1e-4 * p.mag[size_t(i)] + 1e-5;
      ASSERT_NEAR(got, want, tol) << "at " << i;
    }
  });
}

}  // namespace

// crnn's two pooled layers (256 -> 256 on 8x32 with a (2,1) pool, 512 -> 512
// on 4x32), cut down in width where the shape class stays weight-heavy.
TEST(ConvWeightBound, CrnnLikePooled3x3) {
  check_case({1, 256, 256, 8, 32, 3, 3, 2, 1, 2, 1, 0, true, true}, 11);
  check_case({1, 512, 512, 4, 16, 3, 3, 2, 1, 2, 1, 0, true, true, 256, 0}, 12);
}

// Channel counts where the 16-channel blocks split unevenly over 3 threads
// (48 and 80 output channels: 3 and 5 blocks), fewer blocks than threads
// (32), and one that is not a multiple of 16 (40: not oneDNN's pooled plan).
TEST(ConvWeightBound, ChannelCounts) {
  unsigned seed = 20;
  for (int64_t M : {32, 48, 80, 40})
    for (int64_t C : {64, 96}) check_case({1, C, M, 4, 6, 3, 3, 2, 2, 2, 2, 0, M != 48, true}, seed++);
}

// Kernels other than 3x3, pools with padding and stride 2, no activation.
TEST(ConvWeightBound, KernelsAndPools) {
  check_case({1, 128, 96, 5, 7, 1, 1, 3, 3, 2, 2, 1, true, false}, 31);
  check_case({1, 128, 64, 6, 6, 3, 3, 3, 3, 2, 2, 1, false, true}, 32);
  check_case({1, 96, 64, 7, 5, 5, 5, 2, 2, 2, 2, 0, true, true}, 33);
  check_case({1, 64, 128, 4, 9, 3, 1, 2, 1, 2, 1, 0, true, true}, 34);
}

// Batch 2 (each part's pooled rows of both images go to their own planes),
// and blocked neighbours on both sides.
TEST(ConvWeightBound, BatchAndBlockedNeighbours) {
  check_case({2, 96, 64, 4, 8, 3, 3, 2, 2, 2, 2, 0, true, true}, 41);
  check_case({1, 64, 96, 4, 8, 3, 3, 2, 1, 2, 1, 0, true, true, 32, 48}, 42);
  check_case({2, 64, 64, 4, 6, 3, 3, 2, 2, 2, 2, 0, true, false, 48, 32}, 43);
}

// The same rule for products of a few rows by a constant B (a short
// sequence's projections, 32 x 256 by 256 x 1024): at 2+ threads the
// columns split over the threads (multiples of 64) instead of the rows.
// Shapes with 9 to 40 rows, K not a multiple of 16, N not a multiple of 64,
// and one where B is light enough to keep row parts; MatMul, FusedMatMul
// with transB + bias + Gelu + residual, with bias + residual (no Gelu), and
// scaled. Against a double loop at 1 to 3 threads.
TEST(ConvWeightBound, FewRowProductsByColumns) {
  struct Shape3 {
    int64_t R, K, N;
  };
  unsigned seed = 60;
  for (const Shape3& sh : {Shape3{32, 256, 1024}, Shape3{9, 301, 200}, Shape3{40, 64, 520}, Shape3{24, 96, 136},
                           Shape3{48, 64, 64}}) {
    const int64_t R = sh.R, K = sh.K, N = sh.N;
    const std::vector<float> a = random_values(size_t(R * K), seed++, 1.f), b = random_values(size_t(K * N), seed++, 1.f),
                             bias = random_values(size_t(N), seed++, 1.f), z = random_values(size_t(R * N), seed++, 1.f);
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE(std::to_string(R) + " x " + std::to_string(K) + " x " + std::to_string(N) + " variant " +
                   std::to_string(variant));
      const bool transposed = variant == 1;
      std::vector<float> bt(b.size());
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) bt[size_t(n * K + k)] = b[size_t(k * N + n)];
      ModelBuilder m(13);
      auto* op = m.model.add_opset_import();
      op->set_domain("ai.singa.cpu");
      op->set_version(1);
      m.input("a", SINGA_ONNX_FLOAT, {R, K});
      m.initializer("b", transposed ? f32_tensor({N, K}, bt) : f32_tensor({K, N}, b));
      m.initializer("bias", f32_tensor({N}, bias)).initializer("z", f32_tensor({R, N}, z));
      if (variant == 0) m.node("MatMul", {"a", "b"}, {"y"});
      if (variant == 1 || variant == 2) {
        m.node("FusedMatMul", {"a", "b", "bias", "z"}, {"y"});
        m.last()->set_domain("ai.singa.cpu");
        if (variant == 1) {
          testing_util::add_int(m.last(), "transB", 1);
          testing_util::add_string(m.last(), "activation", "Gelu");
        }
      }
      if (variant == 3) {
        m.node("FusedMatMul", {"a", "b"}, {"y"});
        m.last()->set_domain("ai.singa.cpu");
        testing_util::add_float(m.last(), "alpha", 0.25f);
      }
      m.output("y", SINGA_ONNX_FLOAT, {R, N});
      std::vector<double> want(size_t(R * N)), mag(size_t(R * N));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double s = 0, a_s = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double t = double(a[size_t(r * K + k)]) * b[size_t(k * N + n)];
            s += t, a_s += std::abs(t);
          }
          if (variant == 1 || variant == 2) s += bias[size_t(n)], a_s += std::abs(bias[size_t(n)]);
          if (variant == 1) s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
          if (variant == 1 || variant == 2) s += z[size_t(r * N + n)], a_s += std::abs(z[size_t(r * N + n)]);
          if (variant == 3) s *= 0.25, a_s *= 0.25;
          want[size_t(r * N + n)] = s, mag[size_t(r * N + n)] = a_s;
        }
      run_threads(m, f32_tensor({R, K}, a), {}, [&](const Tensor& y, const singa::onnx::Rep&) {
        ASSERT_EQ(y.shape(), (singa::Shape{R, N}));
        for (int64_t i = 0; i < y.numel(); ++i)
          ASSERT_NEAR(y.data<float>()[i], want[size_t(i)], 1e-5 * mag[size_t(i)] + 1e-6) << "at " << i;
      });
    }
  }
}
