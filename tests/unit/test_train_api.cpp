// The training API around imported models: parameters kept apart from
// buffers, several inputs and outputs, freezing by name pattern, to(dtype),
// cutting by node name. Expected values are computed here by hand (batch
// statistics, softmax cross-entropy) or by central differences.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/checkpoint.hpp>
#include <singa/frontend.hpp>
#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/onnx.hpp>
#include <singa/optim.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

using singa::Shape;
using singa::Tensor;
using singa::autograd::Variable;
using namespace singa::layer;
using testing_util::ModelBuilder;
using testing_util::randn;

namespace {

class TrainApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_util::ensure_loaded();
    manual_seed(5);
  }
};

std::shared_ptr<singa::onnx::Rep> prepare(const ModelBuilder& b) {
  singa::onnx::PrepareOptions o;
  o.optimize = false;
  return singa::onnx::prepare(b.model, o, "test_train_api");
}

Tensor floats(const Shape& s, std::vector<float> v) { return Tensor::from_vector<float>(s, SINGA_ONNX_FLOAT, v); }

std::vector<std::string> names_of(const NamedVariables& vars) {
  std::vector<std::string> n;
  for (const auto& kv : vars) n.push_back(kv.first);
  return n;
}

// X [N, 2, 3] -> Conv 1x1 (W, cb) -> BatchNormalization (scale, bn_b, mean, var; momentum 0.8)
// -> Clip(lo, hi) -> Y. lo and hi are float initializers no gradient crosses.
ModelBuilder conv_bn_model() {
  ModelBuilder b(15);
  b.input("X", SINGA_ONNX_FLOAT, {-1, 2, 3}).output("Y", SINGA_ONNX_FLOAT, {-1, 2, 3});
  b.initializer("W", randn({2, 2, 1}, 3)).initializer("cb", floats({2}, {0.1f, -0.2f}));
  b.initializer("scale", floats({2}, {1.5f, 0.5f})).initializer("bn_b", floats({2}, {0.0f, 1.0f}));
  b.initializer("mean", floats({2}, {0.2f, -0.1f})).initializer("var", floats({2}, {1.0f, 2.0f}));
  b.initializer("lo", floats({}, {-3.0f})).initializer("hi", floats({}, {3.0f}));
  b.node("Conv", {"X", "W", "cb"}, {"c"}, "conv");
  b.node("BatchNormalization", {"c", "scale", "bn_b", "mean", "var"}, {"n"}, "bn");
  auto* m = b.last()->add_attribute();
  m->set_name("momentum");
  m->set_type(::onnx::AttributeProto::FLOAT);
  m->set_f(0.8f);
  b.node("Clip", {"n", "lo", "hi"}, {"Y"}, "clip");
  return b;
}

}  // namespace

TEST_F(TrainApiTest, RunningStatisticsAreBuffersNotParameters) {
  ImportedModel m(prepare(conv_bn_model()));
  EXPECT_EQ(names_of(m.parameters()), (std::vector<std::string>{"W", "cb", "scale", "bn_b"}));
  EXPECT_EQ(names_of(m.buffers()), (std::vector<std::string>{"mean", "var"}));
  for (const auto& [n, v] : m.buffers()) EXPECT_FALSE(v.requires_grad()) << n;
  for (const auto& [n, v] : m.parameters()) EXPECT_TRUE(v.requires_grad()) << n;
  m.set_trainable(false);
  for (const auto& [n, v] : m.buffers()) EXPECT_FALSE(v.requires_grad()) << n;
}

