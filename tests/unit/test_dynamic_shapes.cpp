// Plans specialized per input shape (core/onnx/shape_cache.cpp): a model with
// symbolic dims gives, at every shape, what a plain C++ reference computes and
// what the general plan computes; the cache is bounded, counts its hits and
// misses, and serves concurrent runs; If/Loop bodies keep working.
#include "test_util.hpp"
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

using singa::Tensor;
using testing_util::ModelBuilder;
using testing_util::add_int;
using testing_util::add_ints;
using testing_util::f32_tensor;
using testing_util::i64_tensor;

namespace {

using testing_util::ensure_loaded;

constexpr int64_t kD = 8, kHeads = 2, kHead = 4;

// One self-attention layer as transformers exports it: the head split's
// target shape is computed from Shape(x) at run time (Gather, Unsqueeze,
// Concat), and the mask enters as (1 - mask) * -10000.
ModelBuilder attention_model() {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, -1, kD}, {"batch", "seq"});
  m.input("mask", SINGA_ONNX_FLOAT, {-1, -1}, {"batch", "seq"});
  for (const char* w : {"Wq", "Wk", "Wv"}) m.initializer(w, testing_util::randn({kD, kD}, unsigned(w[1])));
  m.initializer("i0", i64_tensor({}, {0})).initializer("i1", i64_tensor({}, {1})).initializer("ax0", i64_tensor({1}, {0}));
  m.initializer("ax12", i64_tensor({2}, {1, 2})).initializer("heads", i64_tensor({1}, {kHeads}));
  m.initializer("head", i64_tensor({1}, {kHead}));
  m.initializer("d", i64_tensor({1}, {kD})).initializer("one", f32_tensor({}, {1.f})).initializer("big", f32_tensor({}, {-10000.f}));
  m.initializer("scale", f32_tensor({}, {0.5f}));
  m.node("Shape", {"x"}, {"s"}).node("Gather", {"s", "i0"}, {"b"}).node("Gather", {"s", "i1"}, {"n"});
  m.node("Unsqueeze", {"b", "ax0"}, {"bu"}).node("Unsqueeze", {"n", "ax0"}, {"nu"});
  m.node("Concat", {"bu", "nu", "heads", "head"}, {"shape4"});
  add_int(m.last(), "axis", 0);
  m.node("Concat", {"bu", "nu", "d"}, {"shape3"});
  add_int(m.last(), "axis", 0);
  for (const char* p : {"q", "k", "v"}) {
    const std::string s(p);
    m.node("MatMul", {"x", "W" + s}, {s}).node("Reshape", {s, "shape4"}, {s + "4"}).node("Transpose", {s + "4"}, {s + "h"});
    add_ints(m.last(), "perm", s == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  m.node("MatMul", {"qh", "kh"}, {"sc"}).node("Mul", {"sc", "scale"}, {"scs"});
  m.node("Unsqueeze", {"mask", "ax12"}, {"m4"}).node("Sub", {"one", "m4"}, {"inv"}).node("Mul", {"inv", "big"}, {"madd"});
  m.node("Add", {"scs", "madd"}, {"masked"}).node("Softmax", {"masked"}, {"p"});
  add_int(m.last(), "axis", -1);
  m.node("MatMul", {"p", "vh"}, {"o"}).node("Transpose", {"o"}, {"ot"});
  add_ints(m.last(), "perm", {0, 2, 1, 3});
  m.node("Reshape", {"ot", "shape3"}, {"y"});
  m.output("y", SINGA_ONNX_FLOAT, {-1, -1, kD}, {"batch", "seq"});
  return m;
}

// The same layer in plain loops.
std::vector<float> attention_reference(const Tensor& x, const Tensor& mask, const std::map<std::string, Tensor>& w) {
  const int64_t B = x.shape()[0], S = x.shape()[1];
  auto proj = [&](const Tensor& W) {
    std::vector<float> out(size_t(B * S * kD), 0.f);
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t j = 0; j < kD; ++j)
        for (int64_t i = 0; i < kD; ++i) out[size_t(r * kD + j)] += x.data<float>()[r * kD + i] * W.data<float>()[i * kD + j];
    return out;
  };
  const auto q = proj(w.at("Wq")), k = proj(w.at("Wk")), v = proj(w.at("Wv"));
  std::vector<float> y(size_t(B * S * kD), 0.f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(static_cast<size_t>(S));
        double top = -1e300, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < kHead; ++e)
            dot += double(q[size_t((b * S + i) * kD + h * kHead + e)]) * k[size_t((b * S + j) * kD + h * kHead + e)];
          p[size_t(j)] = dot * 0.5 + (1.0 - mask.data<float>()[b * S + j]) * -10000.0;
          top = std::max(top, p[size_t(j)]);
        }
        for (auto& z : p) sum += (z = std::exp(z - top));
        for (int64_t e = 0; e < kHead; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += p[size_t(j)] / sum * v[size_t((b * S + j) * kD + h * kHead + e)];
          y[size_t((b * S + i) * kD + h * kHead + e)] = float(acc);
        }
      }
  return y;
}

