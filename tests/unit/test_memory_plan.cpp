// The static memory plan (core/memory_plan.hpp): the planner's placements
// never overlap for values alive at the same node, in-place chains hold their
// memory for their whole life, and a planned model computes what an unplanned
// one does, run after run and from several threads at once.
#include "test_util.hpp"
#include "model_builder.hpp"

#include "../../core/memory_plan.hpp"

#include <singa/onnx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

using singa::MemoryPlan;
using singa::PlanValue;
using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

PlanValue value(size_t bytes, int first, int last, int takes_over = -1, bool eligible = true) {
  PlanValue v;
  v.bytes = bytes;
  v.first = first;
  v.last = last;
  v.takes_over = takes_over;
  v.eligible = eligible;
  return v;
}

bool overlap(int64_t a, size_t na, int64_t b, size_t nb) { return a < b + int64_t(nb) && b < a + int64_t(na); }

}  // namespace

TEST(MemoryPlan, ValuesAliveAtTheSameNodeNeverShareMemory) {
  std::mt19937 rng(5);
  for (int round = 0; round < 20; ++round) {
    std::vector<PlanValue> vs;
    for (int v = 0; v < 150; ++v) {
      int first = int(rng() % 100), life = int(rng() % 12);
      vs.push_back(value(1 + rng() % 5000, first, first + life, -1, rng() % 8 != 0));
    }
    MemoryPlan p = singa::plan_memory(vs);
    size_t placed = 0, peak_live = 0;
    for (int node = 0; node < 112; ++node) {
      size_t live = 0;
      for (const auto& v : vs)
        if (v.eligible && v.first <= node && node <= v.last) live += (v.bytes + 63) / 64 * 64;
      peak_live = std::max(peak_live, live);
    }
    for (size_t a = 0; a < vs.size(); ++a) {
      EXPECT_EQ(vs[a].eligible, p.offset[a] >= 0) << a;
      if (p.offset[a] < 0) continue;
      ++placed;
      EXPECT_EQ(p.offset[a] % 64, 0);
      EXPECT_GE(p.bytes[a], vs[a].bytes);
      EXPECT_LE(size_t(p.offset[a]) + p.bytes[a], p.arena_bytes);
      for (size_t b = a + 1; b < vs.size(); ++b) {
        if (p.offset[b] < 0 || vs[a].last < vs[b].first || vs[b].last < vs[a].first) continue;
        EXPECT_FALSE(overlap(p.offset[a], p.bytes[a], p.offset[b], p.bytes[b]))
            << "values " << a << " and " << b << " are alive together";
      }
    }
    EXPECT_EQ(p.planned_values, placed);
    // No plan can beat the bytes alive at the busiest node; reuse must beat
    // one buffer per value.
    EXPECT_GE(p.arena_bytes, peak_live);
    EXPECT_LT(p.arena_bytes, p.planned_bytes);
  }
}

TEST(MemoryPlan, AnInPlaceChainHoldsItsMemoryUntilItsLastValueDies) {
  // a (nodes 0-1) is taken over by b at node 1, which lives until node 4; c
  // is produced at node 2 and must not land in a's memory.
  std::vector<PlanValue> vs{value(1024, 0, 1), value(1024, 1, 4, 0), value(1024, 2, 3)};
  MemoryPlan p = singa::plan_memory(vs);
  ASSERT_GE(p.offset[0], 0);
  EXPECT_EQ(p.offset[1], -1);  // b lives in a's memory (or in its own, when the kernel does not run in place)
  ASSERT_GE(p.offset[2], 0);
  EXPECT_FALSE(overlap(p.offset[0], p.bytes[0], p.offset[2], p.bytes[2]));
  EXPECT_EQ(p.arena_bytes, 2048u);
}

TEST(MemoryPlan, AChainWithAValueTheCallerSeesIsLeftOut) {
  // b, produced in place over a, is a graph output: a's memory leaves the run.
  std::vector<PlanValue> vs{value(1024, 0, 1), value(1024, 1, 2, 0, false), value(512, 2, 3)};
  MemoryPlan p = singa::plan_memory(vs);
  EXPECT_EQ(p.offset[0], -1);
  EXPECT_EQ(p.offset[1], -1);
  EXPECT_GE(p.offset[2], 0);
  EXPECT_EQ(p.planned_values, 1u);
}

