// to_onnx: models built with layers, and imported ones after re-training,
// written back as ONNX and run again through prepare() and ONNX Runtime.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/frontend.hpp>
#include <singa/layer.hpp>
#include <singa/loss.hpp>
#include <singa/onnx.hpp>
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <unistd.h>

using singa::Shape;
using singa::Tensor;
using singa::autograd::Variable;
using namespace singa::layer;
namespace fs = std::filesystem;

namespace {

using testing_util::ensure_loaded;
using testing_util::randn;


void expect_close(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol * std::max(1.0f, std::abs(b.data<float>()[i]))) << "element " << i;
}

std::shared_ptr<Sequential> cnn() {
  auto m = std::make_shared<Sequential>();
  m->emplace<Conv2d>(1, 4, 3, 1, 1).emplace<BatchNorm2d>(4).emplace<ReLU>().emplace<MaxPool2d>(2)
      .emplace<Conv2d>(4, 6, 3).emplace<Sigmoid>().emplace<AvgPool2d>(2).emplace<Flatten>()
      .emplace<Dropout>(0.3f, 5).emplace<Linear>(6, 5).emplace<Tanh>().emplace<Linear>(5, 3);
  return m;
}

// Conv -> ReLU -> MaxPool blocks, which Sequential runs as fused
// ConvReluMaxPool ops (domain ai.singa) and to_onnx writes back as three nodes.
std::shared_ptr<Sequential> fused_cnn() {
  auto m = std::make_shared<Sequential>();
  m->emplace<Conv2d>(1, 4, 3).emplace<ReLU>().emplace<MaxPool2d>(2)
      .emplace<Conv2d>(4, 6, 3, 1, 1).emplace<ReLU>().emplace<MaxPool2d>(2)
      .emplace<Flatten>().emplace<Linear>(6, 3);
  return m;
}

// Runs the model eval-mode on `x`, exports the trace.
::onnx::ModelProto export_eval(Layer& m, const Tensor& x, int64_t opset) {
  m.eval();
  Variable in(x, false, "image");
  Variable out = m(in);
  singa::onnx::ExportOptions o;
  o.opset = opset;
  o.initializer_names = m.parameters();
  for (const auto& b : m.buffers()) o.initializer_names.push_back(b);
  return singa::onnx::to_onnx({in}, {out}, o);
}

class FrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_loaded();
    manual_seed(9);
  }
};

}  // namespace

TEST_F(FrontendTest, LayerModelRoundTripsWithADynamicBatch) {
  auto m = cnn();
  // A few training steps so that BatchNorm's running statistics are not trivial.
  singa::optim::SGD opt(m->parameters(), 0.01, 0.9);
  Tensor labels = Tensor::from_vector<int64_t>({4}, SINGA_ONNX_INT64, {0, 1, 2, 1});
  for (int i = 0; i < 3; ++i) {
    singa::autograd::backward(singa::loss::softmax_cross_entropy((*m)(Variable(randn({4, 1, 8, 8}, 40 + i))), Variable(labels)));
    opt.step();
    opt.zero_grad();
  }
  for (int64_t opset : {13, 15, 17}) {
    SCOPED_TRACE(opset);
    ::onnx::ModelProto model = export_eval(*m, randn({2, 1, 8, 8}), opset);
    EXPECT_EQ(model.opset_import(0).version(), opset);
    EXPECT_EQ(model.graph().input(0).name(), "image");
    EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
    for (const auto& n : model.graph().node()) {
      EXPECT_NE(n.op_type(), "Dropout") << "eval mode records no Dropout";
      for (const auto& a : n.attribute()) EXPECT_NE(a.name(), "training_mode");
    }
    ASSERT_EQ(model.graph().initializer_size(), 12);  // 4 Linear/Conv x 2 + BN x 4
    EXPECT_EQ(model.graph().initializer(0).name(), "0.weight");
    EXPECT_EQ(model.graph().initializer(5).name(), "1.running_var");
    Tensor x5 = randn({5, 1, 8, 8}, 77);  // another batch size than the trace's
    singa::autograd::NoGradGuard ng;
    Tensor eager = (*m)(Variable(x5)).data();
    for (bool optimize : {false, true}) {
      SCOPED_TRACE(optimize ? "optimized" : "as written");
      singa::onnx::PrepareOptions po;
      po.optimize = optimize;
      auto rep = singa::onnx::prepare(model, po);
      expect_close(rep->run(std::vector<Tensor>{x5})[0].second, eager, 1e-5);
    }
  }
}