std::vector<Tensor> attention_inputs(int64_t batch, int64_t seq, unsigned seed) {
  Tensor x = testing_util::randn({batch, seq, kD}, seed);
  Tensor mask({batch, seq}, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = (i % 5 == 3) ? 0.f : 1.f;  // some keys masked
  return {x, mask};
}

float max_diff(const Tensor& t, const std::vector<float>& ref) {
  EXPECT_EQ(size_t(t.numel()), ref.size());
  float d = 0;
  for (size_t i = 0; i < ref.size() && i < size_t(t.numel()); ++i) d = std::max(d, std::fabs(t.data<float>()[i] - ref[i]));
  return d;
}

std::set<std::string> ops_run(const singa::onnx::Rep& rep, const std::vector<Tensor>& in) {
  std::vector<singa::onnx::NodeTiming> prof;
  singa::onnx::RunOptions o;
  o.profile = &prof;
  rep.run(in, o);
  std::set<std::string> ops;
  for (const auto& t : prof) ops.insert(t.op_type);
  return ops;
}

singa::onnx::PrepareOptions with_cache(const std::string& n) {
  singa::onnx::PrepareOptions o;
  o.options["core.shape_cache"] = n;
  return o;
}

TEST(DynamicShapes, SpecializedPlansMatchTheReferenceAndTheGeneralPlan) {
  ensure_loaded();
  const ModelBuilder m = attention_model();
  auto rep = singa::onnx::prepare(m.model);
  auto general = singa::onnx::prepare(m.model, with_cache("0"));
  const auto w = rep->parameters();
  EXPECT_EQ(general->shape_cache().capacity, 0u);
  EXPECT_EQ(rep->shape_cache().capacity, 8u);  // the default (docs/options.md)
  const std::vector<std::pair<int64_t, int64_t>> shapes{{1, 1}, {1, 8}, {2, 3}, {1, 17}};
  for (const auto& [b, s] : shapes) {
    const auto in = attention_inputs(b, s, unsigned(b * 100 + s));
    const auto ref = attention_reference(in[0], in[1], w);
    const Tensor want = general->run(in)[0].second;
    EXPECT_LT(max_diff(want, ref), 1e-4f) << b << "x" << s;
    for (int r = 0; r < 3; ++r) {  // general, then built, then found
      const Tensor got = rep->run(in)[0].second;
      EXPECT_EQ(got.shape(), want.shape());
      EXPECT_LT(max_diff(got, ref), 1e-4f) << b << "x" << s << " run " << r;
      std::vector<float> w2(want.data<float>(), want.data<float>() + want.numel());
      EXPECT_LT(max_diff(got, w2), 1e-5f) << b << "x" << s << " run " << r;
    }
  }
  const auto info = rep->shape_cache();
  EXPECT_EQ(info.entries, shapes.size());
  EXPECT_EQ(info.built, shapes.size());
  EXPECT_EQ(info.failed, 0u);
  EXPECT_EQ(info.hits, shapes.size());            // the third run of each
  EXPECT_EQ(info.misses, 2 * shapes.size());      // the first two
  // The specialized plan has no shape arithmetic left; the general one does.
  const auto in = attention_inputs(1, 8, 7);
  EXPECT_TRUE(ops_run(*general, in).count("Shape"));
  const auto ops = ops_run(*rep, in);
  std::string listed;
  for (const auto& op : ops) listed += op + " ";
  EXPECT_FALSE(ops.count("Shape") || ops.count("Concat") || ops.count("Gather")) << "the specialized plan still computes shapes: " << listed;
}

TEST(DynamicShapes, CacheIsBoundedLeastRecentlyUsedFirst) {
  ensure_loaded();
  auto rep = singa::onnx::prepare(attention_model().model, with_cache("2"));
  const auto w = rep->parameters();
  for (int64_t s : {1, 2, 3, 1})
    for (int r = 0; r < 2; ++r) {
      const auto in = attention_inputs(1, s, unsigned(s));
      EXPECT_LT(max_diff(rep->run(in)[0].second, attention_reference(in[0], in[1], w)), 1e-4f);
    }
  const auto info = rep->shape_cache();
  EXPECT_EQ(info.capacity, 2u);
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.built, 4u);  // seq 1 was evicted by seq 3, then built again
}

