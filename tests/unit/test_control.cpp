// Control flow and non-tensor values: If/Loop/Scan subgraphs that read the
// enclosing scope, sequence and optional values through Rep::run_values,
// string tensors written by kernels, and the errors for malformed uses.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <thread>

using singa::Tensor;
using singa::Value;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::f32_tensor;
using testing_util::i64_tensor;

namespace {

using testing_util::ensure_loaded;

void tensor_vi(::onnx::ValueInfoProto* vi, const std::string& name, int32_t dtype) {
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
}

::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

::onnx::GraphProto* graph_attr(::onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// A rank-0 output (ModelBuilder::output leaves the shape out when no dims are given).
void scalar_output(ModelBuilder& m, const std::string& name, int32_t dtype) {
  m.output(name, dtype);
  m.g->mutable_output(m.g->output_size() - 1)->mutable_type()->mutable_tensor_type()->mutable_shape();
}

// Loop M times: acc += step * i (step is read from the enclosing graph), and
// every iteration's acc is a scan output.
ModelBuilder loop_model() {
  ModelBuilder m;
  m.input("M", SINGA_ONNX_INT64, {}).input("acc0", SINGA_ONNX_FLOAT, {1}).input("step", SINGA_ONNX_FLOAT, {1});
  auto* loop = add_node(m.g, "Loop", {"M", "", "acc0"}, {"acc", "history"});
  auto* body = graph_attr(loop, "body");
  tensor_vi(body->add_input(), "i", SINGA_ONNX_INT64);
  tensor_vi(body->add_input(), "cond_in", SINGA_ONNX_BOOL);
  tensor_vi(body->add_input(), "acc_in", SINGA_ONNX_FLOAT);
  add_node(body, "Cast", {"i"}, {"fi"})->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(SINGA_ONNX_FLOAT);
    return a;
  }());
  add_node(body, "Mul", {"fi", "step"}, {"inc"});
  add_node(body, "Add", {"acc_in", "inc"}, {"acc_out"});
  add_node(body, "Identity", {"cond_in"}, {"cond_out"});
  add_node(body, "Identity", {"acc_out"}, {"scan_out"});
  tensor_vi(body->add_output(), "cond_out", SINGA_ONNX_BOOL);
  tensor_vi(body->add_output(), "acc_out", SINGA_ONNX_FLOAT);
  tensor_vi(body->add_output(), "scan_out", SINGA_ONNX_FLOAT);
  m.output("acc", SINGA_ONNX_FLOAT, {1}).output("history", SINGA_ONNX_FLOAT, {-1, 1}, {"trips", ""});
  return m;
}

}  // namespace