TEST(MemoryPlan, ValuesOfUnknownSizeAreNotPlanned) {
  std::vector<PlanValue> vs{value(0, 0, 1), value(256, 1, 2)};
  MemoryPlan p = singa::plan_memory(vs);
  EXPECT_EQ(p.offset[0], -1);
  EXPECT_EQ(p.offset[1], 0);
  EXPECT_EQ(p.arena_bytes, 256u);
}

namespace {

// x -> Sigmoid -> a -> Relu (in place) -> b; Neg(x) -> c; d = b + c;
// e = d * d; y = e - b; z = Abs(d) is a second output.
ModelBuilder diamond(int64_t rows, bool symbolic = false) {
  ModelBuilder m;
  m.input("x", SINGA_ONNX_FLOAT, {symbolic ? -1 : rows, 64}, {"N"})
      .node("Sigmoid", {"x"}, {"a"})
      .node("Relu", {"a"}, {"b"})
      .node("Neg", {"x"}, {"c"})
      .node("Add", {"b", "c"}, {"d"})
      .node("Mul", {"d", "d"}, {"e"})
      .node("Sub", {"e", "b"}, {"y"})
      .node("Abs", {"d"}, {"z"})
      .output("y", SINGA_ONNX_FLOAT, {symbolic ? -1 : rows, 64}, {"N"})
      .output("z", SINGA_ONNX_FLOAT, {symbolic ? -1 : rows, 64}, {"N"});
  return m;
}

void expect_equal(const singa::onnx::NamedTensors& a, const singa::onnx::NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].first, b[k].first);
    ASSERT_EQ(a[k].second.shape(), b[k].second.shape());
    for (int64_t i = 0; i < a[k].second.numel(); ++i)
      ASSERT_EQ(a[k].second.data<float>()[i], b[k].second.data<float>()[i]) << a[k].first << "[" << i << "]";
  }
}

std::shared_ptr<singa::onnx::Rep> prepared(const ModelBuilder& m, bool plan) {
  singa::onnx::PrepareOptions o;
  o.memory_plan = plan;
  return singa::onnx::prepare_bytes(m.bytes(), o);
}

}  // namespace

TEST(MemoryPlan, PlannedModelComputesWhatAnUnplannedOneDoes) {
  testing_util::ensure_loaded();
  ModelBuilder m = diamond(4);
  auto plain = prepared(m, false), planned = prepared(m, true);
  EXPECT_EQ(plain->memory_plan().planned_values, 0u);
  const auto info = planned->memory_plan();
  EXPECT_GT(info.planned_values, 0u);
  EXPECT_LT(info.arena_bytes, info.planned_bytes);  // d and c reuse what a and x's copies left
  for (unsigned seed = 1; seed <= 3; ++seed) {
    Tensor x = testing_util::randn({4, 64}, seed);
    expect_equal(plain->run({x}), planned->run({x}));
  }
}

TEST(MemoryPlan, RunsFromSeveralThreadsEachHaveTheirOwnArena) {
  testing_util::ensure_loaded();
  ModelBuilder m = diamond(32);
  auto plain = prepared(m, false), planned = prepared(m, true);
  std::vector<singa::onnx::NamedTensors> want(4), got(4);
  for (unsigned t = 0; t < 4; ++t) want[t] = plain->run({testing_util::randn({32, 64}, 10 + t)});
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) got[t] = planned->run({testing_util::randn({32, 64}, 10 + t)});
    });
  for (auto& th : threads) th.join();
  for (unsigned t = 0; t < 4; ++t) expect_equal(want[t], got[t]);
}

TEST(MemoryPlan, AnIntermediateReturnedByLastLayersOutlivesLaterRuns) {
  testing_util::ensure_loaded();
  ModelBuilder m = diamond(8);
  auto plain = prepared(m, false), planned = prepared(m, true);
  singa::onnx::RunOptions ro;
  ro.last_layers = -3;  // stop after Add: the outputs are d
  Tensor x1 = testing_util::randn({8, 64}, 21), x2 = testing_util::randn({8, 64}, 22);
  auto want = plain->run({x1}, ro);
  auto held = planned->run({x1}, ro);
  planned->run({x2});
  planned->run({x2}, ro);
  expect_equal(want, held);
}