TEST_F(TrainApiTest, TrainingUpdatesRunningStatisticsWithTheNodesMomentum) {
  ImportedModel m(prepare(conv_bn_model()));
  Tensor x = randn({4, 2, 3}, 7);
  Tensor w = m.parameters()[0].second.data().clone(), cb = m.parameters()[1].second.data().clone();
  // The conv output, its per-channel batch mean and population variance, by hand.
  double mean[2] = {0, 0}, sq[2] = {0, 0};
  const int count = 4 * 3;
  for (int n = 0; n < 4; ++n)
    for (int c = 0; c < 2; ++c)
      for (int t = 0; t < 3; ++t) {
        double v = cb.data<float>()[c];
        for (int k = 0; k < 2; ++k) v += double(w.data<float>()[c * 2 + k]) * x.data<float>()[(n * 2 + k) * 3 + t];
        mean[c] += v / count;
        sq[c] += v * v / count;
      }
  m.train();
  Variable y = m(Variable(x));
  singa::autograd::backward(singa::autograd::reduce_sum(y, {}));
  const double m0[2] = {0.2, -0.1}, v0[2] = {1.0, 2.0};
  const auto bufs = m.buffers();
  for (int c = 0; c < 2; ++c) {
    const double var = sq[c] - mean[c] * mean[c];
    EXPECT_NEAR(bufs[0].second.data().data<float>()[c], 0.8 * m0[c] + 0.2 * mean[c], 1e-5) << c;
    EXPECT_NEAR(bufs[1].second.data().data<float>()[c], 0.8 * v0[c] + 0.2 * var, 1e-5) << c;
  }
  for (const auto& [n, v] : m.parameters()) EXPECT_TRUE(v.grad().defined()) << n;
  for (const auto& [n, v] : m.buffers()) EXPECT_FALSE(v.grad().defined()) << n;

  // Evaluation reads the statistics and leaves them alone.
  Tensor before = bufs[0].second.data().clone();
  m.eval();
  Tensor ye = m(Variable(x)).data();
  EXPECT_EQ(bufs[0].second.data().data<float>()[0], before.data<float>()[0]);
  // y = scale * (c - mean) / sqrt(var + eps) + b, clipped, for one element by hand.
  double c00 = cb.data<float>()[0];
  for (int k = 0; k < 2; ++k) c00 += double(w.data<float>()[k]) * x.data<float>()[k * 3];
  const double rm = bufs[0].second.data().data<float>()[0], rv = bufs[1].second.data().data<float>()[0];
  const double want = std::max(-3.0, std::min(3.0, 1.5 * (c00 - rm) / std::sqrt(rv + 1e-5)));
  EXPECT_NEAR(ye.data<float>()[0], want, 1e-4);

  // Export writes the updated statistics under their names; the file runs as the eager model does.
  Variable xin(x, false, "X");
  Variable yout = m(xin);
  singa::onnx::ExportOptions o;
  o.initializer_names = m.parameters();
  for (const auto& b : m.buffers()) o.initializer_names.push_back(b);
  ::onnx::ModelProto out = singa::onnx::to_onnx({xin}, {yout}, o);
  bool found = false;
  for (const auto& init : out.graph().initializer())
    if (init.name() == "mean") {
      found = true;
      EXPECT_EQ(singa::onnx::from_proto(init).data<float>()[1], bufs[0].second.data().data<float>()[1]);
    }
  EXPECT_TRUE(found);
  Tensor ran = singa::onnx::prepare(out)->run(std::vector<Tensor>{x})[0].second;
  for (int64_t i = 0; i < ran.numel(); ++i) EXPECT_NEAR(ran.data<float>()[i], ye.data<float>()[i], 1e-5);

  // A checkpoint round trip keeps the buffers.
  singa::Checkpoint ck;
  for (const auto& [n, v] : m.buffers()) ck.tensors["buffer/" + n] = v.data();
  const std::string path = ::testing::TempDir() + "train_api_bn.ckpt";
  singa::save_checkpoint(ck, path);
  EXPECT_EQ(singa::load_checkpoint(path).tensors.at("buffer/var").data<float>()[1], bufs[1].second.data().data<float>()[1]);
  std::remove(path.c_str());
}

TEST_F(TrainApiTest, LayerBatchNormKeepsItsStatisticsAsBuffers) {
  BatchNorm2d bn(3);
  EXPECT_EQ(names_of(bn.parameters()), (std::vector<std::string>{"scale", "bias"}));
  EXPECT_EQ(names_of(bn.buffers()), (std::vector<std::string>{"running_mean", "running_var"}));
  for (const auto& [n, v] : bn.buffers()) EXPECT_FALSE(v.requires_grad()) << n;
}