TEST(Control, LoopReadsTheEnclosingScopeAndStacksScanOutputs) {
  ensure_loaded();
  auto rep = singa::onnx::prepare(loop_model().model);
  auto out = rep->run(std::vector<Tensor>{i64_tensor({}, {4}), f32_tensor({1}, {1.f}), f32_tensor({1}, {0.5f})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[0], 1.f + 0.5f * (0 + 1 + 2 + 3));
  ASSERT_EQ(out[1].second.shape(), (singa::Shape{4, 1}));
  const float want[] = {1.f, 1.5f, 2.5f, 4.f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out[1].second.data<float>()[i], want[i]);
  // No iteration: the loop-carried value passes through, the scan output is empty.
  auto none = rep->run(std::vector<Tensor>{i64_tensor({}, {0}), f32_tensor({1}, {7.f}), f32_tensor({1}, {0.5f})});
  EXPECT_FLOAT_EQ(none[0].second.data<float>()[0], 7.f);
  EXPECT_EQ(none[1].second.numel(), 0);
}

TEST(Control, LoopRunsFromManyThreads) {
  ensure_loaded();
  auto rep = singa::onnx::prepare(loop_model().model);
  std::vector<std::thread> pool;
  std::vector<float> got(8);
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&, t] {
      auto out = rep->run(std::vector<Tensor>{i64_tensor({}, {int64_t(t + 1)}), f32_tensor({1}, {0.f}), f32_tensor({1}, {1.f})});
      got[size_t(t)] = out[0].second.data<float>()[0];
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_FLOAT_EQ(got[size_t(t)], float(t * (t + 1) / 2));
}

TEST(Control, NestedIfReadsTwoScopesUp) {
  ensure_loaded();
  ModelBuilder m;
  m.input("c", SINGA_ONNX_BOOL, {}).input("x", SINGA_ONNX_FLOAT, {2});
  auto* outer = add_node(m.g, "If", {"c"}, {"y"});
  auto* then_g = graph_attr(outer, "then_branch");
  auto* inner = add_node(then_g, "If", {"c"}, {"t"});
  auto* deep = graph_attr(inner, "then_branch");
  add_node(deep, "Neg", {"x"}, {"nx"});  // x lives two graphs up
  tensor_vi(deep->add_output(), "nx", SINGA_ONNX_FLOAT);
  auto* deep_else = graph_attr(inner, "else_branch");
  add_node(deep_else, "Identity", {"x"}, {"ix"});
  tensor_vi(deep_else->add_output(), "ix", SINGA_ONNX_FLOAT);
  tensor_vi(then_g->add_output(), "t", SINGA_ONNX_FLOAT);
  auto* else_g = graph_attr(outer, "else_branch");
  add_node(else_g, "Abs", {"x"}, {"ax"});
  tensor_vi(else_g->add_output(), "ax", SINGA_ONNX_FLOAT);
  m.output("y", SINGA_ONNX_FLOAT, {2});
  auto rep = singa::onnx::prepare(m.model);
  Tensor cond({}, SINGA_ONNX_BOOL);
  *cond.data<bool>() = true;
  auto y = rep->run(std::vector<Tensor>{cond, f32_tensor({2}, {1.f, -2.f})})[0].second;
  EXPECT_FLOAT_EQ(y.data<float>()[0], -1.f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 2.f);
  *cond.data<bool>() = false;
  y = rep->run(std::vector<Tensor>{cond, f32_tensor({2}, {1.f, -2.f})})[0].second;
  EXPECT_FLOAT_EQ(y.data<float>()[1], 2.f);
}

TEST(Control, SubgraphReadingAMissingOuterValueIsRefusedNamingTheNode) {
  ensure_loaded();
  ModelBuilder m;
  m.input("c", SINGA_ONNX_BOOL, {});
  auto* n = add_node(m.g, "If", {"c"}, {"y"});
  n->set_name("branchy");
  auto* t = graph_attr(n, "then_branch");
  add_node(t, "Neg", {"nowhere"}, {"a"});
  tensor_vi(t->add_output(), "a", SINGA_ONNX_FLOAT);
  auto* e = graph_attr(n, "else_branch");
  add_node(e, "Neg", {"nowhere"}, {"b"});
  tensor_vi(e->add_output(), "b", SINGA_ONNX_FLOAT);
  m.output("y", SINGA_ONNX_FLOAT, {1});
  singa::onnx::PrepareOptions o;
  o.check_model = false;  // the checker would catch it first; the core must too
  try {
    singa::onnx::prepare(m.model, o);
    FAIL() << "expected an error";
  } catch (const singa::Error& err) {
    std::string msg = err.what();
    EXPECT_NE(msg.find("branchy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nowhere"), std::string::npos) << msg;
  }
}

TEST(Control, SequencesInAndOut) {
  ensure_loaded();
  ModelBuilder m(13);
  auto* in = m.g->add_input();
  in->set_name("seq");
  in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(SINGA_ONNX_FLOAT);
  m.input("x", SINGA_ONNX_FLOAT, {2, 3});
  add_node(m.g, "SequenceInsert", {"seq", "x"}, {"s2"});
  add_node(m.g, "SequenceLength", {"s2"}, {"len"});
  add_int(add_node(m.g, "ConcatFromSequence", {"s2"}, {"cat"}), "axis", 0);
  add_node(m.g, "SplitToSequence", {"x"}, {"rows"});
  auto* out = m.g->add_output();
  out->set_name("rows");
  out->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(SINGA_ONNX_FLOAT);
  scalar_output(m, "len", SINGA_ONNX_INT64);
  m.output("cat", SINGA_ONNX_FLOAT, {-1, 3}, {"rows", ""});
  auto rep = singa::onnx::prepare(m.model);
  ASSERT_EQ(rep->inputs()[0].kind, singa::onnx::ValueInfo::Kind::kSequence);
  Tensor a = f32_tensor({1, 3}, {1, 2, 3});
  Tensor x = f32_tensor({2, 3}, {4, 5, 6, 7, 8, 9});
  auto got = rep->run_values({Value::sequence({a}), x});
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[0].second.is_sequence());
  ASSERT_EQ(got[0].second.items().size(), 2u);
  EXPECT_EQ(got[0].second.items()[1].shape(), (singa::Shape{1, 3}));
  EXPECT_FLOAT_EQ(got[0].second.items()[1].data<float>()[2], 9.f);
  EXPECT_EQ(got[1].second.tensor().data<int64_t>()[0], 2);
  EXPECT_EQ(got[2].second.tensor().shape(), (singa::Shape{3, 3}));
  EXPECT_FLOAT_EQ(got[2].second.tensor().data<float>()[8], 9.f);
  // The tensor-only API refuses a sequence output with a pointer to run_values.
  EXPECT_THROW(rep->run(std::vector<Tensor>{x}), singa::Error);
  // A tensor where the model wants a sequence is refused before any node runs.
  EXPECT_THROW(rep->run_values({x, x}), singa::Error);
}

