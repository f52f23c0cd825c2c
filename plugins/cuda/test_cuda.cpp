// The CUDA plugin: it must load everywhere (also without a GPU or driver,
// where the device reports why it is unavailable); on a GPU its device API
// and its kernels must agree with the CPU device on small models.
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <fstream>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using singa::Tensor;

const singa::PluginInfo* cuda_record() {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  for (const auto& p : rt.plugins()) {
    const std::string& path = p.path;
    if (path.size() >= 13 && path.compare(path.size() - 13, 13, "singa_cuda.so") == 0) return &p;
  }
  return nullptr;
}

// ------------------------------------------------------------ model building

struct Model {
  ::onnx::ModelProto proto;
  std::mt19937 rng{1234};

  explicit Model(int64_t opset) {
    proto.set_ir_version(8);
    auto* op = proto.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g()->set_name("cuda_test");
  }
  ::onnx::GraphProto* g() { return proto.mutable_graph(); }
  void value(::onnx::ValueInfoProto* vi, const std::string& name, int32_t dtype, const std::vector<int64_t>& dims) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(dtype);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  Model& input(const std::string& name, const std::vector<int64_t>& dims, int32_t dtype = SINGA_ONNX_FLOAT) {
    value(g()->add_input(), name, dtype, dims);
    return *this;
  }
  Model& output(const std::string& name, const std::vector<int64_t>& dims, int32_t dtype = SINGA_ONNX_FLOAT) {
    value(g()->add_output(), name, dtype, dims);
    return *this;
  }
  // An output whose shape the graph infers (ONNX's checker wants output
  // shapes, so models with these run with check = false).
  Model& out(const std::string& name, int32_t dtype = SINGA_ONNX_FLOAT) {
    auto* vi = g()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
    return *this;
  }
  Model& import(const std::string& domain, int64_t version) {
    auto* op = proto.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
    return *this;
  }
  Model& init(const std::string& name, const Tensor& t) {
    *g()->add_initializer() = singa::onnx::to_proto(t, name);
    return *this;
  }
  Model& random_init(const std::string& name, const std::vector<int64_t>& dims, float lo = -1.f, float hi = 1.f) {
    return init(name, random_tensor(dims, lo, hi));
  }
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
    auto* n = g()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g()->node_size()));
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  Tensor random_tensor(const std::vector<int64_t>& dims, float lo = -1.f, float hi = 1.f) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(size_t(singa::shape_numel(dims)));
    for (float& x : v) x = u(rng);
    return Tensor::from_vector(dims, SINGA_ONNX_FLOAT, v);
  }
};

void attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr(::onnx::NodeProto* n, const std::string& name, const char* v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// ------------------------------------------------------------ comparison

// check = false skips ONNX's checker (ops of the ai.singa.grad domain).
singa::onnx::NamedTensors run_on(const Model& m, const std::string& device, const std::vector<Tensor>& inputs,
                                 bool check = true) {
  singa::onnx::PrepareOptions opt;
  opt.device = device;
  opt.fallback = false;  // every node must have a kernel on `device`
  opt.check_model = check;
  auto rep = singa::onnx::prepare(m.proto, opt, "cuda_test");
  for (const auto& p : rep->placement())
    EXPECT_EQ(p.device.substr(0, device.size()), device) << p.node << " (" << p.op_type << ") runs on " << p.device;
  return rep->run(inputs);
}

void expect_close(const singa::onnx::NamedTensors& got, const singa::onnx::NamedTensors& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + got[i].first);
    Tensor g = got[i].second.to_host(), w = want[i].second.to_host();
    ASSERT_EQ(g.shape(), w.shape());
    ASSERT_EQ(g.dtype(), w.dtype());
    for (int64_t k = 0; k < g.numel(); ++k) {
      double a, b;
      switch (g.dtype()) {
        case SINGA_ONNX_FLOAT: a = g.data<float>()[k]; b = w.data<float>()[k]; break;
        case SINGA_ONNX_DOUBLE: a = g.data<double>()[k]; b = w.data<double>()[k]; break;
        case SINGA_ONNX_INT64: a = double(g.data<int64_t>()[k]); b = double(w.data<int64_t>()[k]); break;
        case SINGA_ONNX_INT32: a = g.data<int32_t>()[k]; b = w.data<int32_t>()[k]; break;
        case SINGA_ONNX_BOOL: a = g.data<uint8_t>()[k]; b = w.data<uint8_t>()[k]; break;
        default: FAIL() << "unexpected dtype " << g.dtype();
      }
      ASSERT_NEAR(a, b, tol * (1 + std::fabs(b))) << "element " << k;
    }
  }
}

void expect_same_as_cpu(const Model& m, const std::vector<Tensor>& inputs, double tol = 1e-4, bool check = true) {
  auto want = run_on(m, "cpu", inputs, check);
  auto got = run_on(m, "cuda", inputs, check);
  expect_close(got, want, tol);
}