TEST_F(TrainApiTest, CutModelsListOnlyTheStateTheyRun) {
  auto rep = prepare(conv_bn_model());
  ImportedModel by_count(rep, -2);  // conv only
  EXPECT_EQ(names_of(by_count.parameters()), (std::vector<std::string>{"W", "cb"}));
  EXPECT_TRUE(by_count.buffers().empty());
  ImportedModel by_name(rep, std::string("bn"));  // conv and bn
  EXPECT_EQ(by_name.last_layers(), -1);
  EXPECT_EQ(names_of(by_name.buffers()), (std::vector<std::string>{"mean", "var"}));
  Tensor x = randn({2, 2, 3}, 9);
  singa::onnx::RunOptions ro;
  ro.last_node = "bn";
  Tensor ref = rep->run(std::vector<Tensor>{x}, ro)[0].second;
  by_name.eval();
  Tensor got = by_name(Variable(x)).data();
  ASSERT_EQ(got.shape(), ref.shape());
  for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_NEAR(got.data<float>()[i], ref.data<float>()[i], 1e-5);
  EXPECT_THROW(ImportedModel(rep, std::string("nope")), singa::Error);
}

TEST_F(TrainApiTest, FreezingByNamePattern) {
  Sequential m;
  m.add(std::make_shared<ImportedModel>(prepare(conv_bn_model())));
  m.emplace<Flatten>().emplace<Linear>(6, 2);
  EXPECT_EQ(m.set_trainable("0.*", false), 4);
  for (const auto& [n, v] : m.parameters()) EXPECT_EQ(v.requires_grad(), n[0] != '0') << n;
  EXPECT_EQ(m.set_trainable("*bias", true), 1);  // 2.bias (already trainable)
  EXPECT_EQ(m.set_trainable("0.[sW]*", true), 2);
  EXPECT_TRUE(m.parameters()[0].second.requires_grad());
  try {
    m.set_trainable("layer4.*", true);
    FAIL() << "no error for a pattern that matches nothing";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer4.*"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0.W"), std::string::npos) << e.what();
  }
  auto imported = std::make_shared<ImportedModel>(prepare(conv_bn_model()));
  EXPECT_EQ(imported->set_trainable("bn_*", false), 1);
}

namespace {

// A BERT-shaped model: token ids [N, T] and an attention mask [N, T] in; the
// masked token embeddings ("sequence", [N, T, H]) and a pooled summary
// ("pooled", tanh(sum_t(masked) W), [N, H]) out.
ModelBuilder two_in_two_out(int64_t vocab, int64_t hidden) {
  ModelBuilder b(13);
  b.input("input_ids", SINGA_ONNX_INT64, {-1, -1}, {"N", "T"}).input("mask", SINGA_ONNX_FLOAT, {-1, -1}, {"N", "T"});
  b.output("sequence", SINGA_ONNX_FLOAT, {-1, -1, hidden}, {"N", "T"}).output("pooled", SINGA_ONNX_FLOAT, {-1, hidden});
  b.initializer("embeddings", randn({vocab, hidden}, 11)).initializer("pool_w", randn({hidden, hidden}, 12));
  b.initializer("axis2", singa::autograd::int64s({2})).initializer("axis1", singa::autograd::int64s({1}));
  b.node("Gather", {"embeddings", "input_ids"}, {"emb"});
  b.node("Unsqueeze", {"mask", "axis2"}, {"mask3"});
  b.node("Mul", {"emb", "mask3"}, {"sequence"});
  b.node("ReduceSum", {"sequence", "axis1"}, {"summed"});
  b.last()->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("keepdims");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  b.node("MatMul", {"summed", "pool_w"}, {"pre"});
  b.node("Tanh", {"pre"}, {"pooled"});
  return b;
}

}  // namespace

