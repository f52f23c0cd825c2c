// Layers, losses and imported models on the autograd tape.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/onnx.hpp>
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using singa::Shape;
using singa::Tensor;
using singa::autograd::Variable;
using namespace singa::layer;

namespace {

using testing_util::ensure_loaded;
using testing_util::randn;


class LayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_loaded();
    manual_seed(3);
  }
};

}  // namespace

TEST_F(LayersTest, LinearComputesXWtPlusB) {
  Linear l(3, 2);
  Tensor x = randn({4, 3});
  Tensor y = l(Variable(x)).data();
  ASSERT_EQ(y.shape(), (Shape{4, 2}));
  const float* w = l.weight.data().data<float>();
  const float* b = l.bias.data().data<float>();
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 2; ++o) {
      float s = b[o];
      for (int i = 0; i < 3; ++i) s += x.data<float>()[n * 3 + i] * w[o * 3 + i];
      EXPECT_NEAR(y.data<float>()[n * 2 + o], s, 1e-5);
    }
  EXPECT_THROW(l(Variable(randn({4, 5}))), singa::Error);
}

TEST_F(LayersTest, SequentialNamesParametersAndBuffersByPosition) {
  Sequential m;
  m.emplace<Conv2d>(1, 4, 3, 1, 1).emplace<BatchNorm2d>(4).emplace<ReLU>().emplace<MaxPool2d>(2).emplace<Flatten>()
      .emplace<Linear>(4 * 4 * 4, 3);
  std::vector<std::string> names;
  for (auto& [n, v] : m.parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.scale", "1.bias", "5.weight", "5.bias"}));
  auto bufs = m.buffers();
  ASSERT_EQ(bufs.size(), 2u);
  EXPECT_EQ(bufs[0].first, "1.running_mean");
  Variable y = m(Variable(randn({2, 1, 8, 8})));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
}

TEST_F(LayersTest, BatchNormUpdatesRunningStatisticsOnlyWhileTraining) {
  BatchNorm2d bn(2, 0.5f);
  Tensor x = randn({8, 2, 3, 3});
  Tensor y = bn(Variable(x)).data();
  // Normalised with batch statistics: each channel has mean ~0 and variance ~1.
  for (int c = 0; c < 2; ++c) {
    double s = 0, ss = 0;
    for (int n = 0; n < 8; ++n)
      for (int i = 0; i < 9; ++i) {
        double v = y.data<float>()[(n * 2 + c) * 9 + i];
        s += v;
        ss += v * v;
      }
    EXPECT_NEAR(s / 72, 0.0, 1e-4);
    EXPECT_NEAR(ss / 72, 1.0, 1e-2);
  }
  float m0 = bn.running_mean.data().data<float>()[0];
  EXPECT_NE(m0, 0.0f);  // moved half-way to the batch mean
  bn.eval();
  bn(Variable(x));
  EXPECT_EQ(bn.running_mean.data().data<float>()[0], m0);
}

TEST_F(LayersTest, DropoutIsTheIdentityInEvaluation) {
  Dropout d(0.5f, 7);
  Tensor x = randn({100});
  Tensor y = d(Variable(x)).data();
  int zeros = 0;
  for (int i = 0; i < 100; ++i) zeros += y.data<float>()[i] == 0.0f;
  EXPECT_GT(zeros, 20);
  EXPECT_LT(zeros, 80);
  d.eval();
  Tensor z = d(Variable(x)).data();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(z.data<float>()[i], x.data<float>()[i]);
}

TEST_F(LayersTest, SmallNetworkLearnsASeparableProblem) {
  // Two Gaussian blobs; a two-layer MLP must separate them.
  const int N = 128;
  Tensor x({N, 2}, SINGA_ONNX_FLOAT), labels({N}, SINGA_ONNX_INT64);
  std::mt19937 g(5);
  std::normal_distribution<float> d(0, 0.5f);
  for (int i = 0; i < N; ++i) {
    int c = i % 2;
    labels.data<int64_t>()[i] = c;
    x.data<float>()[2 * i] = d(g) + (c ? 2.0f : -2.0f);
    x.data<float>()[2 * i + 1] = d(g);
  }
  Sequential m;
  m.emplace<Linear>(2, 8).emplace<Tanh>().emplace<Linear>(8, 2);
  singa::optim::SGD opt(m.parameters(), 0.1, 0.9);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    Variable l = singa::loss::softmax_cross_entropy(m(Variable(x)), Variable(labels));
    singa::autograd::backward(l);
    opt.step();
    opt.zero_grad();
    (step == 0 ? first : last) = *l.data().data<float>();
  }
  EXPECT_LT(last, first * 0.2);
  EXPECT_EQ(singa::loss::count_correct(m(Variable(x)).data(), labels), N);
}