// ------------------------------------------------------------ tests

TEST(CudaPlugin, LoadsAndRegistersWithoutNeedingAGpu) {
  const singa::PluginInfo* rec = cuda_record();
  ASSERT_NE(rec, nullptr) << "singa_cuda.so was not found by the plugin loader";
  ASSERT_TRUE(rec->loaded) << rec->error;
  auto& rt = singa::Runtime::instance();
  singa::Device* dev = rt.device("cuda");
  ASSERT_NE(dev, nullptr);
  const std::string* forced = rt.option("cuda.kernels");
  std::string why;
  if (!(forced && *forced == "1") && dev->count(&why) <= 0)
    GTEST_SKIP() << "no GPU, so the kernels are not loaded (option cuda.kernels=1 loads them, as the 'cuda' test does)";
  EXPECT_EQ(dev->dl_device_type(), kDLCUDA);
  EXPECT_EQ(dev->score(), 100);
  for (const char* op :
       {"Conv", "MatMul", "Gemm", "Add", "Relu", "MaxPool", "BatchNormalization", "Softmax", "Reshape", "Abs", "Neg", "Exp",
        "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "LeakyRelu", "Elu", "Selu", "Celu",
        "HardSigmoid", "HardSwish", "ThresholdedRelu", "Clip", "Identity", "Cast", "CastLike", "Not", "Pow", "Max", "Min",
        "Sum", "Mean", "PRelu", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where",
        "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
        "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "LogSoftmax", "Transpose", "Concat", "Split", "Slice",
        "Gather", "Squeeze", "Unsqueeze", "Expand", "Tile", "Pad", "Shape", "Size", "ConstantOfShape", "LRN",
        "ConvTranspose", "Dropout"}) {
    bool on_cuda = false;
    for (const auto* k : rt.kernels("", op)) on_cuda = on_cuda || k->device == "cuda";
    EXPECT_TRUE(on_cuda) << op << " has no cuda kernel";
  }
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad", "LeakyReluGrad", "EluGrad", "SoftplusGrad", "SoftmaxGrad",
                         "LogSoftmaxGrad", "MaxPoolGrad", "AveragePoolGrad", "ConvGrad", "BatchNormalizationGrad",
                         "SoftmaxCrossEntropyLossGrad"}) {
    bool on_cuda = false;
    for (const auto* k : rt.kernels("ai.singa.grad", op)) on_cuda = on_cuda || k->device == "cuda";
    EXPECT_TRUE(on_cuda) << op << " has no cuda kernel";
  }
  std::string reason;
  const int32_t n = dev->count(&reason);
  if (n <= 0) {
    EXPECT_FALSE(reason.empty()) << "an unavailable device must say why";
    // Choosing the device then fails with that reason instead of crashing.
    Model m(13);
    m.input("x", {2}).output("y", {2});
    m.node("Relu", {"x"}, {"y"});
    try {
      run_on(m, "cuda", {m.random_tensor({2})});
      ADD_FAILURE() << "prepare on an unavailable device succeeded";
    } catch (const singa::Error& e) {
      EXPECT_NE(std::string(e.what()).find("unavailable"), std::string::npos) << e.what();
    }
  }
}

// Without the runtime option cuda.kernels=1, singa_cuda.so maps cuBLAS and
// cuDNN (the kernel library) only where a GPU is present; the `cuda_shim`
// test runs this without the option.
TEST(CudaPlugin, KernelsLoadOnlyWhereAGpuIs) {
  const singa::PluginInfo* rec = cuda_record();
  const std::string* forced = singa::Runtime::instance().option("cuda.kernels");
  if (forced && *forced == "1") GTEST_SKIP() << "option cuda.kernels=1 loads the kernels regardless";
  ASSERT_NE(rec, nullptr);
  ASSERT_TRUE(rec->loaded) << rec->error;
  auto& rt = singa::Runtime::instance();
  singa::Device* dev = rt.device("cuda");
  ASSERT_NE(dev, nullptr) << "the shim registers the device in any case";
  std::string reason;
  const bool gpu = dev->count(&reason) > 0;
  bool conv_on_cuda = false;
  for (const auto* k : rt.kernels("", "Conv")) conv_on_cuda = conv_on_cuda || k->device == "cuda";
  std::ifstream maps("/proc/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  if (gpu) {
    EXPECT_TRUE(conv_on_cuda);
    EXPECT_NE(mapped.find("libsinga_cuda_kernels.so"), std::string::npos);
  } else {
    EXPECT_FALSE(reason.empty()) << "an unavailable device must say why";
    EXPECT_FALSE(conv_on_cuda) << "kernels registered without a GPU";
    EXPECT_EQ(mapped.find("libcublas"), std::string::npos) << "cuBLAS was mapped without a GPU";
    EXPECT_EQ(mapped.find("libcudnn"), std::string::npos) << "cuDNN was mapped without a GPU";
  }
}

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    const singa::PluginInfo* rec = cuda_record();
    ASSERT_TRUE(rec && rec->loaded) << (rec ? rec->error : "singa_cuda.so not found");
    dev_ = singa::Runtime::instance().device("cuda");
    ASSERT_NE(dev_, nullptr);
    std::string reason;
    if (dev_->count(&reason) <= 0) GTEST_SKIP() << "cuda device unavailable: " << reason;
  }
  singa::Device* dev_ = nullptr;
};

