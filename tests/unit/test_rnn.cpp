// The LSTM kernel's step split over the pool (plugins/ops_rnn/lstm.cpp,
// parallel_steps: taken at 2+ threads when the hidden size is at least 128)
// against its one-thread loop, with biases, initial states, ragged
// sequence_lens and both directions.
#include "model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace

TEST(LstmSteps, SplitOverThreadsMatchesOneThread) {
  auto& rt = singa::Runtime::instance();
  if (!rt.loaded()) rt.load();
  const int64_t T = 7, N = 3, I = 20, H = 160;  // H not a multiple of 16 * parts
  for (const char* direction : {"forward", "bidirectional"}) {
    SCOPED_TRACE(direction);
    const int64_t D = std::string(direction) == "bidirectional" ? 2 : 1;
    Tensor lens({N}, SINGA_ONNX_INT32);
    lens.data<int32_t>()[0] = 7, lens.data<int32_t>()[1] = 4, lens.data<int32_t>()[2] = 0;
    ModelBuilder m;
    m.input("x", SINGA_ONNX_FLOAT, {T, N, I})
        .initializer("W", random_floats({D, 4 * H, I}, 1, 0.2f))
        .initializer("R", random_floats({D, 4 * H, H}, 2, 0.1f))
        .initializer("B", random_floats({D, 8 * H}, 3, 0.5f))
        .initializer("lens", lens)
        .initializer("h0", random_floats({D, N, H}, 4, 1.f))
        .initializer("c0", random_floats({D, N, H}, 5, 1.f))
        .node("LSTM", {"x", "W", "R", "B", "lens", "h0", "c0"}, {"y", "yh", "yc"}, "lstm");
    auto* a = m.last()->add_attribute();
    a->set_name("hidden_size");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(H);
    auto* dir = m.last()->add_attribute();
    dir->set_name("direction");
    dir->set_type(::onnx::AttributeProto::STRING);
    dir->set_s(direction);
    m.output("y", SINGA_ONNX_FLOAT, {T, D, N, H}).output("yh", SINGA_ONNX_FLOAT, {D, N, H}).output("yc", SINGA_ONNX_FLOAT, {D, N, H});
    auto rep = singa::onnx::prepare_bytes(m.bytes(), {});
    const Tensor x = random_floats({T, N, I}, 6, 1.f);
    const int32_t saved = rt.cpu()->num_threads();
    rt.cpu()->set_num_threads(1);
    auto want = rep->run({x});
    for (int threads : {2, 3, 4}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      rt.cpu()->set_num_threads(threads);
      auto got = rep->run({x});
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        SCOPED_TRACE(got[o].first);
        ASSERT_EQ(got[o].second.shape(), want[o].second.shape());
        double worst = 0;
        for (int64_t i = 0; i < got[o].second.numel(); ++i)
          worst = std::max(worst, double(std::fabs(got[o].second.data<float>()[i] - want[o].second.data<float>()[i])));
        EXPECT_LE(worst, 1e-5);
      }
    }
    rt.cpu()->set_num_threads(saved);
  }
}
