// The float kernels of the training path (Conv, ConvGrad, Gemm, MatMul and
// the fused backward helpers) against the same ops run in float64, which
// take the reference paths (OpenBLAS dgemm, the generic loops). On AVX-512
// CPUs the float side runs fast::sgemm and the float unfolding; elsewhere
// both sides run the reference code and the comparison still holds.
#include "test_util.hpp"

#include <singa/autograd.hpp>
#include <singa/error.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

using singa::Shape;
using singa::Tensor;
using namespace singa::autograd;

namespace {

using testing_util::ensure_loaded;

Tensor random_f32(const Shape& s, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  Tensor t(s, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

Tensor to_double(const Tensor& t) {
  Tensor d(t.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = double(t.data<float>()[i]);
  return d;
}

// Float result within a tolerance of the float64 one, relative to the
// largest magnitude (sums of hundreds of products lose a few float ulps).
void expect_close(const Tensor& f, const Tensor& d, const std::string& what) {
  ASSERT_TRUE(f.defined()) << what;
  ASSERT_TRUE(d.defined()) << what;
  ASSERT_EQ(f.shape(), d.shape()) << what;
  double scale = 1e-3;
  for (int64_t i = 0; i < d.numel(); ++i) scale = std::max(scale, std::abs(d.data<double>()[i]));
  for (int64_t i = 0; i < d.numel(); ++i)
    ASSERT_NEAR(double(f.data<float>()[i]), d.data<double>()[i], 2e-5 * scale) << what << " element " << i;
}

using Op = std::function<Variable(const std::vector<Variable>&)>;

// Runs `op` on float inputs and on their float64 copies, seeds both with the
// same output gradient, and compares the outputs and every input gradient.
void compare(const Op& op, const std::vector<Tensor>& inputs, const std::vector<bool>& grad) {
  ensure_loaded();
  std::vector<Variable> vf, vd;
  for (size_t i = 0; i < inputs.size(); ++i) {
    vf.emplace_back(inputs[i].clone(), grad[i]);
    vd.emplace_back(to_double(inputs[i]), grad[i]);
  }
  Variable yf = op(vf), yd = op(vd);
  expect_close(yf.data(), yd.data(), "output");
  Tensor seed = random_f32(yf.shape(), 99);
  backward(yf, seed);
  backward(yd, to_double(seed));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!grad[i]) {
      EXPECT_FALSE(vf[i].grad().defined()) << "input " << i;
      continue;
    }
    expect_close(vf[i].grad(), vd[i].grad(), "gradient of input " + std::to_string(i));
  }
}

struct ConvCase {
  std::string name;
  Shape x, w;
  Attrs attrs;
  bool bias = true, x_grad = true;
};

std::vector<int64_t> two(int64_t a, int64_t b) { return {a, b}; }

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> c;
  // The seed CNN's two convs: a long image (dW as dot products) and a
  // short one (dW from the channels-last unfolding); the first without dX.
  c.push_back({"seed_conv1", {3, 1, 28, 28}, {20, 1, 5, 5}, Attrs(), true, false});
  c.push_back({"seed_conv2", {3, 20, 12, 12}, {50, 20, 5, 5}, Attrs()});
  // Unpadded rows of 8 with 3-wide kernels (the 8-float col2im), one with a
  // height stride.
  c.push_back({"rows8_k3", {2, 3, 10, 10}, {4, 3, 3, 3}, Attrs()});
  c.push_back({"rows8_k3_hstride", {2, 3, 17, 10}, {4, 3, 3, 3}, Attrs().set("strides", two(2, 1))});
  c.push_back({"stride_pad", {2, 3, 9, 11}, {4, 3, 3, 3},
               Attrs().set("strides", two(2, 2)).set("pads", std::vector<int64_t>{1, 1, 1, 1})});
  c.push_back({"dilation_pad", {2, 4, 10, 10}, {6, 4, 3, 3},
               Attrs().set("dilations", two(2, 2)).set("pads", std::vector<int64_t>{2, 2, 2, 2})});
  c.push_back({"asymmetric", {2, 3, 8, 9}, {5, 3, 2, 3},
               Attrs().set("strides", two(1, 2)).set("pads", std::vector<int64_t>{0, 1, 2, 0})});
  c.push_back({"groups", {2, 6, 8, 8}, {4, 3, 3, 3},
               Attrs().set("group", int64_t(2)).set("pads", std::vector<int64_t>{1, 1, 1, 1})});
  c.push_back({"depthwise_multiplier", {2, 4, 7, 7}, {8, 1, 3, 3},
               Attrs().set("group", int64_t(4)).set("pads", std::vector<int64_t>{1, 1, 1, 1})});
  c.push_back({"pointwise", {2, 8, 5, 5}, {3, 8, 1, 1}, Attrs()});
  c.push_back({"strided_dilated_long", {1, 2, 40, 40}, {3, 2, 3, 3},
               Attrs().set("strides", two(2, 1)).set("dilations", two(1, 3)).set("pads", std::vector<int64_t>{1, 3, 0, 2})});
  c.push_back({"auto_pad_same", {2, 3, 7, 6}, {4, 3, 3, 3}, Attrs().set("auto_pad", std::string("SAME_UPPER"))});
  c.push_back({"no_bias", {2, 5, 6, 6}, {7, 5, 3, 3}, Attrs(), false});
  c.push_back({"many_channels", {2, 40, 6, 7}, {8, 40, 3, 3}, Attrs().set("pads", std::vector<int64_t>{1, 0, 1, 2})});
  // Big enough that each image is unfolded in several chunks.
  c.push_back({"chunked", {1, 4, 110, 110}, {3, 4, 5, 5}, Attrs()});
  // So many taps per position that a chunk is less than one output row.
  c.push_back({"partial_rows", {1, 300, 400}, {2, 300, 9}, Attrs().set("strides", std::vector<int64_t>{1})});
  c.push_back({"partial_rows_padded", {1, 300, 400}, {2, 300, 9},
               Attrs().set("strides", std::vector<int64_t>{2}).set("pads", two(3, 4))});
  c.push_back({"conv1d", {2, 3, 20}, {4, 3, 3}, Attrs().set("strides", std::vector<int64_t>{2}).set("pads", two(1, 1))});
  c.push_back({"conv3d", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3},
               Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1})});
  return c;
}

}  // namespace