TEST_F(Cuda, DeviceMemoryRoundTrip) {
  const size_t n = 1000;
  std::vector<float> host(n), back(n, -1.f);
  for (size_t i = 0; i < n; ++i) host[i] = float(i) * 0.5f;
  void* a = dev_->alloc(0, n * sizeof(float));
  void* b = dev_->alloc(0, n * sizeof(float));
  dev_->copy(0, a, 0, host.data(), 0, n * sizeof(float), SINGA_COPY_HOST_TO_DEVICE);
  dev_->copy(0, b, 0, a, 0, n * sizeof(float), SINGA_COPY_DEVICE_TO_DEVICE);
  dev_->memset(0, b, 0, 0, 10 * sizeof(float));  // zero the first 10
  dev_->copy(0, back.data(), 0, b, 0, n * sizeof(float), SINGA_COPY_DEVICE_TO_HOST);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], i < 10 ? 0.f : host[i]) << i;

  // Offsets apply on both sides.
  dev_->copy(0, back.data(), 4, a, 8, 4, SINGA_COPY_DEVICE_TO_HOST);
  EXPECT_EQ(back[1], host[2]);

  // The pool hands a freed block of the same bucket out again.
  dev_->free(0, b);
  void* c = dev_->alloc(0, n * sizeof(float));
  EXPECT_EQ(c, b);
  dev_->free(0, c);
  dev_->free(0, a);

  // Alignments beyond cudaMalloc's are honoured.
  void* big = dev_->alloc(0, 100, 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 4096, 0u);
  dev_->free(0, big);

  size_t free_b = 0, total_b = 0;
  const auto& def = dev_->def();
  ASSERT_NE(def.memory_info, nullptr);
  ASSERT_EQ(def.memory_info(def.self, 0, &free_b, &total_b), nullptr);
  EXPECT_GT(total_b, 0u);
  EXPECT_LE(free_b, total_b);
}

TEST_F(Cuda, StreamsCopyAndSynchronize) {
  const auto& def = dev_->def();
  ASSERT_NE(def.stream_create, nullptr);
  void* stream = nullptr;
  ASSERT_EQ(def.stream_create(def.self, 0, &stream), nullptr);
  std::vector<int32_t> host(256), back(256, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = int32_t(i * 7);
  void* d = dev_->alloc(0, host.size() * 4);
  dev_->copy(0, d, 0, host.data(), 0, host.size() * 4, SINGA_COPY_HOST_TO_DEVICE, stream);
  dev_->copy(0, back.data(), 0, d, 0, host.size() * 4, SINGA_COPY_DEVICE_TO_HOST, stream);
  dev_->synchronize(0, stream);
  EXPECT_EQ(back, host);
  dev_->free(0, d);
  def.stream_destroy(def.self, 0, stream);
}

TEST_F(Cuda, BadRequestsAreStatusesNotCrashes) {
  // More memory than any GPU has: a clear out-of-memory error.
  try {
    void* p = dev_->alloc(0, size_t(1) << 50);
    dev_->free(0, p);
    ADD_FAILURE() << "a 1 PiB allocation succeeded";
  } catch (const singa::Error& e) {
    EXPECT_EQ(e.code(), SINGA_OUT_OF_MEMORY) << e.what();
  }
  // The device keeps working afterwards.
  void* p = dev_->alloc(0, 64);
  dev_->memset(0, p, 0, 0, 64);
  dev_->free(0, p);
}

// Conv (cuDNN, symmetric pads) -> BatchNorm -> Relu -> MaxPool (cuDNN) ->
// grouped, dilated Conv with asymmetric pads -> AveragePool with ceil_mode
// (own kernel) -> GlobalAveragePool -> Flatten -> Gemm -> Softmax.
Model cnn() {
  Model m(13);
  m.input("x", {2, 3, 9, 9}).output("prob", {2, 3}).output("pooled", {2, 4, 2, 2});
  m.random_init("w1", {4, 3, 3, 3}).random_init("b1", {4});
  m.random_init("scale", {4}, 0.5f, 1.5f).random_init("bias", {4}).random_init("mean", {4}, -0.2f, 0.2f);
  m.random_init("var", {4}, 0.5f, 2.f);
  m.random_init("w2", {4, 2, 3, 3});
  m.random_init("fc", {3, 4}).random_init("fc_b", {3});
  attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(m.node("BatchNormalization", {"c1", "scale", "bias", "mean", "var"}, {"bn"}), "epsilon", 1e-3f);
  m.node("Relu", {"bn"}, {"r1"});
  auto* mp = m.node("MaxPool", {"r1"}, {"p1"});
  attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(mp, "strides", std::vector<int64_t>{2, 2});
  auto* c2 = m.node("Conv", {"p1", "w2"}, {"c2"});
  attr(c2, "group", int64_t(2));
  attr(c2, "dilations", std::vector<int64_t>{2, 2});
  attr(c2, "pads", std::vector<int64_t>{1, 2, 2, 1});
  auto* ap = m.node("AveragePool", {"c2"}, {"pooled"});
  attr(ap, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(ap, "strides", std::vector<int64_t>{2, 2});
  attr(ap, "pads", std::vector<int64_t>{1, 1, 0, 0});
  attr(ap, "ceil_mode", int64_t(1));
  attr(ap, "count_include_pad", int64_t(1));
  m.node("GlobalAveragePool", {"pooled"}, {"gap"});
  m.node("Flatten", {"gap"}, {"flat"});
  attr(m.node("Gemm", {"flat", "fc", "fc_b"}, {"logits"}), "transB", int64_t(1));
  m.node("Softmax", {"logits"}, {"prob"});
  return m;
}

TEST_F(Cuda, SmallCnnMatchesCpu) {
  Model m = cnn();
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 9, 9})});
}