TEST(DynamicShapes, ACycleOfMoreShapesThanTheCacheHoldsStopsSpecializing) {
  ensure_loaded();
  auto rep = singa::onnx::prepare(attention_model().model, with_cache("1"));
  const auto w = rep->parameters();
  for (int r = 0; r < 60; ++r) {
    const auto in = attention_inputs(1, 1 + r % 2, 3);
    EXPECT_LT(max_diff(rep->run(in)[0].second, attention_reference(in[0], in[1], w)), 1e-4f);
  }
  EXPECT_LE(rep->shape_cache().built, 5u);
}

TEST(DynamicShapes, ConcurrentRunsOfNewShapes) {
  ensure_loaded();
  auto rep = singa::onnx::prepare(attention_model().model);
  const auto w = rep->parameters();
  std::vector<std::thread> pool;
  std::vector<float> worst(4, 0.f);
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < 12; ++r) {
        const auto in = attention_inputs(1, 2 + (t + r) % 5, unsigned(t * 31 + r));
        const auto ref = attention_reference(in[0], in[1], w);
        const Tensor got = rep->run(in)[0].second;
        float d = 0;
        for (size_t i = 0; i < ref.size(); ++i) d = std::max(d, std::fabs(got.data<float>()[i] - ref[i]));
        worst[size_t(t)] = std::max(worst[size_t(t)], d);
      }
    });
  for (auto& th : pool) th.join();
  for (float d : worst) EXPECT_LT(d, 1e-4f);
  const auto info = rep->shape_cache();
  EXPECT_LE(info.entries, 5u);
  EXPECT_GE(info.built, 1u);
  EXPECT_EQ(info.hits + info.misses, 48u);
}

TEST(DynamicShapes, StaticModelsAndBadOptions) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {2, 3}).node("Relu", {"x"}, {"y"}).output("y", SINGA_ONNX_FLOAT, {2, 3});
  EXPECT_EQ(singa::onnx::prepare(m.model)->shape_cache().capacity, 0u);  // nothing to bind
  try {
    singa::onnx::prepare(attention_model().model, with_cache("many"));
    FAIL() << "expected an error";
  } catch (const singa::Error& e) {
    EXPECT_EQ(e.code(), SINGA_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("core.shape_cache"), std::string::npos) << e.what();
  }
  EXPECT_THROW(singa::onnx::prepare(attention_model().model, with_cache("-1")), singa::Error);
}

// Binding the batch of an elementwise model folds nothing: no second plan
// is kept (it would only cost memory), and the general plan keeps running.
TEST(DynamicShapes, NothingToFoldKeepsNoPlan) {
  ensure_loaded();
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {-1, 3}, {"batch"}).node("Relu", {"x"}, {"y"}).output("y", SINGA_ONNX_FLOAT, {-1, 3}, {"batch"});
  auto rep = singa::onnx::prepare(m.model);
  EXPECT_EQ(rep->shape_cache().capacity, 8u);
  for (int r = 0; r < 4; ++r) {
    const auto y = rep->run(std::vector<Tensor>{f32_tensor({2, 3}, {-1, 2, -3, 4, -5, 6})})[0].second;
    EXPECT_EQ(y.shape(), (singa::Shape{2, 3}));
    EXPECT_FLOAT_EQ(y.data<float>()[0], 0.f);
    EXPECT_FLOAT_EQ(y.data<float>()[5], 6.f);
  }
  const auto info = rep->shape_cache();
  EXPECT_EQ(info.unchanged, 1u);
  EXPECT_EQ(info.entries, 0u);
  EXPECT_EQ(info.built, 0u);
  EXPECT_EQ(info.failed, 0u);
}