TEST_F(LayersTest, LossesMatchTheirDefinitions) {
  Tensor p = Tensor::from_vector<float>({2, 2}, SINGA_ONNX_FLOAT, {0.2f, 0.8f, 0.6f, 0.4f});
  Tensor t = Tensor::from_vector<float>({2, 2}, SINGA_ONNX_FLOAT, {0.0f, 1.0f, 1.0f, 0.0f});
  float mse = *singa::loss::mse(Variable(p), Variable(t)).data().data<float>();
  EXPECT_NEAR(mse, (0.04 + 0.04 + 0.16 + 0.16) / 4, 1e-6);
  float bce = *singa::loss::binary_cross_entropy(Variable(p), Variable(t)).data().data<float>();
  EXPECT_NEAR(bce, -(std::log(0.8) + std::log(0.8) + std::log(0.6) + std::log(0.6)) / 4, 1e-5);
  // One-hot cross-entropy equals the index form.
  Tensor logits = randn({3, 4});
  Tensor idx = Tensor::from_vector<int64_t>({3}, SINGA_ONNX_INT64, {1, 3, 0});
  Tensor onehot = Tensor::zeros({3, 4}, SINGA_ONNX_FLOAT);
  for (int i = 0; i < 3; ++i) onehot.data<float>()[i * 4 + idx.data<int64_t>()[i]] = 1.0f;
  float a = *singa::loss::softmax_cross_entropy(Variable(logits), Variable(idx)).data().data<float>();
  float b = *singa::loss::softmax_cross_entropy_onehot(Variable(logits), Variable(onehot)).data().data<float>();
  EXPECT_NEAR(a, b, 1e-5);
}

namespace {

// x[N,4] -> Gemm(W1 [4,5], b1) -> Relu -> Gemm(W2 [5,3], b2)
std::shared_ptr<singa::onnx::Rep> small_mlp() {
  testing_util::ModelBuilder mb(13);
  mb.input("x", SINGA_ONNX_FLOAT, {-1, 4}, {"N"}).output("y", SINGA_ONNX_FLOAT, {-1, 3}, {"N", ""});
  mb.initializer("W1", randn({4, 5}, 11)).initializer("b1", randn({5}, 12));
  mb.initializer("W2", randn({5, 3}, 13)).initializer("b2", randn({3}, 14));
  mb.node("Gemm", {"x", "W1", "b1"}, {"h"}).node("Relu", {"h"}, {"r"}).node("Gemm", {"r", "W2", "b2"}, {"y"});
  singa::onnx::PrepareOptions o;
  o.optimize = false;  // training runs the graph as written
  return singa::onnx::prepare(mb.model, o);
}

}  // namespace