// MatMul with batch broadcasting on both sides and with a vector, the four
// arithmetic ops with broadcasting, Sigmoid, Tanh, Reshape, int64 Add.
TEST_F(Cuda, MatMulAndBroadcastingMatchCpu) {
  Model m(13);
  m.input("a", {2, 1, 3, 4}).input("b", {3, 4, 5}).input("v", {4}).input("i", {2, 3}, SINGA_ONNX_INT64);
  m.output("y", {6, 15}).output("mv", {2, 1, 3}).output("j", {2, 3}, SINGA_ONNX_INT64);
  m.random_init("bias", {5}).random_init("rowscale", {2, 1, 1, 1}, 0.5f, 2.f).random_init("k", {3, 1, 5}, 0.5f, 2.f);
  m.init("two", Tensor::from_vector<float>({1}, SINGA_ONNX_FLOAT, {2.f}));
  m.init("shape", Tensor::from_vector<int64_t>({2}, SINGA_ONNX_INT64, {6, -1}));
  m.init("step", Tensor::from_vector<int64_t>({3}, SINGA_ONNX_INT64, {10, -20, 30}));
  m.node("MatMul", {"a", "b"}, {"ab"});  // [2, 3, 3, 5]
  m.node("Add", {"ab", "bias"}, {"s1"});
  m.node("Sub", {"s1", "rowscale"}, {"s2"});
  m.node("Mul", {"s2", "k"}, {"s3"});
  m.node("Div", {"s3", "two"}, {"s4"});
  m.node("Sigmoid", {"s4"}, {"s5"});
  m.node("Tanh", {"s5"}, {"s6"});
  m.node("Reshape", {"s6", "shape"}, {"y"});
  m.node("MatMul", {"a", "v"}, {"mv"});  // [2, 1, 3]
  m.node("Add", {"i", "step"}, {"j"});
  Tensor i = Tensor::from_vector<int64_t>({2, 3}, SINGA_ONNX_INT64, {1, 2, 3, 4, 5, 6});
  expect_same_as_cpu(m, {m.random_tensor({2, 1, 3, 4}), m.random_tensor({3, 4, 5}), m.random_tensor({4}), i});
}

TEST_F(Cuda, SoftmaxAxesMatchCpu) {
  for (int64_t opset : {11, 13}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {2, 3, 4, 5}).output("last", {2, 3, 4, 5}).output("middle", {2, 3, 4, 5});
    m.node("Softmax", {"x"}, {"last"});
    attr(m.node("Softmax", {"x"}, {"middle"}), "axis", int64_t(1));
    expect_same_as_cpu(m, {m.random_tensor({2, 3, 4, 5}, -5.f, 5.f)});
  }
}

TEST_F(Cuda, PoolingVariantsMatchCpu) {
  Model m(12);
  m.input("x", {2, 3, 7, 8}).output("max", {2, 3, 3, 3}).output("idx", {2, 3, 3, 3}, SINGA_ONNX_INT64);
  m.output("dil", {2, 3, 7, 8}).output("avg", {2, 3, 7, 8}).output("one_d", {2, 3, 18});
  auto* mp = m.node("MaxPool", {"x"}, {"max", "idx"});
  attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(mp, "strides", std::vector<int64_t>{2, 2});
  attr(mp, "storage_order", int64_t(1));
  auto* md = m.node("MaxPool", {"x"}, {"dil"});
  attr(md, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(md, "dilations", std::vector<int64_t>{2, 1});
  attr(md, "pads", std::vector<int64_t>{1, 0, 1, 1});
  auto* av = m.node("AveragePool", {"x"}, {"avg"});
  attr(av, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(av, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Reshape", {"x", "flat_shape"}, {"x1d"});
  m.init("flat_shape", Tensor::from_vector<int64_t>({3}, SINGA_ONNX_INT64, {2, 3, 56}));
  auto* p1 = m.node("AveragePool", {"x1d"}, {"one_d"});
  attr(p1, "kernel_shape", std::vector<int64_t>{4});
  attr(p1, "strides", std::vector<int64_t>{3});
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 7, 8})});
}