TEST(TrainKernels, ConvForwardAndGradientsMatchFloat64) {
  unsigned seed = 1;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> in{random_f32(c.x, seed++), random_f32(c.w, seed++)};
    std::vector<bool> grad{c.x_grad, true};
    if (c.bias) {
      in.push_back(random_f32({c.w[0]}, seed++));
      grad.push_back(true);
    }
    Attrs a = c.attrs;
    compare([a](const std::vector<Variable>& v) { return apply1("Conv", v, a); }, in, grad);
  }
}

TEST(TrainKernels, GemmEveryLayoutMatchesFloat64) {
  // Linear's shapes, and odd sizes around the 16-wide vectors.
  const std::vector<std::array<int64_t, 3>> sizes{{64, 500, 800}, {64, 10, 500}, {7, 17, 33}, {1, 5, 3}, {13, 1, 16}};
  unsigned seed = 50;
  for (auto [M, N, K] : sizes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int c_kind = 0; c_kind < 3; ++c_kind) {  // no C, a bias row, a full C with beta
          SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " ta" +
                       std::to_string(ta) + " tb" + std::to_string(tb) + " c" + std::to_string(c_kind));
          Attrs a;
          a.set("transA", int64_t(ta)).set("transB", int64_t(tb));
          if (c_kind == 2) a.set("alpha", 0.5f).set("beta", -1.5f);
          std::vector<Tensor> in{random_f32(ta ? Shape{K, M} : Shape{M, K}, seed++),
                                 random_f32(tb ? Shape{N, K} : Shape{K, N}, seed++)};
          if (c_kind == 1) in.push_back(random_f32({N}, seed++));
          if (c_kind == 2) in.push_back(random_f32({M, N}, seed++));
          compare([a](const std::vector<Variable>& v) { return apply1("Gemm", v, a); }, in,
                  std::vector<bool>(in.size(), true));
        }
}

TEST(TrainKernels, MatMulBatchedMatchesFloat64) {
  compare([](const std::vector<Variable>& v) { return matmul(v[0], v[1]); },
          {random_f32({3, 9, 40}, 1), random_f32({40, 20}, 2)}, {true, true});
  compare([](const std::vector<Variable>& v) { return matmul(v[0], v[1]); },
          {random_f32({2, 5, 17}, 3), random_f32({2, 17, 70}, 4)}, {true, true});
}