TEST_F(LayersTest, ImportedModelRunsLikeTheRepAndStopsEarly) {
  auto rep = small_mlp();
  Tensor x = randn({6, 4}, 21);
  ImportedModel m(rep);
  Tensor eager = m(Variable(x)).data();
  Tensor ref = rep->run(std::vector<Tensor>{x})[0].second;
  ASSERT_EQ(eager.shape(), ref.shape());
  for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_NEAR(eager.data<float>()[i], ref.data<float>()[i], 1e-6);

  singa::onnx::RunOptions ro;
  ro.last_layers = -1;
  Tensor cut_ref = rep->run(std::vector<Tensor>{x}, ro)[0].second;
  ImportedModel cut(rep, -1);
  Tensor cut_eager = cut(Variable(x)).data();
  ASSERT_EQ(cut_eager.shape(), (Shape{6, 5}));
  for (int64_t i = 0; i < cut_ref.numel(); ++i) EXPECT_NEAR(cut_eager.data<float>()[i], cut_ref.data<float>()[i], 1e-6);

  std::vector<std::string> names;
  for (auto& [n, v] : m.parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"W1", "b1", "W2", "b2"}));
  EXPECT_THROW(ImportedModel(rep, -3)(Variable(x)), singa::Error);
}

TEST_F(LayersTest, ImportedParametersTrainAndAppendedLayersReceiveGradients) {
  auto rep = small_mlp();
  auto imported = std::make_shared<ImportedModel>(rep, -1);
  Sequential m;
  m.add(imported).emplace<Linear>(5, 2);
  Tensor x = randn({16, 4}, 31);
  Tensor labels({16}, SINGA_ONNX_INT64);
  for (int i = 0; i < 16; ++i) labels.data<int64_t>()[i] = x.data<float>()[i * 4] > 0 ? 1 : 0;
  singa::optim::Adam opt(m.parameters(), 0.05);
  Tensor w1_before = imported->parameters()[0].second.data().clone();
  double first = 0, last = 0;
  for (int step = 0; step < 80; ++step) {
    Variable l = singa::loss::softmax_cross_entropy(m(Variable(x)), Variable(labels));
    singa::autograd::backward(l);
    for (auto& [n, v] : m.parameters()) {
      if (n.rfind("0.W2", 0) == 0 || n.rfind("0.b2", 0) == 0) continue;  // cut off: no gradient
      ASSERT_TRUE(v.grad().defined()) << n;
    }
    opt.step();
    opt.zero_grad();
    (step == 0 ? first : last) = *l.data().data<float>();
  }
  EXPECT_LT(last, first * 0.5);
  // The imported weights moved; the Rep itself still runs the originals.
  EXPECT_NE(imported->parameters()[0].second.data().data<float>()[0], w1_before.data<float>()[0]);
  Tensor ref = rep->run(std::vector<Tensor>{x})[0].second;
  ImportedModel fresh(rep);
  EXPECT_NEAR(fresh(Variable(x)).data().data<float>()[0], ref.data<float>()[0], 1e-6);
}

// ---------------------------------------------------------------- data, checkpoints
#include <singa/checkpoint.hpp>
#include <singa/dataset.hpp>

#include <cstdio>
#include <fstream>