TEST_F(Cuda, BatchNormTrainingModeMatchesCpu) {
  Model m(15);
  m.input("x", {4, 3, 5}).output("y", {4, 3, 5}).output("running_mean", {3}).output("running_var", {3});
  m.random_init("scale", {3}).random_init("bias", {3}).random_init("mean", {3}).random_init("var", {3}, 0.5f, 1.5f);
  auto* bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "running_mean", "running_var"});
  attr(bn, "training_mode", int64_t(1));
  attr(bn, "momentum", 0.8f);
  expect_same_as_cpu(m, {m.random_tensor({4, 3, 5})});
}

TEST_F(Cuda, ConcurrentRunsGiveTheSameResults) {
  Model m = cnn();
  singa::onnx::PrepareOptions opt;
  opt.device = "cuda";
  opt.fallback = false;
  auto rep = singa::onnx::prepare(m.proto, opt, "cnn");
  std::vector<Tensor> inputs;
  std::vector<singa::onnx::NamedTensors> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(m.random_tensor({2, 3, 9, 9}));
    expected.push_back(rep->run({inputs.back()}));
  }
  std::vector<singa::onnx::NamedTensors> got(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < 5; ++r) got[size_t(t)] = rep->run({inputs[size_t(t)]});
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    ASSERT_TRUE(errors[size_t(t)].empty()) << errors[size_t(t)];
    expect_close(got[size_t(t)], expected[size_t(t)], 1e-6);
  }
}