TEST_F(TrainApiTest, TwoInputsTwoOutputsTrainWithALossOverOne) {
  const int64_t N = 8, T = 5, V = 12, H = 6;
  auto imported = std::make_shared<ImportedModel>(prepare(two_in_two_out(V, H)));
  Tensor ids({N, T}, SINGA_ONNX_INT64), mask({N, T}, SINGA_ONNX_FLOAT), labels({N}, SINGA_ONNX_INT64);
  std::mt19937 rng(4);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = 2 + n % 4;
    for (int64_t t = 0; t < T; ++t) {
      ids.data<int64_t>()[n * T + t] = int64_t(rng() % V);
      mask.data<float>()[n * T + t] = t < len ? 1.0f : 0.0f;
    }
    labels.data<int64_t>()[n] = ids.data<int64_t>()[n * T] % 2;  // the first token's parity
  }
  auto outs = (*imported)({Variable(ids), Variable(mask)});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].shape(), (Shape{N, T, H}));
  EXPECT_EQ(outs[1].shape(), (Shape{N, H}));
  // Masked positions of the sequence output are zero.
  EXPECT_EQ(outs[0].data().data<float>()[(0 * T + 4) * H], 0.0f);

  Sequential net;
  net.add(imported).emplace<Select>(1).emplace<Linear>(H, 2);
  EXPECT_THROW(net(Variable(ids)), singa::Error);  // two inputs needed
  singa::optim::Adam opt(net.parameters(), 0.05);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto y = net({Variable(ids), Variable(mask)});
    ASSERT_EQ(y.size(), 1u);
    Variable l = singa::loss::softmax_cross_entropy(y[0], Variable(labels));
    singa::autograd::backward(l);
    ASSERT_TRUE(imported->parameters()[0].second.grad().defined());
    opt.step();
    opt.zero_grad();
    (step == 0 ? first : last) = *l.data().data<float>();
  }
  EXPECT_LT(last, first * 0.3) << first << " -> " << last;

  // Both outputs in one loss: the weighted sum gives each its share of the gradient.
  auto both = imported->forward_all({Variable(ids), Variable(mask)});
  Variable zero(Tensor::zeros(both[0].shape(), SINGA_ONNX_FLOAT));
  Variable a = singa::loss::mse(both[0], zero), b = singa::loss::mse(both[1], Variable(Tensor::zeros({N, H}, SINGA_ONNX_FLOAT)));
  Variable total = singa::loss::weighted_sum({a, b}, {2.0, 0.5});
  EXPECT_NEAR(*total.data().data<float>(), 2.0 * *a.data().data<float>() + 0.5 * *b.data().data<float>(), 1e-5);
  EXPECT_THROW(singa::loss::weighted_sum({a, b}, {1.0}), singa::Error);
}

TEST_F(TrainApiTest, CrossEntropyOverPositions) {
  // logits [N=2, C=3, T=2] against labels [N, T]: the mean of the four -log softmax, by hand.
  Tensor logits = randn({2, 3, 2}, 13);
  Tensor labels = Tensor::from_vector<int64_t>({2, 2}, SINGA_ONNX_INT64, {0, 2, 1, 1});
  double want = 0;
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 2; ++t) {
      double z = 0;
      for (int c = 0; c < 3; ++c) z += std::exp(double(logits.data<float>()[(n * 3 + c) * 2 + t]));
      const int64_t k = labels.data<int64_t>()[n * 2 + t];
      want += (std::log(z) - logits.data<float>()[(n * 3 + k) * 2 + t]) / 4;
    }
  Variable l = singa::loss::softmax_cross_entropy(Variable(logits), Variable(labels));
  EXPECT_NEAR(*l.data().data<float>(), want, 1e-5);
  EXPECT_THROW(singa::loss::softmax_cross_entropy(Variable(logits), Variable(Tensor::zeros({2, 3}, SINGA_ONNX_INT64))),
               singa::Error);
}