namespace {

// A float tensor as float64 (for numerical gradient checks).
Tensor to_double(const Tensor& t) {
  Tensor d(t.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

// PyTorch's gate blocks (i, f, g, o) of a [4H, K] or [4H] tensor in ONNX's order (i, o, f, c).
Tensor onnx_gate_order(const Tensor& t, int64_t hidden) {
  Tensor out(t.shape(), SINGA_ONNX_FLOAT);
  const int64_t block = t.numel() / 4;
  const int64_t from[4] = {0, 3, 1, 2};
  for (int64_t b = 0; b < 4; ++b)
    std::copy(t.data<float>() + from[b] * block, t.data<float>() + (from[b] + 1) * block, out.data<float>() + b * block);
  (void)hidden;
  return out;
}

}  // namespace

TEST_F(LayersTest, LstmMatchesTheOnnxLstmOperator) {
  // The unrolled layer against ops_rnn's LSTM kernel on the same weights.
  const int64_t N = 3, T = 5, I = 4, H = 6;
  LSTM lstm(I, H, 1, /*batch_first=*/false);
  Tensor x = randn({T, N, I}, 4);
  Tensor ours = lstm(Variable(x)).data();
  ASSERT_EQ(ours.shape(), (Shape{T, N, H}));
  const LSTM::Weights& w = lstm.weights[0];
  Tensor W = onnx_gate_order(w.w_ih.data(), H).reshaped({1, 4 * H, I});
  Tensor R = onnx_gate_order(w.w_hh.data(), H).reshaped({1, 4 * H, H});
  Tensor B({1, 8 * H}, SINGA_ONNX_FLOAT);
  Tensor bi = onnx_gate_order(w.b_ih.data(), H), bh = onnx_gate_order(w.b_hh.data(), H);
  std::copy(bi.data<float>(), bi.data<float>() + 4 * H, B.data<float>());
  std::copy(bh.data<float>(), bh.data<float>() + 4 * H, B.data<float>() + 4 * H);
  singa::autograd::NoGradGuard ng;
  Tensor ref = singa::autograd::apply("LSTM", {Variable(x), Variable(W), Variable(R), Variable(B)},
                                      singa::autograd::Attrs().set("hidden_size", H), 1)[0].data();
  ASSERT_EQ(ref.shape(), (Shape{T, 1, N, H}));
  for (int64_t i = 0; i < ours.numel(); ++i) EXPECT_NEAR(ours.data<float>()[i], ref.data<float>()[i], 1e-5) << i;
}

TEST_F(LayersTest, LstmShapesNamesAndClearErrors) {
  LSTM lstm(3, 4, 2, /*batch_first=*/true, /*return_sequences=*/false);
  std::vector<std::string> names;
  for (auto& [n, v] : lstm.parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1",
                                             "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"}));
  EXPECT_EQ(lstm.weights[1].w_ih.shape(), (Shape{16, 4}));
  EXPECT_EQ(lstm(Variable(randn({2, 7, 3}))).shape(), (Shape{2, 4}));
  LSTM seq(3, 4, 1, true, true);
  EXPECT_EQ(seq(Variable(randn({2, 7, 3}))).shape(), (Shape{2, 7, 4}));
  EXPECT_THROW(lstm(Variable(randn({2, 7, 5}))), singa::Error);  // wrong feature count
  EXPECT_THROW(lstm(Variable(randn({2, 3}))), singa::Error);      // not a sequence
  EXPECT_THROW(LSTM(0, 4), singa::Error);
}

TEST_F(LayersTest, LstmGradientsMatchCentralDifferences) {
  // Two layers, batch first, float64 throughout.
  LSTM lstm(2, 3, 2, true, true);
  for (auto& w : lstm.weights)
    for (Variable* v : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh}) v->set_data(to_double(v->data()));
  Variable x(to_double(randn({2, 4, 2}, 5)), true);
  Tensor r = to_double(randn({2, 4, 3}, 6));
  auto loss = [&]() {
    Variable y = lstm(x);
    Variable prod = singa::autograd::mul(y, Variable(r));
    return singa::autograd::reduce_sum(prod, {});
  };
  singa::autograd::backward(loss());
  const double eps = 1e-6;
  for (Variable* v : {&x, &lstm.weights[0].w_hh, &lstm.weights[1].w_ih, &lstm.weights[0].b_ih}) {
    ASSERT_TRUE(v->grad().defined());
    double* p = v->data().data<double>();
    for (int64_t j = 0; j < v->data().numel(); ++j) {
      singa::autograd::NoGradGuard ng;
      const double keep = p[j];
      p[j] = keep + eps;
      const double up = loss().data().data<double>()[0];
      p[j] = keep - eps;
      const double down = loss().data().data<double>()[0];
      p[j] = keep;
      const double numeric = (up - down) / (2 * eps);
      ASSERT_NEAR(v->grad().data<double>()[j], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << v->name() << " " << j;
    }
  }
}