TEST_F(FrontendTest, FusedConvBlocksTrainLikeTheirOpsAndExportAsThem) {
  auto m = fused_cnn();
  Tensor x = randn({4, 1, 8, 8}, 21);
  Tensor labels = Tensor::from_vector<int64_t>({4}, SINGA_ONNX_INT64, {0, 1, 2, 1});
  // Sequential (fused) against the same layers called one by one (each op on its own).
  auto loss_of = [&](bool fused) {
    Variable h(x, false);
    if (fused) {
      h = (*m)(h);
    } else {
      for (const auto& l : m->layers()) h = (*l)(h);
    }
    return singa::loss::softmax_cross_entropy(h, Variable(labels));
  };
  std::vector<Tensor> grads[2];
  for (bool fused : {true, false}) {
    for (auto& p : m->parameters()) p.second.zero_grad();
    singa::autograd::backward(loss_of(fused));
    for (auto& p : m->parameters()) grads[fused].push_back(p.second.grad().clone());
  }
  ASSERT_EQ(grads[0].size(), 6u);
  for (size_t i = 0; i < grads[0].size(); ++i) {
    SCOPED_TRACE("parameter " + m->parameters()[i].first);
    expect_close(grads[1][i], grads[0][i], 1e-5);
  }
  ::onnx::ModelProto model = export_eval(*m, x, 17);
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node()) {
    EXPECT_EQ(n.domain(), "");
    ops.push_back(n.op_type());
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm"}));
  // The names say the blocks were traced as fused ops (SINGA_FUSE_LAYERS=0 would not).
  if (!std::getenv("SINGA_FUSE_LAYERS")) {
    EXPECT_EQ(model.graph().node(0).name().rfind("ConvReluMaxPool_", 0), 0u) << model.graph().node(0).name();
  }
  // Imported back for training, the same three nodes run fused again and
  // give the same gradients.
  singa::onnx::PrepareOptions as_written;
  as_written.optimize = false;
  ImportedModel imported(singa::onnx::prepare(model, as_written));
  Variable in(x, false, "image");
  Variable logits = imported(in);
  singa::autograd::backward(singa::loss::softmax_cross_entropy(logits, Variable(labels)));
  const auto params = imported.parameters();
  ASSERT_EQ(params.size(), 6u);
  for (size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE("imported parameter " + params[i].first);
    expect_close(params[i].second.grad(), grads[0][i], 1e-5);
  }
  ::onnx::ModelProto again = singa::onnx::to_onnx({in}, {logits});
  if (!std::getenv("SINGA_FUSE_LAYERS")) {
    EXPECT_EQ(again.graph().node(0).name().rfind("ConvReluMaxPool_", 0), 0u) << again.graph().node(0).name();
  }
  Tensor x5 = randn({5, 1, 8, 8}, 22);
  singa::autograd::NoGradGuard ng;
  Tensor eager = (*m)(Variable(x5)).data();
  auto rep = singa::onnx::prepare(model);
  expect_close(rep->run(std::vector<Tensor>{x5})[0].second, eager, 1e-5);
  expect_close(imported(Variable(x5)).data(), eager, 1e-5);
}

TEST_F(FrontendTest, LstmClassifierExportsWithAFreeBatch) {
  Sequential m;
  m.emplace<LSTM>(3, 5, 2, true, false).emplace<Linear>(5, 4);
  ::onnx::ModelProto model = export_eval(m, randn({2, 6, 3}), 17);
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  std::set<std::string> names;
  for (const auto& i : model.graph().initializer()) names.insert(i.name());
  for (const auto& [n, v] : m.parameters()) EXPECT_TRUE(names.count(n)) << n << " is not an initializer";
  Tensor x = randn({4, 6, 3}, 8);
  singa::autograd::NoGradGuard ng;
  Tensor eager = m(Variable(x)).data();
  auto rep = singa::onnx::prepare(model);
  expect_close(rep->run(std::vector<Tensor>{x})[0].second, eager, 1e-5);
}

TEST_F(FrontendTest, TrainingModeTraceIsWrittenInInferenceForm) {
  auto m = cnn();
  m->train();
  Variable in(randn({2, 1, 8, 8}), false, "x");
  Variable out = (*m)(in);
  ::onnx::ModelProto model = singa::onnx::to_onnx({in}, {out}, 17);
  for (const auto& n : model.graph().node()) {
    if (n.op_type() == "BatchNormalization") {
      EXPECT_EQ(n.output_size(), 1);
    }
    if (n.op_type() == "Dropout") {
      EXPECT_EQ(n.input_size(), 2);
      EXPECT_EQ(n.output_size(), 1);
    }
    if (n.op_type() == "MaxPool") {
      EXPECT_EQ(n.output_size(), 1);
    }
  }
  EXPECT_NO_THROW(singa::onnx::prepare(model));
}

