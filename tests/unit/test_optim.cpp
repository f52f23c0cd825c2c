// Optimizer updates against their formulas, schedules, and state round trips.
#include <singa/optim.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>

using singa::Tensor;
using singa::autograd::Variable;
using namespace singa::optim;

namespace {

Variable param(std::vector<double> v) {
  return Variable(Tensor::from_vector<double>({int64_t(v.size())}, SINGA_ONNX_DOUBLE, v), true, "p");
}
void set_grad(Variable& p, std::vector<double> g) {
  p.set_grad(Tensor::from_vector<double>({int64_t(g.size())}, SINGA_ONNX_DOUBLE, g));
}
double at(const Variable& p, int i) { return p.data().data<double>()[i]; }

}  // namespace

TEST(OptimTest, PlainSgdWithWeightDecay) {
  Variable p = param({1.0, -2.0});
  SGD opt({{"p", p}}, 0.1, 0.0, 0.5);
  set_grad(p, {0.3, 0.4});
  opt.step();
  EXPECT_DOUBLE_EQ(at(p, 0), 1.0 - 0.1 * (0.3 + 0.5 * 1.0));
  EXPECT_DOUBLE_EQ(at(p, 1), -2.0 - 0.1 * (0.4 + 0.5 * -2.0));
}

TEST(OptimTest, MomentumAndNesterov) {
  Variable p = param({1.0}), q = param({1.0});
  SGD m({{"p", p}}, 0.1, 0.9), n({{"q", q}}, 0.1, 0.9, 0.0, true);
  for (double g : {1.0, 2.0}) {
    set_grad(p, {g});
    set_grad(q, {g});
    m.step();
    n.step();
  }
  // v1 = 1, v2 = 0.9 + 2 = 2.9; plain: p = 1 - 0.1 (1 + 2.9)
  EXPECT_NEAR(at(p, 0), 1.0 - 0.1 * (1.0 + 2.9), 1e-12);
  // Nesterov: steps g + 0.9 v: (1 + 0.9) and (2 + 0.9 * 2.9)
  EXPECT_NEAR(at(q, 0), 1.0 - 0.1 * (1.9 + 2.0 + 2.61), 1e-12);
  EXPECT_THROW(SGD({{"p", p}}, 0.1, 0.0, 0.0, true), singa::Error);
}

TEST(OptimTest, AdamFirstStepMovesByLrTimesSign) {
  Variable p = param({1.0, 1.0});
  Adam opt({{"p", p}}, 0.01);
  set_grad(p, {5.0, -0.001});
  opt.step();
  EXPECT_NEAR(at(p, 0), 1.0 - 0.01, 1e-6);
  EXPECT_NEAR(at(p, 1), 1.0 + 0.01, 1e-4);
}

TEST(OptimTest, AdamWDecaysDecoupledFromTheGradient) {
  Variable p = param({2.0});
  AdamW opt({{"p", p}}, 0.1, 0.9, 0.999, 1e-8, 0.5);
  set_grad(p, {1.0});
  opt.step();
  // p * (1 - lr wd) then the Adam step of size lr.
  EXPECT_NEAR(at(p, 0), 2.0 * (1 - 0.05) - 0.1, 1e-6);
}

TEST(OptimTest, EachOptimizerMinimisesAQuadratic) {
  // f(p) = sum((p - 3)^2), gradient 2 (p - 3).
  auto run = [](Optimizer& opt, Variable& p, int steps) {
    for (int i = 0; i < steps; ++i) {
      std::vector<double> g;
      for (int k = 0; k < 2; ++k) g.push_back(2 * (at(p, k) - 3.0));
      set_grad(p, g);
      opt.step();
      opt.zero_grad();
    }
  };
  Variable a = param({0, 10}), b = param({0, 10}), c = param({0, 10});
  SGD s({{"a", a}}, 0.05, 0.9);
  Adam ad({{"b", b}}, 0.3);
  AdamW aw({{"c", c}}, 0.3, 0.9, 0.999, 1e-8, 0.0);
  run(s, a, 300);
  run(ad, b, 300);
  run(aw, c, 300);
  for (const Variable* v : {&a, &b, &c})
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(at(*v, k), 3.0, 1e-2);
}

TEST(OptimTest, ParametersWithoutGradientsAreLeftAlone) {
  Variable p = param({1.0}), frozen = param({1.0});
  frozen.set_requires_grad(false);
  SGD opt({{"p", p}, {"f", frozen}}, 1.0);
  set_grad(frozen, {1.0});
  opt.step();
  EXPECT_EQ(at(p, 0), 1.0);
  EXPECT_EQ(at(frozen, 0), 1.0);
}

TEST(OptimTest, StateRoundTripContinuesIdentically) {
  Variable p = param({1.0}), q = param({1.0});
  Adam a({{"w", p}}, 0.1);
  set_grad(p, {1.0});
  a.step();
  Adam b({{"w", q}}, 0.5);
  q.set_data(p.data().clone());
  b.load_state(a.state());
  EXPECT_EQ(b.steps(), 1);
  EXPECT_DOUBLE_EQ(b.lr(), 0.1);
  set_grad(p, {-2.0});
  set_grad(q, {-2.0});
  a.step();
  b.step();
  EXPECT_DOUBLE_EQ(at(p, 0), at(q, 0));
}

TEST(OptimTest, Schedules) {
  StepLR s(1.0, 2, 0.5);
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1), 1.0);
  EXPECT_DOUBLE_EQ(s.at(2), 0.5);
  EXPECT_DOUBLE_EQ(s.at(5), 0.25);
  CosineLR c(1.0, 10, 0.1);
  EXPECT_DOUBLE_EQ(c.at(0), 1.0);
  EXPECT_NEAR(c.at(5), 0.55, 1e-12);
  EXPECT_NEAR(c.at(10), 0.1, 1e-12);
  EXPECT_NEAR(c.at(20), 0.1, 1e-12);
}