TEST_F(LayersTest, LstmClassifierLearnsTheSignOfASum) {
  // Sequences of +-1 steps; the class is whether their sum is positive.
  std::mt19937 g(11);
  const int64_t N = 64, T = 6;
  Tensor x({N, T, 1}, SINGA_ONNX_FLOAT);
  Tensor y({N}, SINGA_ONNX_INT64);
  for (int64_t n = 0; n < N; ++n) {
    float sum = 0;
    for (int64_t t = 0; t < T; ++t) sum += x.data<float>()[n * T + t] = (g() & 1) ? 1.0f : -1.0f;
    if (sum == 0) x.data<float>()[n * T] = -x.data<float>()[n * T], sum = 2 * x.data<float>()[n * T];
    y.data<int64_t>()[n] = sum > 0;
  }
  Sequential m;
  m.emplace<LSTM>(1, 8, 1, true, false).emplace<Linear>(8, 2);
  singa::optim::Adam opt(m.parameters(), 0.05);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    Variable l = singa::loss::softmax_cross_entropy(m(Variable(x)), Variable(y));
    singa::autograd::backward(l);
    opt.step();
    opt.zero_grad();
    (step == 0 ? first : last) = double(l.data().data<float>()[0]);
  }
  EXPECT_LT(last, 0.3 * first) << "loss " << first << " -> " << last;
  singa::autograd::NoGradGuard ng;
  EXPECT_GE(singa::loss::count_correct(m(Variable(x)).data(), y), N * 9 / 10);
}

TEST(DatasetTest, ReadsBigEndianIdxAndRejectsTruncatedFiles) {
  const std::string path = ::testing::TempDir() + "/singa_test.idx";
  {
    std::ofstream f(path, std::ios::binary);
    const unsigned char bytes[] = {0, 0, 0x0C, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE};
    f.write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  }
  Tensor t = singa::data::read_idx(path);
  ASSERT_EQ(t.dtype(), SINGA_ONNX_INT32);
  ASSERT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(t.data<int32_t>()[0], 258);
  EXPECT_EQ(t.data<int32_t>()[1], -2);
  {
    std::ofstream f(path, std::ios::binary);
    const unsigned char bytes[] = {0, 0, 0x08, 1, 0, 0, 0, 9, 1, 2};
    f.write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  }
  try {
    singa::data::read_idx(path);
    FAIL() << "a truncated file was accepted";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(singa::data::read_idx(path), singa::Error);
}

TEST(DatasetTest, FashionMnistWhenInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::ifstream(dir + "/t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "no Fashion-MNIST in " << dir;
  singa::data::Split s = singa::data::load_mnist(dir, "t10k", 100);
  EXPECT_EQ(s.images.shape(), (Shape{100, 1, 28, 28}));
  EXPECT_EQ(s.size(), 100);
  for (int i = 0; i < 100; ++i) EXPECT_LT(s.labels.data<int64_t>()[i], 10);
}

TEST(CheckpointTest, RoundTripsTensorsAndMetadata) {
  const std::string path = ::testing::TempDir() + "/singa_test.ckpt";
  singa::Checkpoint c;
  c.meta["stage"] = "train";
  c.tensors["w"] = randn({2, 3});
  c.tensors["steps"] = Tensor::from_vector<int64_t>({1}, SINGA_ONNX_INT64, {42});
  singa::save_checkpoint(c, path);
  singa::Checkpoint d = singa::load_checkpoint(path);
  EXPECT_EQ(d.meta["stage"], "train");
  ASSERT_EQ(d.tensors.size(), 2u);
  EXPECT_EQ(d.tensors["w"].data<float>()[4], c.tensors["w"].data<float>()[4]);
  EXPECT_EQ(d.tensors["steps"].data<int64_t>()[0], 42);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "not a checkpoint";
  }
  EXPECT_THROW(singa::load_checkpoint(path), singa::Error);
  std::remove(path.c_str());
}