TEST(Control, SequenceAtOutOfRangeNamesTheNode) {
  ensure_loaded();
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {2}).input("pos", SINGA_ONNX_INT64, {});
  add_node(m.g, "SequenceConstruct", {"x", "x"}, {"s"});
  add_node(m.g, "SequenceAt", {"s", "pos"}, {"y"})->set_name("pick");
  m.output("y", SINGA_ONNX_FLOAT, {2});
  auto rep = singa::onnx::prepare(m.model);
  auto ok = rep->run(std::vector<Tensor>{f32_tensor({2}, {1, 2}), i64_tensor({}, {-1})});
  EXPECT_FLOAT_EQ(ok[0].second.data<float>()[1], 2.f);
  try {
    rep->run(std::vector<Tensor>{f32_tensor({2}, {1, 2}), i64_tensor({}, {5})});
    FAIL() << "expected an error";
  } catch (const singa::Error& err) {
    EXPECT_NE(std::string(err.what()).find("pick"), std::string::npos) << err.what();
  }
  // The Rep still works afterwards.
  EXPECT_NO_THROW(rep->run(std::vector<Tensor>{f32_tensor({2}, {1, 2}), i64_tensor({}, {0})}));
}

TEST(Control, OptionalValues) {
  ensure_loaded();
  ModelBuilder m(16);
  auto* in = m.g->add_input();
  in->set_name("opt");
  in->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(SINGA_ONNX_FLOAT);
  add_node(m.g, "OptionalHasElement", {"opt"}, {"has"});
  scalar_output(m, "has", SINGA_ONNX_BOOL);
  auto rep = singa::onnx::prepare(m.model);
  EXPECT_FALSE(rep->run_values({Value()})[0].second.tensor().data<bool>()[0]);
  EXPECT_TRUE(rep->run_values({f32_tensor({1}, {3})})[0].second.tensor().data<bool>()[0]);
}

TEST(Strings, CastWritesTextThatReadsBack) {
  ensure_loaded();
  ModelBuilder m(13);
  m.input("x", SINGA_ONNX_FLOAT, {3});
  add_int(add_node(m.g, "Cast", {"x"}, {"s"}), "to", SINGA_ONNX_STRING);
  add_int(add_node(m.g, "Cast", {"s"}, {"back"}), "to", SINGA_ONNX_FLOAT);
  add_node(m.g, "Reshape", {"s", "shape"}, {"s2"});  // copies element pointers: the text must survive
  m.initializer("shape", i64_tensor({2}, {3, 1}));
  m.output("s2", SINGA_ONNX_STRING, {3, 1}).output("back", SINGA_ONNX_FLOAT, {3});
  auto rep = singa::onnx::prepare(m.model);
  auto out = rep->run(std::vector<Tensor>{f32_tensor({3}, {0.1f, -2.5f, 1e-7f})});
  ASSERT_EQ(out[0].second.dtype(), SINGA_ONNX_STRING);
  EXPECT_EQ(out[0].second.strings()[0], "0.1");
  EXPECT_EQ(out[0].second.strings()[1], "-2.5");
  EXPECT_EQ(std::string(out[0].second.data<const char*>()[2]), out[0].second.strings()[2]);
  EXPECT_FLOAT_EQ(out[1].second.data<float>()[2], 1e-7f);
}