TEST_F(Cuda, BadShapesAreReportedWithTheNode) {
  Model m(13);
  m.input("a", {2, 3}).input("b", {4, 5}).output("y", {2, 5});
  m.node("MatMul", {"a", "b"}, {"y"});
  singa::onnx::PrepareOptions opt;
  opt.device = "cuda";
  opt.fallback = false;
  opt.check_model = false;
  try {
    auto rep = singa::onnx::prepare(m.proto, opt, "bad");
    rep->run(std::vector<Tensor>{m.random_tensor({2, 3}), m.random_tensor({4, 5})});
    ADD_FAILURE() << "a MatMul of [2,3] by [4,5] ran";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MatMul"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------ the foundation op set

Tensor i64(const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(dims, SINGA_ONNX_INT64, v);
}

TEST_F(Cuda, UnaryMathAndActivationsMatchCpu) {
  Model m(17);
  m.input("x", {3, 4, 5}).input("p", {3, 4, 5});  // x in (-2, 2), p in (0.1, 0.9)
  m.init("lo", Tensor::from_vector<float>({}, SINGA_ONNX_FLOAT, {-0.5f}));
  m.init("hi", Tensor::from_vector<float>({}, SINGA_ONNX_FLOAT, {0.75f}));
  for (const char* op : {"Abs", "Neg", "Exp", "Floor", "Ceil", "Sign", "Erf", "Sin", "Cos", "Atan", "Sinh", "Cosh",
                         "Asinh", "Softplus", "Softsign", "Elu", "Selu", "HardSigmoid", "HardSwish", "Round", "Identity",
                         "Relu", "Sigmoid", "Tanh"}) {
    m.node(op, {"x"}, {std::string("x_") + op});
    m.out(std::string("x_") + op);
  }
  for (const char* op : {"Log", "Sqrt", "Reciprocal", "Tan", "Asin", "Acos", "Atanh"}) {
    m.node(op, {"p"}, {std::string("p_") + op});
    m.out(std::string("p_") + op);
  }
  m.node("Reciprocal", {"p"}, {"inv"});
  m.node("Acosh", {"inv"}, {"acosh"});
  attr(m.node("LeakyRelu", {"x"}, {"leaky"}), "alpha", 0.3f);
  attr(m.node("Celu", {"x"}, {"celu"}), "alpha", 1.5f);
  attr(m.node("ThresholdedRelu", {"x"}, {"thresholded"}), "alpha", 0.4f);
  m.node("Clip", {"x", "lo", "hi"}, {"clip"});
  m.node("Clip", {"x", "", "hi"}, {"clip_hi"});
  m.node("LogSoftmax", {"x"}, {"log_softmax"});
  attr(m.node("LogSoftmax", {"x"}, {"log_softmax_1"}), "axis", int64_t(1));
  for (const char* o : {"acosh", "leaky", "celu", "thresholded", "clip", "clip_hi", "log_softmax", "log_softmax_1"}) m.out(o);
  expect_same_as_cpu(m, {m.random_tensor({3, 4, 5}, -2.f, 2.f), m.random_tensor({3, 4, 5}, 0.1f, 0.9f)}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, LegacyAttributeFormsMatchCpu) {
  Model m(9);  // Clip, Slice, Unsqueeze and Pad with attributes
  m.input("x", {2, 3, 6});
  auto* clip = m.node("Clip", {"x"}, {"clip"});
  attr(clip, "min", -0.25f);
  attr(clip, "max", 0.5f);
  auto* slice = m.node("Slice", {"x"}, {"slice"});
  attr(slice, "starts", std::vector<int64_t>{1, -5});
  attr(slice, "ends", std::vector<int64_t>{3, 100});
  attr(slice, "axes", std::vector<int64_t>{1, 2});
  auto* unsq = m.node("Unsqueeze", {"x"}, {"unsq"});
  attr(unsq, "axes", std::vector<int64_t>{0, 3});
  auto* pad = m.node("Pad", {"x"}, {"pad"});
  attr(pad, "pads", std::vector<int64_t>{0, 1, 2, 0, 0, 3});
  attr(pad, "mode", "reflect");
  for (const char* o : {"clip", "slice", "unsq", "pad"}) m.out(o);
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 6})}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, BroadcastingComparisonsAndCastsMatchCpu) {
  Model m(17);
  m.input("a", {2, 3, 4}).input("b", {3, 1}).input("c", {4}).input("base", {2, 3, 4});
  m.init("e_i", i64({4}, {0, 1, 2, 3}));
  m.init("e_f", Tensor::from_vector<float>({}, SINGA_ONNX_FLOAT, {2.f}));
  m.init("slope", Tensor::from_vector<float>({4}, SINGA_ONNX_FLOAT, {0.1f, -0.2f, 0.3f, 2.f}));
  m.node("Pow", {"base", "e_i"}, {"pow_int"});
  m.node("Pow", {"base", "e_f"}, {"square"});
  m.node("Pow", {"base", "c"}, {"pow"});
  m.node("Max", {"a", "b", "c"}, {"max"});
  m.node("Min", {"a", "b"}, {"min"});
  m.node("Sum", {"a", "b", "c"}, {"sum"});
  m.node("Mean", {"a", "c"}, {"mean"});
  m.node("PRelu", {"a", "slope"}, {"prelu"});
  m.node("Greater", {"a", "b"}, {"gt"});
  m.node("Less", {"a", "c"}, {"lt"});
  m.node("Equal", {"gt", "lt"}, {"eq"});
  m.node("LessOrEqual", {"a", "b"}, {"le"});
  m.node("GreaterOrEqual", {"a", "c"}, {"ge"});
  m.node("And", {"gt", "lt"}, {"and"});
  m.node("Or", {"gt", "lt"}, {"or"});
  m.node("Xor", {"gt", "lt"}, {"xor"});
  m.node("Not", {"gt"}, {"not"});
  m.node("Where", {"gt", "a", "c"}, {"where"});
  auto cast = [&](const char* in, const char* out, int64_t to) { attr(m.node("Cast", {in}, {out}), "to", to); };
  cast("a", "a_i32", SINGA_ONNX_INT32);
  cast("a", "a_f64", SINGA_ONNX_DOUBLE);
  cast("gt", "gt_f", SINGA_ONNX_FLOAT);
  cast("a", "a_bool", SINGA_ONNX_BOOL);
  m.node("Mul", {"a", "e_f"}, {"a2"});
  cast("a2", "a2_i64", SINGA_ONNX_INT64);
  m.node("Abs", {"a2_i64"}, {"abs_i64"});
  for (const char* o : {"pow_int", "square", "pow", "max", "min", "sum", "mean", "prelu", "where", "gt_f"}) m.out(o);
  for (const char* o : {"gt", "lt", "eq", "le", "ge", "and", "or", "xor", "not", "a_bool"}) m.out(o, SINGA_ONNX_BOOL);
  m.out("a_i32", SINGA_ONNX_INT32).out("a_f64", SINGA_ONNX_DOUBLE).out("a2_i64", SINGA_ONNX_INT64).out("abs_i64", SINGA_ONNX_INT64);
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 4}, -3.f, 3.f), m.random_tensor({3, 1}), m.random_tensor({4}),
                         m.random_tensor({2, 3, 4}, 0.5f, 2.f)}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, ReductionsMatchCpu) {
  Model m(13);
  m.input("x", {2, 3, 4, 5});
  m.init("axes", i64({2}, {1, -1}));
  m.node("ReduceSum", {"x", "axes"}, {"sum"});
  attr(m.node("ReduceSum", {"x"}, {"sum_all"}), "keepdims", int64_t(0));
  auto reduce = [&](const char* op, const char* out, std::vector<int64_t> axes, int64_t keep) {
    auto* n = m.node(op, {"x"}, {out});
    attr(n, "axes", axes);
    attr(n, "keepdims", keep);
    m.out(out);
  };
  reduce("ReduceMean", "mean", {1, 2, 3}, 1);  // 60 elements per output: one block each
  reduce("ReduceMax", "max", {0}, 0);          // 2 per output: one thread each
  reduce("ReduceMin", "min", {2}, 1);
  reduce("ReduceProd", "prod", {3}, 0);
  reduce("ReduceL1", "l1", {0, 2}, 1);
  reduce("ReduceL2", "l2", {1}, 0);
  reduce("ReduceSumSquare", "sumsq", {2, 3}, 1);
  reduce("ReduceLogSumExp", "lse", {1, 3}, 0);
  m.node("ReduceLogSum", {"mean"}, {"logsum"});
  auto* am = m.node("ArgMax", {"x"}, {"argmax"});
  attr(am, "axis", int64_t(2));
  auto* an = m.node("ArgMin", {"x"}, {"argmin"});
  attr(an, "axis", int64_t(-1));
  attr(an, "keepdims", int64_t(0));
  attr(an, "select_last_index", int64_t(1));
  m.out("sum").out("sum_all").out("logsum").out("argmax", SINGA_ONNX_INT64).out("argmin", SINGA_ONNX_INT64);
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 4, 5}, 0.1f, 2.f)}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, DataMovementMatchesCpu) {
  Model m(13);
  m.input("x", {2, 3, 4}).input("y", {2, 2, 4});
  m.init("split", i64({2}, {1, 2}));
  m.init("starts", i64({2}, {-1, 1}));
  m.init("ends", i64({2}, {-100, 4}));
  m.init("sl_axes", i64({2}, {2, 1}));
  m.init("steps", i64({2}, {-2, 1}));
  m.init("idx", i64({2, 2}, {0, -1, 2, 1}));
  m.init("shape", i64({4}, {2, 2, 3, 4}));
  m.init("reps", i64({3}, {1, 2, 3}));
  m.init("pads", i64({6}, {0, 1, 2, 1, -1, 1}));
  m.init("ax0", i64({1}, {0}));
  attr(m.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{2, 0, 1});
  m.node("Transpose", {"x"}, {"t_rev"});
  attr(m.node("Concat", {"x", "y"}, {"cat"}), "axis", int64_t(1));
  attr(m.node("Split", {"x", "split"}, {"s0", "s1"}), "axis", int64_t(1));
  m.node("Slice", {"x", "starts", "ends", "sl_axes", "steps"}, {"slice"});
  attr(m.node("Gather", {"x", "idx"}, {"gather"}), "axis", int64_t(1));
  m.node("Expand", {"s0", "shape"}, {"expand"});
  m.node("Tile", {"x", "reps"}, {"tile"});
  m.node("Pad", {"x", "pads"}, {"pad_const"});
  attr(m.node("Pad", {"x", "pads"}, {"pad_reflect"}), "mode", "reflect");
  attr(m.node("Pad", {"x", "pads"}, {"pad_edge"}), "mode", "edge");
  m.node("Unsqueeze", {"x", "ax0"}, {"unsq"});
  m.node("Squeeze", {"unsq", "ax0"}, {"sq"});
  m.node("Shape", {"x"}, {"shape_x"});
  m.node("Size", {"x"}, {"size_x"});
  m.node("ConstantOfShape", {"shape_x"}, {"zeros"});
  for (const char* o : {"t", "t_rev", "cat", "s0", "s1", "slice", "gather", "expand", "tile", "pad_const", "pad_reflect",
                        "pad_edge", "sq", "zeros"})
    m.out(o);
  m.out("shape_x", SINGA_ONNX_INT64).out("size_x", SINGA_ONNX_INT64);
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 4}), m.random_tensor({2, 2, 4})}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, LrnDropoutAndConvTransposeMatchCpu) {
  Model m(13);
  m.input("x", {2, 5, 4, 4}).input("v", {1, 3, 7});
  m.random_init("w", {5, 2, 3, 3}).random_init("b", {2}).random_init("w1", {3, 4, 2});
  attr(m.node("LRN", {"x"}, {"lrn"}), "size", int64_t(3));
  auto* lrn4 = m.node("LRN", {"x"}, {"lrn4"});
  attr(lrn4, "size", int64_t(4));
  attr(lrn4, "alpha", 0.01f);
  attr(lrn4, "beta", 0.5f);
  attr(lrn4, "bias", 2.f);
  m.node("Dropout", {"x"}, {"drop", "mask"});
  auto* ct = m.node("ConvTranspose", {"x", "w", "b"}, {"ct"});
  attr(ct, "strides", std::vector<int64_t>{2, 2});
  attr(ct, "pads", std::vector<int64_t>{1, 0, 0, 1});
  attr(ct, "output_padding", std::vector<int64_t>{1, 0});
  auto* ct1 = m.node("ConvTranspose", {"v", "w1"}, {"ct1d"});
  attr(ct1, "strides", std::vector<int64_t>{3});
  attr(ct1, "auto_pad", "SAME_UPPER");
  attr(ct1, "dilations", std::vector<int64_t>{2});
  m.out("lrn").out("lrn4").out("drop").out("mask", SINGA_ONNX_BOOL).out("ct").out("ct1d");
  expect_same_as_cpu(m, {m.random_tensor({2, 5, 4, 4}), m.random_tensor({1, 3, 7})}, 1e-4, /*check=*/false);
}