TEST_F(TrainApiTest, ToDoubleRunsTheImportedGraphInFloat64) {
  auto rep = prepare(conv_bn_model());
  ImportedModel m(rep);
  m.eval();
  Tensor x = randn({3, 2, 3}, 17);
  Tensor y32 = m(Variable(x)).data();
  m.to(SINGA_ONNX_DOUBLE);
  for (const auto& [n, v] : m.parameters()) EXPECT_EQ(v.dtype(), SINGA_ONNX_DOUBLE) << n;
  for (const auto& [n, v] : m.buffers()) EXPECT_EQ(v.dtype(), SINGA_ONNX_DOUBLE) << n;
  Tensor xd(x.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = x.data<float>()[i];
  Variable y = m(Variable(xd));
  ASSERT_EQ(y.dtype(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < y32.numel(); ++i) EXPECT_NEAR(y.data().data<double>()[i], y32.data<float>()[i], 1e-5);

  // In float64, backward agrees with central differences to ~1e-8 (float32 would not).
  Variable w = m.parameters()[0].second;
  singa::autograd::backward(singa::autograd::reduce_sum(singa::autograd::mul(y, y), {}));
  Tensor g = w.grad().clone();
  auto objective = [&] {
    singa::autograd::NoGradGuard ng;
    Tensor out = m(Variable(xd)).data();
    double s = 0;
    for (int64_t i = 0; i < out.numel(); ++i) s += out.data<double>()[i] * out.data<double>()[i];
    return s;
  };
  const double h = 1e-6;
  for (int64_t i = 0; i < w.data().numel(); ++i) {
    double* p = w.data().data<double>();
    const double keep = p[i];
    p[i] = keep + h;
    const double up = objective();
    p[i] = keep - h;
    const double down = objective();
    p[i] = keep;
    EXPECT_NEAR(g.data<double>()[i], (up - down) / (2 * h), 1e-6 * std::max(1.0, std::abs(g.data<double>()[i]))) << i;
  }
  m.to(SINGA_ONNX_FLOAT);
  EXPECT_EQ(m(Variable(x)).dtype(), SINGA_ONNX_FLOAT);
  EXPECT_THROW(m.to(SINGA_ONNX_INT32), singa::Error);
}

TEST_F(TrainApiTest, ToDoubleConvertsLayers) {
  Sequential net;
  net.emplace<Linear>(4, 3).emplace<BatchNorm2d>(3).emplace<ReLU>().emplace<Linear>(3, 2);
  Tensor x = randn({5, 4}, 19);
  net.eval();
  Tensor y32 = net(Variable(x)).data();
  net.to(SINGA_ONNX_DOUBLE);
  for (const auto& [n, v] : net.parameters()) EXPECT_EQ(v.dtype(), SINGA_ONNX_DOUBLE) << n;
  for (const auto& [n, v] : net.buffers()) EXPECT_EQ(v.dtype(), SINGA_ONNX_DOUBLE) << n;
  Tensor xd(x.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = x.data<float>()[i];
  Tensor y = net(Variable(xd)).data();
  ASSERT_EQ(y.dtype(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data<double>()[i], y32.data<float>()[i], 1e-5);
}

#include <singa/dataset.hpp>

TEST_F(TrainApiTest, ResizeImagesIsBilinearAtPixelCentres) {
  // torch.nn.functional.interpolate(x, size=4, mode="bilinear", align_corners=False)
  // of [[0, 1], [2, 3]], one channel repeated three times.
  Tensor x = floats({1, 1, 2, 2}, {0, 1, 2, 3});
  Tensor y = singa::data::resize_images(x, 3, 4, 4);
  ASSERT_EQ(y.shape(), (Shape{1, 3, 4, 4}));
  const float want[16] = {0, 0.25f, 0.75f, 1, 0.5f, 0.75f, 1.25f, 1.5f, 1.5f, 1.75f, 2.25f, 2.5f, 2, 2.25f, 2.75f, 3};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(y.data<float>()[c * 16 + i], want[i], 1e-6) << c << "," << i;
  EXPECT_THROW(singa::data::resize_images(floats({1, 2, 2, 1}, {0, 1, 2, 3}), 3, 4, 4), singa::Error);
}