TEST_F(FrontendTest, ImportedAndRetrainedModelExportsWithItsInitializerNames) {
  testing_util::ModelBuilder mb(13);
  mb.input("x", SINGA_ONNX_FLOAT, {-1, 4}, {"N"}).output("y", SINGA_ONNX_FLOAT, {-1, 5}, {"N", ""});
  mb.initializer("W1", randn({4, 5}, 11)).initializer("b1", randn({5}, 12));
  mb.node("Gemm", {"x", "W1", "b1"}, {"h"}).node("Relu", {"h"}, {"y"});
  singa::onnx::PrepareOptions po;
  po.optimize = false;
  auto rep = singa::onnx::prepare(mb.model, po);
  auto imported = std::make_shared<ImportedModel>(rep);
  Sequential m;
  m.add(imported).emplace<Linear>(5, 2);
  singa::optim::SGD opt(m.parameters(), 0.1);
  Tensor x = randn({8, 4}, 3);
  Tensor labels = Tensor::from_vector<int64_t>({8}, SINGA_ONNX_INT64, {0, 1, 0, 1, 1, 0, 0, 1});
  singa::autograd::backward(singa::loss::softmax_cross_entropy(m(Variable(x)), Variable(labels)));
  opt.step();

  Variable in(x, false, "x");
  Variable out = m(in);
  ::onnx::ModelProto model = singa::onnx::to_onnx({in}, {out}, 17);
  std::vector<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.push_back(t.name());
  EXPECT_EQ(inits[0], "W1");
  EXPECT_EQ(inits[1], "b1");
  auto back = singa::onnx::prepare(model, po);
  expect_close(back->run(std::vector<Tensor>{x})[0].second, out.data(), 1e-6);
}

TEST_F(FrontendTest, ClearErrors) {
  Variable in(randn({2, 3}), false, "x");
  Variable out = singa::autograd::relu(in);
  EXPECT_THROW(singa::onnx::to_onnx({in}, {out}, 12), singa::Error);
  EXPECT_THROW(singa::onnx::to_onnx({in}, {}, 17), singa::Error);
  // An op of another domain cannot be written.
  Variable g = singa::autograd::apply("ReluGrad", {out, out}, {}, 1, "ai.singa.grad")[0];
  try {
    singa::onnx::to_onnx({in}, {g}, 17);
    FAIL() << "an ai.singa.grad op was exported";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ReluGrad"), std::string::npos) << e.what();
  }
}

TEST_F(FrontendTest, ExportedModelMatchesOnnxRuntime) {
  const std::string ort = std::string(SINGA_TEST_SOURCE_ROOT) + "/bench/node_modules/onnxruntime-node";
  if (std::system("node --version > /dev/null 2>&1") != 0 || !fs::exists(ort + "/package.json"))
    GTEST_SKIP() << "node or onnxruntime-node is not installed";
  for (auto m : {cnn(), fused_cnn()}) {
    Tensor x = randn({3, 1, 8, 8}, 5);
    ::onnx::ModelProto model = export_eval(*m, x, 17);
    fs::path dir = fs::temp_directory_path() / ("singa_frontend_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    singa::onnx::save_model(model, (dir / "model.onnx").string());
    {
      std::ofstream f(dir / "x.bin", std::ios::binary);
      f.write(static_cast<const char*>(x.raw_data()), std::streamsize(x.nbytes()));
    }
    std::string cmd = "node " + std::string(SINGA_TEST_SOURCE_ROOT) + "/tests/ort_run.js " + ort + " " +
                      (dir / "model.onnx").string() + " " + (dir / "x.bin").string() + " '[3,1,8,8]' " +
                      (dir / "y.bin").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    Tensor ours;
    {
      singa::autograd::NoGradGuard ng;
      ours = (*m)(Variable(x)).data();
    }
    Tensor theirs(ours.shape(), SINGA_ONNX_FLOAT);
    std::ifstream f(dir / "y.bin", std::ios::binary);
    f.read(static_cast<char*>(theirs.raw_data()), std::streamsize(theirs.nbytes()));
    ASSERT_EQ(f.gcount(), std::streamsize(theirs.nbytes()));
    expect_close(ours, theirs, 1e-5);
    fs::remove_all(dir);
  }
}