TEST(MemoryPlan, SymbolicShapesAreAllocatedOnDemand) {
  testing_util::ensure_loaded();
  ModelBuilder m = diamond(0, true);
  auto plain = prepared(m, false), planned = prepared(m, true);
  EXPECT_EQ(planned->memory_plan().planned_values, 0u);
  for (int64_t n : {1, 5}) {
    Tensor x = testing_util::randn({n, 64}, unsigned(n));
    expect_equal(plain->run({x}), planned->run({x}));
  }
  // Bound at prepare time, the same model is planned.
  singa::onnx::PrepareOptions o;
  o.dims = {{"N", 5}};
  auto bound = singa::onnx::prepare_bytes(m.bytes(), o);
  EXPECT_GT(bound->memory_plan().planned_values, 0u);
  Tensor x = testing_util::randn({5, 64}, 5);
  expect_equal(plain->run({x}), bound->run({x}));
}

// Concat inputs placed inside the Concat's output (PlanValue::part_of): each
// part sits at its offset in the container, the container's room is held
// from the first part's producer on, and nothing else alive meanwhile lands
// in it; a part that does not fit its container is placed on its own.
TEST(MemoryPlan, ConcatInputsArePlacedInsideTheirOutput) {
  std::vector<PlanValue> vs;
  vs.push_back(value(4096, 0, 3));   // 0: alive throughout
  vs.push_back(value(128, 1, 3));    // 1: part 0
  vs.push_back(value(192, 2, 3));    // 2: part 1
  vs.push_back(value(320, 3, 5));    // 3: the Concat's output
  vs.push_back(value(256, 2, 4));    // 4: alive beside the parts
  vs.push_back(value(64, 2, 3));     // 5: a part that overflows its container
  vs[1].part_of = 3, vs[1].part_offset = 0;
  vs[2].part_of = 3, vs[2].part_offset = 128;
  vs[5].part_of = 3, vs[5].part_offset = 300;
  MemoryPlan p = singa::plan_memory(vs);
  ASSERT_GE(p.offset[3], 0);
  EXPECT_EQ(p.offset[1], p.offset[3]);
  EXPECT_EQ(p.offset[2], p.offset[3] + 128);
  for (size_t v : {size_t(0), size_t(4), size_t(5)}) {
    ASSERT_GE(p.offset[v], 0) << v;
    EXPECT_FALSE(overlap(p.offset[v], p.bytes[v], p.offset[3], p.bytes[3])) << v;
  }
}

// The same in a model: Concat inputs written where the Concat puts them (the
// Concat moves nothing), against an unplanned run; inputs that something else
// reads too, a Concat whose inputs are not whole blocks of the output (batch 2
// before the axis), and one that reads an input twice keep their own memory
// and still compute the same.
TEST(MemoryPlan, ConcatInputsWrittenInPlaceComputeTheSame) {
  testing_util::ensure_loaded();
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    const int64_t rows = variant == 2 ? 2 : 1;
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {rows, 64})
        .node("Sigmoid", {"x"}, {"a"})
        .node("Neg", {"x"}, {"b"})
        .node("Exp", {"x"}, {"c"})
        .node("Concat", {"a", "b", variant == 3 ? "a" : "c"}, {"d"});
    auto* axis = m.last()->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    m.node("Abs", {"d"}, {"e"}).node("Tanh", {"e"}, {"y"});
    if (variant == 1) m.node("Sqrt", {"a"}, {"z"}).output("z", SINGA_ONNX_FLOAT, {rows, 64});
    m.output("y", SINGA_ONNX_FLOAT, {rows, 192});
    auto plain = prepared(m, false), planned = prepared(m, true);
    EXPECT_GT(planned->memory_plan().planned_values, 0u);
    for (unsigned seed = 1; seed <= 3; ++seed) {
      Tensor x = testing_util::randn({rows, 64}, seed);
      expect_equal(plain->run({x}), planned->run({x}));
    }
  }
}