TEST(TrainKernels, MaxPoolWithIndicesMatchesFloat64) {
  ensure_loaded();
  struct Case {
    std::string name;
    Shape x;
    Attrs attrs;
    bool ties;
  };
  auto ints = [](std::vector<int64_t> v) { return v; };
  const std::vector<Case> cases{
      {"2x2_stride2", {3, 4, 24, 24}, Attrs().set("kernel_shape", ints({2, 2})).set("strides", ints({2, 2})), false},
      {"2x2_odd_sizes", {2, 3, 37, 35}, Attrs().set("kernel_shape", ints({2, 2})).set("strides", ints({2, 2})), false},
      {"2x2_ties", {2, 3, 20, 18}, Attrs().set("kernel_shape", ints({2, 2})).set("strides", ints({2, 2})), true},
      {"3x3_stride2_padded", {2, 3, 9, 10},
       Attrs().set("kernel_shape", ints({3, 3})).set("strides", ints({2, 2})).set("pads", ints({1, 1, 1, 1})), true},
  };
  unsigned seed = 200;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = random_f32(c.x, seed++);
    if (c.ties)  // a few values only: windows with equal maxima keep the first
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::round(x.data<float>()[i] * 2.f);
    Variable xf(x.clone(), true), xd(to_double(x), true);
    auto yf = apply("MaxPool", {xf}, c.attrs, 2), yd = apply("MaxPool", {xd}, c.attrs, 2);
    expect_close(yf[0].data(), yd[0].data(), "Y");
    ASSERT_EQ(yf[1].shape(), yd[1].shape());
    for (int64_t i = 0; i < yd[1].data().numel(); ++i)
      ASSERT_EQ(yf[1].data().data<int64_t>()[i], yd[1].data().data<int64_t>()[i]) << "Indices element " << i;
    Tensor seed_grad = random_f32(yf[0].shape(), 7);
    backward(yf[0], seed_grad);
    backward(yd[0], to_double(seed_grad));
    expect_close(xf.grad(), xd.grad(), "dX");
  }
}

// MaxPoolGrad with 2x2/stride-2 attributes but Indices that are not that
// pooling's (here every one names the first element of its plane): the
// vector path must notice and leave it to the generic scatter.
TEST(TrainKernels, MaxPoolGradWithForeignIndicesFallsBack) {
  ensure_loaded();
  const Shape xs{2, 3, 6, 16}, ys{2, 3, 3, 8};
  Tensor x = random_f32(xs, 300), dy = random_f32(ys, 301);
  Tensor idx(ys, SINGA_ONNX_INT64);
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = i / 24 * 96;
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2});
  Tensor dxf = apply("MaxPoolGrad", {Variable(dy), Variable(idx), Variable(x)}, a, 1, "ai.singa.grad")[0].data();
  Tensor dxd =
      apply("MaxPoolGrad", {Variable(to_double(dy)), Variable(idx), Variable(to_double(x))}, a, 1, "ai.singa.grad")[0].data();
  expect_close(dxf, dxd, "dX");
  double first = 0;
  for (int64_t i = 0; i < 24; ++i) first += dy.data<float>()[i];
  EXPECT_NEAR(dxf.data<float>()[0], first, 1e-5);
  EXPECT_EQ(dxf.data<float>()[1], 0.f);
}

