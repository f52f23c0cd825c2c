// The float LSTM kernel's fast paths (plugins/ops_rnn/lstm.cpp: R repacked
// into panels for the step product, lstm_step_f32.cpp, and the step split over
// the pool, its parts meeting at a StepBarrier) against the float64 kernel,
// which takes the plain loop with OpenBLAS products: biases, initial states,
// ragged sequence_lens, both directions, batches that are not a multiple of
// the kernel's three-row blocks, hidden sizes that end in a partial 16-unit
// panel, clipped pre-activations, and an R given at run time (packed per
// call, X projected by oneDNN) as well as constant R and W (packed at
// prepare, X projected by each part through lstm_projection).
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

Tensor random_floats(const singa::Shape& shape, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t(shape, SINGA_ONNX_FLOAT);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor widened(const Tensor& f) {
  Tensor d(f.shape(), SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < f.numel(); ++i) d.data<double>()[i] = f.data<float>()[i];
  return d;
}

struct Case {
  const char* direction;
  int64_t N, H;
  bool r_at_run_time;
  float clip = 0;  // the clip attribute, when above 0
  int64_t I = 20;  // input size
};

}  // namespace

TEST(LstmSteps, FloatFastPathsMatchFloat64AtEveryThreadCount) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const int64_t T = 7;
  const Case cases[] = {{"forward", 3, 160, false},        // 10 panels over 3 parts
                        {"bidirectional", 3, 160, false},  //
                        {"forward", 5, 150, true},         // a partial last panel; rows 3 + 2
                        {"reverse", 4, 150, false},        // rows 3 + 1
                        {"bidirectional", 2, 37, true},    // one part, 3 panels
                        {"forward", 1, 64, false},         // one row, as in the benchmark's classifier
                        {"reverse", 1, 150, false, 0.4f},  // clipped pre-activations
                        {"forward", 4, 48, false, 0.7f},
                        // one row whose R and W (3.5 MB) pass kInterleaveBytes up to 3 threads: X
                        // projected before the steps, not a block at a time inside them (at 4 threads, inside)
                        {"bidirectional", 1, 256, false, 0, 600},
                        // at 2 threads the bidirectional cases with constant W and R run
                        // both directions at once, one thread each (no step barrier)
                        {"bidirectional", 1, 48, false, 0.5f}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.direction) + " N=" + std::to_string(c.N) + " H=" + std::to_string(c.H) +
                 (c.r_at_run_time ? " R at run time" : "") + (c.clip > 0 ? " clip " + std::to_string(c.clip) : ""));
    const int64_t D = std::string(c.direction) == "bidirectional" ? 2 : 1, N = c.N, H = c.H, I = c.I;
    Tensor lens({N}, SINGA_ONNX_INT32);
    for (int64_t b = 0; b < N; ++b) lens.data<int32_t>()[b] = int32_t(b == 0 ? T : (b * 5) % (T + 1));  // 0 among them
    const std::map<std::string, Tensor> floats = {
        {"W", random_floats({D, 4 * H, I}, 1, 0.2f)}, {"R", random_floats({D, 4 * H, H}, 2, 0.1f)},
        {"B", random_floats({D, 8 * H}, 3, 0.5f)},    {"h0", random_floats({D, N, H}, 4, 1.f)},
        {"c0", random_floats({D, N, H}, 5, 1.f)},     {"x", random_floats({T, N, I}, 6, 1.f)}};
    auto build = [&](int32_t dt) {
      auto as = [&](const std::string& name) {
        return dt == SINGA_ONNX_FLOAT ? floats.at(name) : widened(floats.at(name));
      };
      ModelBuilder m;
      m.input("x", dt, {T, N, I});
      if (c.r_at_run_time)
        m.input("R", dt, {D, 4 * H, H});
      else
        m.initializer("R", as("R"));
      m.initializer("W", as("W")).initializer("B", as("B")).initializer("lens", lens);
      m.initializer("h0", as("h0")).initializer("c0", as("c0"));
      m.node("LSTM", {"x", "W", "R", "B", "lens", "h0", "c0"}, {"y", "yh", "yc"}, "lstm");
      auto* a = m.last()->add_attribute();
      a->set_name("hidden_size");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(H);
      auto* dir = m.last()->add_attribute();
      dir->set_name("direction");
      dir->set_type(::onnx::AttributeProto::STRING);
      dir->set_s(c.direction);
      if (c.clip > 0) {
        auto* clip = m.last()->add_attribute();
        clip->set_name("clip");
        clip->set_type(::onnx::AttributeProto::FLOAT);
        clip->set_f(c.clip);
      }
      m.output("y", dt, {T, D, N, H}).output("yh", dt, {D, N, H}).output("yc", dt, {D, N, H});
      auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
      std::map<std::string, Tensor> feeds = {{"x", as("x")}};
      if (c.r_at_run_time) feeds["R"] = as("R");
      return std::make_pair(std::move(rep), feeds);
    };
    auto [ref_rep, ref_feeds] = build(SINGA_ONNX_DOUBLE);
    auto want = ref_rep->run(ref_feeds);
    auto [rep, feeds] = build(SINGA_ONNX_FLOAT);
    const int32_t saved = rt.cpu()->num_threads();
    for (int threads : {1, 2, 3, 4}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      auto got = rep->run(feeds);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        SCOPED_TRACE(got[o].first);
        ASSERT_EQ(got[o].second.shape(), want[o].second.shape());
        double worst = 0;
        for (int64_t i = 0; i < got[o].second.numel(); ++i)
          worst = std::max(worst, std::fabs(double(got[o].second.data<float>()[i]) - want[o].second.data<double>()[i]));
        EXPECT_LE(worst, 2e-5);
      }
    }
    rt.cpu()->set_num_threads(saved);
  }
}