TEST_F(Cuda, BackwardKernelsMatchCpu) {
  Model m(13);
  m.import("ai.singa.grad", 1);
  m.input("x", {2, 3, 6, 6}).input("dy", {2, 3, 6, 6}).input("dp", {2, 3, 3, 3}).input("dc", {2, 4, 6, 6});
  m.random_init("w", {3, 1, 3, 2}).random_init("w2", {4, 3, 3, 3}).random_init("scale", {3}).random_init("mean", {3});
  m.random_init("var", {3}, 0.5f, 1.5f).random_init("logits", {4, 5});
  m.init("labels", i64({4}, {0, 3, 1, 4}));
  m.init("one", Tensor::from_vector<float>({}, SINGA_ONNX_FLOAT, {1.f}));
  auto grad = [&](const char* op, std::vector<std::string> ins, std::vector<std::string> outs) {
    auto* n = m.node(op, ins, outs);
    n->set_domain("ai.singa.grad");
    return n;
  };
  m.node("Relu", {"x"}, {"r"});
  m.node("Sigmoid", {"x"}, {"s"});
  m.node("Tanh", {"x"}, {"t"});
  m.node("Softmax", {"x"}, {"sm"});
  m.node("LogSoftmax", {"x"}, {"lsm"});
  grad("ReluGrad", {"dy", "r"}, {"d_relu"});
  grad("SigmoidGrad", {"dy", "s"}, {"d_sigmoid"});
  grad("TanhGrad", {"dy", "t"}, {"d_tanh"});
  attr(grad("LeakyReluGrad", {"dy", "x"}, {"d_leaky"}), "alpha", 0.2f);
  grad("SoftmaxGrad", {"dy", "sm"}, {"d_softmax"});
  grad("LogSoftmaxGrad", {"dy", "lsm"}, {"d_log_softmax"});
  auto* mp = m.node("MaxPool", {"x"}, {"pooled", "indices"});
  attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(mp, "strides", std::vector<int64_t>{2, 2});
  attr(mp, "pads", std::vector<int64_t>{1, 1, 0, 0});
  grad("MaxPoolGrad", {"dp", "indices", "x"}, {"d_maxpool"});
  auto* ap = grad("AveragePoolGrad", {"dp", "x"}, {"d_avgpool"});
  attr(ap, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(ap, "strides", std::vector<int64_t>{2, 2});
  attr(ap, "pads", std::vector<int64_t>{1, 1, 0, 0});
  attr(ap, "count_include_pad", int64_t(1));
  attr(grad("BatchNormalizationGrad", {"dy", "x", "scale"}, {"bn_dx", "bn_dscale", "bn_db"}), "training_mode", int64_t(1));
  grad("BatchNormalizationGrad", {"dy", "x", "scale", "mean", "var"}, {"bni_dx", "bni_dscale", "bni_db"});
  // Depthwise with asymmetric pads (the padded path), then a plain 3x3.
  auto* cg = grad("ConvGrad", {"dy", "x", "w"}, {"conv_dx", "conv_dw", "conv_db"});
  attr(cg, "pads", std::vector<int64_t>{1, 0, 1, 1});
  attr(cg, "group", int64_t(3));
  attr(grad("ConvGrad", {"dc", "x", "w2"}, {"conv2_dx", "conv2_dw", ""}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(m.node("LogSoftmax", {"logits"}, {"log_prob"}), "axis", int64_t(1));
  grad("SoftmaxCrossEntropyLossGrad", {"one", "log_prob", "labels"}, {"d_scores"});
  for (const char* o : {"d_relu", "d_sigmoid", "d_tanh", "d_leaky", "d_softmax", "d_log_softmax", "d_maxpool", "d_avgpool",
                        "bn_dx", "bn_dscale", "bn_db", "bni_dx", "bni_dscale", "bni_db", "conv_dx", "conv_dw", "conv_db",
                        "conv2_dx", "conv2_dw", "d_scores"})
    m.out(o);
  expect_same_as_cpu(m, {m.random_tensor({2, 3, 6, 6}), m.random_tensor({2, 3, 6, 6}), m.random_tensor({2, 3, 3, 3}),
                         m.random_tensor({2, 4, 6, 6})},
                     1e-4, /*check=*/false);
}

}  // namespace