// The fused Conv -> Relu -> MaxPool of layer::Sequential against the three
// ops it replaces, in float (the AVX-512 per-image path) and in float64 (the
// generic one): the same output and the same gradients of X, W and B.
TEST(TrainKernels, FusedConvReluMaxPoolMatchesTheThreeOps) {
  ensure_loaded();
  struct Case {
    std::string name;
    Shape x, w;
    Attrs conv;
    std::vector<int64_t> pool_k, pool_s;
    bool bias = true, x_grad = true;
  };
  const std::vector<Case> cases{
      // The seed CNN's blocks: pooled rows of 12 (vector unpooling) and of 4.
      {"seed_block1", {3, 1, 28, 28}, {20, 1, 5, 5}, Attrs(), {2, 2}, {2, 2}, true, false},
      {"seed_block2", {3, 20, 12, 12}, {50, 20, 5, 5}, Attrs(), {2, 2}, {2, 2}},
      // Conv rows of 8 (four pooled rows per vector), 11 of them: a group of
      // four pooled rows, one more row, and a conv row no window covers.
      {"rows8_remainder", {2, 3, 13, 10}, {6, 3, 3, 3}, Attrs(), {2, 2}, {2, 2}},
      // dW from the nonzero windows only (unpadded, one group): with a
      // stride, and with kernel rows longer than one pass of registers.
      {"strided", {2, 3, 15, 15}, {4, 3, 3, 3}, Attrs().set("strides", two(2, 2)), {2, 2}, {2, 2}},
      {"long_kernel_rows", {2, 40, 9, 9}, {6, 40, 5, 5}, Attrs(), {2, 2}, {2, 2}},
      // Odd conv output (25 x 23): the last row and column belong to no window.
      {"odd_sizes", {2, 3, 27, 25}, {4, 3, 3, 3}, Attrs(), {2, 2}, {2, 2}},
      // Overlapping 3 x 3 windows with stride 2 share maxima.
      {"overlapping", {2, 3, 13, 13}, {5, 3, 3, 3}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}), {3, 3}, {2, 2}},
      {"groups_strides", {2, 4, 17, 19}, {6, 2, 3, 3},
       Attrs().set("group", int64_t(2)).set("strides", two(2, 1)).set("pads", std::vector<int64_t>{1, 0, 1, 2}),
       {2, 2}, {2, 2}, false},
  };
  unsigned seed = 400;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Attrs fused = c.conv;
    fused.set("kernel_shape", std::vector<int64_t>(c.w.begin() + 2, c.w.end()))
        .set("pool_kernel_shape", c.pool_k)
        .set("pool_strides", c.pool_s);
    Attrs conv = c.conv;
    conv.set("kernel_shape", std::vector<int64_t>(c.w.begin() + 2, c.w.end()));
    Attrs pool;
    pool.set("kernel_shape", c.pool_k).set("strides", c.pool_s);
    std::vector<Tensor> in{random_f32(c.x, seed++), random_f32(c.w, seed++)};
    if (c.bias) in.push_back(random_f32({c.w[0]}, seed++));
    for (bool f64 : {false, true}) {
      SCOPED_TRACE(f64 ? "float64" : "float");
      auto vars = [&] {
        std::vector<Variable> v;
        for (size_t i = 0; i < in.size(); ++i) v.emplace_back(f64 ? to_double(in[i]) : in[i].clone(), i > 0 || c.x_grad);
        return v;
      };
      std::vector<Variable> a = vars(), b = vars();
      Variable ya = apply("ConvReluMaxPool", a, fused, 2, "ai.singa")[0];
      Variable yb = apply("MaxPool", {relu(apply1("Conv", b, conv))}, pool, 2)[0];
      ASSERT_EQ(ya.shape(), yb.shape());
      Tensor g = random_f32(ya.shape(), 77);
      if (f64) g = to_double(g);
      backward(ya, g);
      backward(yb, g);
      std::vector<std::pair<Tensor, Tensor>> pairs{{ya.data(), yb.data()}};
      for (size_t i = 0; i < a.size(); ++i)
        if (i > 0 || c.x_grad) pairs.emplace_back(a[i].grad(), b[i].grad());
      for (size_t k = 0; k < pairs.size(); ++k) {
        SCOPED_TRACE(k == 0 ? std::string("Y") : "gradient of input " + std::to_string(k - 1));
        const Tensor &p = pairs[k].first, &q = pairs[k].second;
        ASSERT_TRUE(p.defined() && q.defined());
        ASSERT_EQ(p.shape(), q.shape());
        for (int64_t i = 0; i < p.numel(); ++i) {
          const double u = f64 ? p.data<double>()[i] : p.data<float>()[i];
          const double v = f64 ? q.data<double>()[i] : q.data<float>()[i];
          ASSERT_NEAR(u, v, 1e-5 * std::max(1.0, std::abs(v))) << "element " << i;
        }
      }
      if (!c.x_grad) {
        EXPECT_FALSE(a[0].grad().defined());
      }
    }
  }
}

// Indices that name a position outside their own plane are refused with a
// message (they cannot come from the forward op), not written through.
TEST(TrainKernels, FusedConvReluMaxPoolGradRefusesForeignIndices) {
  ensure_loaded();
  Attrs a;
  a.set("kernel_shape", two(3, 3)).set("pool_kernel_shape", two(2, 2)).set("pool_strides", two(2, 2));
  Tensor x = random_f32({1, 2, 10, 10}, 500), w = random_f32({3, 2, 3, 3}, 501);
  auto fwd = apply("ConvReluMaxPool", {Variable(x), Variable(w)}, a, 2, "ai.singa");
  ASSERT_EQ(fwd[0].shape(), (Shape{1, 3, 4, 4}));
  Tensor idx = fwd[1].data().clone();
  idx.data<int64_t>()[5] = 1 << 20;
  Tensor dy = random_f32({1, 3, 4, 4}, 502), y = fwd[0].data();
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = 1.f;  // every window passes Relu's mask
  try {
    apply("ConvReluMaxPoolGrad", {Variable(dy), Variable(idx), Variable(y), Variable(x), Variable(w)}, a, 3,
          "ai.singa.grad");
    FAIL() << "foreign Indices were accepted";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Indices"), std::string::npos) << e.what();
  }
  // Missing pool attributes: a clear error at creation.
  Attrs bad;
  bad.set("kernel_shape", two(3, 3));
  EXPECT_THROW(apply("ConvReluMaxPool", {Variable(x), Variable(w)}, bad, 1, "ai.singa"), singa::Error);
}