// If and Loop whose bodies read x from the enclosing graph, next to shape
// arithmetic that folds once x's length is bound: the Loop's trip count is
// x's length, so w = len * x; z = (c ? 2x : -x) + len.
TEST(DynamicShapes, IfAndLoopBodiesSurviveSpecialization) {
  ensure_loaded();
  ModelBuilder m;
  m.input("c", SINGA_ONNX_BOOL, {}).input("x", SINGA_ONNX_FLOAT, {-1}, {"n"});
  m.initializer("i0", i64_tensor({}, {0})).initializer("two", f32_tensor({}, {2.f})).initializer("zeros", f32_tensor({1}, {0.f}));
  m.node("Shape", {"x"}, {"s"}).node("Cast", {"s"}, {"sf"});
  add_int(m.last(), "to", SINGA_ONNX_FLOAT);
  m.node("Gather", {"s", "i0"}, {"len"});
  m.node("Mul", {"x", "zeros"}, {"acc0"});
  m.node("If", {"c"}, {"iy"});
  auto* if_node = m.last();
  auto branch = [&](const char* name, const char* op, std::vector<std::string> ins) {
    auto* a = if_node->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(name);
    auto* n = g->add_node();
    n->set_op_type(op);
    for (auto& i : ins) n->add_input(i);
    n->add_output(std::string(name) + "_out");
    auto* o = g->add_output();
    o->set_name(std::string(name) + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(SINGA_ONNX_FLOAT);
  };
  branch("then_branch", "Mul", {"x", "two"});
  branch("else_branch", "Neg", {"x"});
  m.node("Add", {"iy", "sf"}, {"z"});
  m.node("Loop", {"len", "", "acc0"}, {"w"});
  {
    auto* a = m.last()->add_attribute();
    a->set_name("body");
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name("body");
    auto vi = [](::onnx::ValueInfoProto* v, const std::string& name, int32_t t) {
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(t);
    };
    vi(g->add_input(), "i", SINGA_ONNX_INT64);
    vi(g->add_input(), "cond", SINGA_ONNX_BOOL);
    vi(g->add_input(), "acc", SINGA_ONNX_FLOAT);
    auto* n1 = g->add_node();
    n1->set_op_type("Identity");
    n1->add_input("cond");
    n1->add_output("cond_out");
    auto* n2 = g->add_node();
    n2->set_op_type("Add");
    n2->add_input("acc");
    n2->add_input("x");  // from the enclosing graph
    n2->add_output("acc_out");
    vi(g->add_output(), "cond_out", SINGA_ONNX_BOOL);
    vi(g->add_output(), "acc_out", SINGA_ONNX_FLOAT);
  }
  m.output("z", SINGA_ONNX_FLOAT, {-1}, {"n"}).output("w", SINGA_ONNX_FLOAT, {-1}, {"n"});
  auto rep = singa::onnx::prepare(m.model);
  for (int64_t n : {1, 3, 6})
    for (bool c : {true, false})
      for (int r = 0; r < 3; ++r) {
        Tensor cond({}, SINGA_ONNX_BOOL);
        *cond.data<bool>() = c;
        Tensor x = testing_util::randn({n}, unsigned(n));
        const auto out = rep->run(std::vector<Tensor>{cond, x});
        ASSERT_EQ(out.size(), 2u);
        for (int64_t i = 0; i < n; ++i) {
          const float xi = x.data<float>()[i];
          EXPECT_NEAR(out[0].second.data<float>()[i], (c ? 2 * xi : -xi) + float(n), 1e-5f) << n << " " << c;
          EXPECT_NEAR(out[1].second.data<float>()[i], float(n) * xi, 1e-4f) << n << " " << c;
        }
      }
  const auto info = rep->shape_cache();
  EXPECT_EQ(info.failed, 0u);
  EXPECT_EQ(info.unchanged, 0u);
  EXPECT_EQ(info.built, 3u);
  EXPECT_EQ(info.entries, 3u);
}

}  // namespace
