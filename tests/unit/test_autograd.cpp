// Gradients of the autograd rules against central differences, in float64.
#include "grad_check.hpp"
#include "test_util.hpp"
#include <singa/autograd.hpp>
#include <singa/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using singa::Shape;
using singa::Tensor;
using namespace singa::autograd;

namespace {

using Fn = std::function<Variable(const std::vector<Variable>&)>;

using testing_util::check_grad;
using testing_util::ensure_loaded;
using testing_util::random_doubles;

// Values well away from 0 (for ops with a kink there) with random signs.
Tensor away_from_zero(const Shape& s, unsigned seed = 2) {
  Tensor t = random_doubles(s, 0.2, 1.0, seed);
  std::mt19937 g(seed + 100);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (g() & 1) t.data<double>()[i] = -t.data<double>()[i];
  return t;
}

Fn unary(const std::string& op, Attrs a = {}) {
  return [op, a](const std::vector<Variable>& v) { return apply1(op, {v[0]}, a); };
}

Fn binary(const std::string& op) {
  return [op](const std::vector<Variable>& v) { return apply1(op, {v[0], v[1]}); };
}

}  // namespace

TEST(AutogradTest, BroadcastingArithmeticReducesToInputShapes) {
  for (const char* op : {"Add", "Sub", "Mul"}) {
    SCOPED_TRACE(op);
    check_grad(binary(op), {random_doubles({2, 3}), random_doubles({3}, -1, 1, 3)});
    check_grad(binary(op), {random_doubles({2, 1, 4}), random_doubles({3, 1}, -1, 1, 4)});
  }
  check_grad(binary("Div"), {random_doubles({2, 3}), random_doubles({2, 1}, 0.5, 2.0, 5)});
}

TEST(AutogradTest, ElementwiseMath) {
  check_grad(unary("Neg"), {random_doubles({5})});
  check_grad(unary("Exp"), {random_doubles({5})});
  check_grad(unary("Log"), {random_doubles({5}, 0.5, 2.0)});
  check_grad(unary("Sqrt"), {random_doubles({5}, 0.5, 2.0)});
  check_grad(binary("Pow"), {random_doubles({4}, 0.5, 2.0), random_doubles({4}, -1, 2, 9)});
}

TEST(AutogradTest, MatMulWithBatchBroadcastAndVectors) {
  check_grad(binary("MatMul"), {random_doubles({3, 4}), random_doubles({4, 5}, -1, 1, 2)});
  check_grad(binary("MatMul"), {random_doubles({2, 3, 4}), random_doubles({4, 5}, -1, 1, 2)});
  check_grad(binary("MatMul"), {random_doubles({4}), random_doubles({2, 4, 3}, -1, 1, 2)});
  check_grad(binary("MatMul"), {random_doubles({2, 3, 4}), random_doubles({4}, -1, 1, 2)});
}

TEST(AutogradTest, GemmEveryTransposeWithBroadcastBias) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(std::to_string(ta) + std::to_string(tb));
      Attrs a;
      a.set("transA", int64_t(ta)).set("transB", int64_t(tb)).set("alpha", 0.5f).set("beta", 2.0f);
      Fn f = [a](const std::vector<Variable>& v) { return apply1("Gemm", {v[0], v[1], v[2]}, a); };
      check_grad(f, {random_doubles(ta ? Shape{4, 3} : Shape{3, 4}), random_doubles(tb ? Shape{5, 4} : Shape{4, 5}, -1, 1, 2),
                     random_doubles({5}, -1, 1, 3)});
    }
}

TEST(AutogradTest, Activations) {
  check_grad(unary("Relu"), {away_from_zero({3, 4})});
  check_grad(unary("Sigmoid"), {random_doubles({3, 4})});
  check_grad(unary("Tanh"), {random_doubles({3, 4})});
  check_grad(unary("LeakyRelu", Attrs().set("alpha", 0.1f)), {away_from_zero({3, 4})});
  check_grad(unary("Elu", Attrs().set("alpha", 0.7f)), {away_from_zero({3, 4})});
  check_grad(unary("Softplus"), {random_doubles({3, 4})});
}

TEST(AutogradTest, SoftmaxFamilyAlongAnyAxis) {
  for (int64_t axis : {-1, 0, 1}) {
    SCOPED_TRACE(axis);
    check_grad(unary("Softmax", Attrs().set("axis", axis)), {random_doubles({2, 3, 4})});
    check_grad(unary("LogSoftmax", Attrs().set("axis", axis)), {random_doubles({2, 3, 4})});
  }
}

TEST(AutogradTest, ConvWithGroupsStridesPadsDilations) {
  Attrs a;
  a.set("group", int64_t(2)).set("strides", std::vector<int64_t>{2, 1}).set("pads", std::vector<int64_t>{1, 0, 1, 2})
      .set("dilations", std::vector<int64_t>{1, 2});
  Fn f = [a](const std::vector<Variable>& v) { return apply1("Conv", {v[0], v[1], v[2]}, a); };
  check_grad(f, {random_doubles({2, 4, 5, 6}), random_doubles({6, 2, 3, 2}, -1, 1, 2), random_doubles({6}, -1, 1, 3)});
  Fn plain = [](const std::vector<Variable>& v) { return apply1("Conv", {v[0], v[1]}); };
  check_grad(plain, {random_doubles({1, 1, 6, 6}), random_doubles({3, 1, 3, 3}, -1, 1, 2)});
  // 1-D, with the input gradient only.
  check_grad(plain, {random_doubles({2, 3, 7}), random_doubles({2, 3, 3}, -1, 1, 2)}, {true, false});
}

TEST(AutogradTest, Pooling) {
  // Distinct values keep the max of each window unique.
  Tensor x({2, 2, 5, 5}, SINGA_ONNX_DOUBLE);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<double>()[i] = double((i * 37) % 101) / 50.0;
  Attrs mp;
  mp.set("kernel_shape", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2})
      .set("pads", std::vector<int64_t>{0, 0, 1, 1});
  check_grad(unary("MaxPool", mp), {x});
  Attrs ap;
  ap.set("kernel_shape", std::vector<int64_t>{3, 3}).set("strides", std::vector<int64_t>{2, 2})
      .set("pads", std::vector<int64_t>{1, 1, 1, 1});
  check_grad(unary("AveragePool", ap), {random_doubles({2, 2, 5, 5})});
  check_grad(unary("AveragePool", Attrs(ap).set("count_include_pad", int64_t(1))), {random_doubles({2, 2, 5, 5})});
  check_grad(unary("GlobalAveragePool"), {random_doubles({2, 3, 4, 4})});
}

// layer::Sequential's fused Conv -> Relu -> MaxPool (domain ai.singa).
TEST(AutogradTest, FusedConvReluMaxPool) {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3}).set("pads", std::vector<int64_t>{1, 1, 1, 1})
      .set("pool_kernel_shape", std::vector<int64_t>{2, 2}).set("pool_strides", std::vector<int64_t>{2, 2});
  Fn f = [a](const std::vector<Variable>& v) { return apply("ConvReluMaxPool", v, a, 2, "ai.singa")[0]; };
  check_grad(f, {random_doubles({2, 3, 6, 7}), random_doubles({4, 3, 3, 3}, -1, 1, 2), random_doubles({4}, -1, 1, 3)});
  Attrs overlapping = Attrs(a).set("pool_kernel_shape", std::vector<int64_t>{3, 3});
  Fn g = [overlapping](const std::vector<Variable>& v) {
    return apply("ConvReluMaxPool", v, overlapping, 2, "ai.singa")[0];
  };
  check_grad(g, {random_doubles({1, 2, 7, 7}, -1, 1, 4), random_doubles({3, 2, 3, 3}, -1, 1, 5)});
}

TEST(AutogradTest, BatchNormalizationTrainingAndInference) {
  Tensor mean = random_doubles({3}, -0.5, 0.5, 4), var = random_doubles({3}, 0.5, 1.5, 5);
  Fn train = [&](const std::vector<Variable>& v) {
    return apply("BatchNormalization", {v[0], v[1], v[2], Variable(mean), Variable(var)},
                 Attrs().set("training_mode", int64_t(1)).set("epsilon", 1e-3f), 3)[0];
  };
  check_grad(train, {random_doubles({4, 3, 2, 2}), random_doubles({3}, 0.5, 1.5, 2), random_doubles({3}, -1, 1, 3)}, {}, 1e-5);
  Fn infer = [&](const std::vector<Variable>& v) {
    return apply1("BatchNormalization", {v[0], v[1], v[2], Variable(mean), Variable(var)});
  };
  check_grad(infer, {random_doubles({4, 3, 2, 2}), random_doubles({3}, 0.5, 1.5, 2), random_doubles({3}, -1, 1, 3)});
}

TEST(AutogradTest, ShapeOps) {
  check_grad([](const std::vector<Variable>& v) { return reshape(v[0], {4, 3}); }, {random_doubles({2, 6})});
  check_grad([](const std::vector<Variable>& v) { return flatten(v[0], 2); }, {random_doubles({2, 3, 2, 2})});
  check_grad([](const std::vector<Variable>& v) { return transpose(v[0], {2, 0, 1}); }, {random_doubles({2, 3, 4})});
  check_grad([](const std::vector<Variable>& v) { return concat({v[0], v[1]}, 1); },
             {random_doubles({2, 3}), random_doubles({2, 2}, -1, 1, 2)});
  check_grad([](const std::vector<Variable>& v) {
    auto parts = apply("Split", {v[0], Variable(int64s({1, 3}))}, Attrs().set("axis", int64_t(1)), 2);
    return mul(parts[1], parts[1]);
  }, {random_doubles({2, 4})});
  check_grad([](const std::vector<Variable>& v) {
    return apply1("Slice", {v[0], Variable(int64s({1, -1})), Variable(int64s({4, 0})), Variable(int64s({1, 0})),
                            Variable(int64s({2, -2}))});
  }, {random_doubles({3, 5})});
  check_grad([](const std::vector<Variable>& v) {
    Tensor idx = Tensor::from_vector<int64_t>({2, 2}, SINGA_ONNX_INT64, {0, 2, 2, -1});
    return apply1("Gather", {v[0], Variable(idx)}, Attrs().set("axis", int64_t(1)));
  }, {random_doubles({2, 4})});
  check_grad([](const std::vector<Variable>& v) { return apply1("Expand", {v[0], Variable(int64s({2, 3}))}); },
             {random_doubles({3})});
}

TEST(AutogradTest, Reductions) {
  check_grad([](const std::vector<Variable>& v) { return reduce_sum(v[0], {1}); }, {random_doubles({2, 3, 4})});
  check_grad([](const std::vector<Variable>& v) { return reduce_sum(v[0], {}, true); }, {random_doubles({2, 3})});
  check_grad([](const std::vector<Variable>& v) { return reduce_mean(v[0], {0, 2}, true); }, {random_doubles({2, 3, 4})});
  check_grad([](const std::vector<Variable>& v) { return reduce_mean(v[0], {}); }, {random_doubles({2, 3})});
}

TEST(AutogradTest, SoftmaxCrossEntropyLoss) {
  Tensor labels = Tensor::from_vector<int64_t>({4}, SINGA_ONNX_INT64, {0, 2, 1, 2});
  for (const char* red : {"mean", "sum", "none"}) {
    SCOPED_TRACE(red);
    check_grad([&](const std::vector<Variable>& v) {
      return apply("SoftmaxCrossEntropyLoss", {v[0], Variable(labels)}, Attrs().set("reduction", red), 2)[0];
    }, {random_doubles({4, 3})});
  }
  Tensor weights = random_doubles({3}, 0.5, 1.5, 8);
  check_grad([&](const std::vector<Variable>& v) {
    return apply1("SoftmaxCrossEntropyLoss", {v[0], Variable(labels), Variable(weights)},
                  Attrs().set("ignore_index", int64_t(1)));
  }, {random_doubles({4, 3})});
}

TEST(AutogradTest, DropoutIsSeededAndScalesTheKeptGradient) {
  ensure_loaded();
  Tensor on(Shape{}, SINGA_ONNX_BOOL);
  *on.data<bool>() = true;
  auto run = [&](Variable& x) {
    return apply("Dropout", {x, Variable(scalar(0.25, SINGA_ONNX_DOUBLE)), Variable(on)}, Attrs().set("seed", int64_t(11)), 2);
  };
  Variable x(random_doubles({64}, 0.5, 1.0), true);
  auto out = run(x);
  backward(out[0], Tensor::from_vector<double>({64}, SINGA_ONNX_DOUBLE, std::vector<double>(64, 1.0)));
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    bool m = out[1].data().data<bool>()[i];
    kept += m;
    EXPECT_DOUBLE_EQ(x.grad().data<double>()[i], m ? 1.0 / 0.75 : 0.0);
    EXPECT_DOUBLE_EQ(out[0].data().data<double>()[i], m ? x.data().data<double>()[i] / 0.75 : 0.0);
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 64);
}

TEST(AutogradTest, GradientsAccumulateOverUsesAndCalls) {
  ensure_loaded();
  Variable x(Tensor::from_vector<double>({2}, SINGA_ONNX_DOUBLE, {3.0, -2.0}), true);
  Variable y = reduce_sum(add(mul(x, x), x), {});  // d/dx = 2x + 1
  backward(y);
  EXPECT_DOUBLE_EQ(x.grad().data<double>()[0], 7.0);
  EXPECT_DOUBLE_EQ(x.grad().data<double>()[1], -3.0);
  backward(reduce_sum(x, {}));  // a second backward adds 1
  EXPECT_DOUBLE_EQ(x.grad().data<double>()[0], 8.0);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradTest, NoGradGuardRecordsNothing) {
  ensure_loaded();
  Variable x(random_doubles({3}), true);
  NoGradGuard g;
  Variable y = relu(x);
  EXPECT_FALSE(y.creator());
  EXPECT_FALSE(y.requires_grad());
}

TEST(AutogradTest, ClearErrors) {
  ensure_loaded();
  Variable x(random_doubles({3}), true);
  Variable y = relu(x);
  try {
    backward(y);
    FAIL() << "a non-scalar loss without seed was accepted";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
  }
  try {
    apply1("NoSuchOp", {x});
    FAIL();
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos) << e.what();
  }
  Variable c(random_doubles({3}));
  EXPECT_THROW(backward(reduce_sum(c, {})), singa::Error);  // nothing requires a gradient
  // An op without a rule fails at backward time, naming it.
  Variable f = reduce_sum(apply1("Bernoulli", {apply1("Sigmoid", {x})}), {});
  try {
    backward(f);
    FAIL();
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Bernoulli"), std::string::npos) << e.what();
  }
}

TEST(AutogradTest, TrigonometricAndHyperbolic) {
  for (const char* op : {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh"}) {
    SCOPED_TRACE(op);
    check_grad(unary(op), {random_doubles({6}, -0.8, 0.8)});
  }
  check_grad(unary("Acosh"), {random_doubles({6}, 1.2, 3.0)});
}

TEST(AutogradTest, MoreActivations) {
  check_grad(unary("Reciprocal"), {random_doubles({5}, 0.5, 2.0)});
  check_grad(unary("Softsign"), {random_doubles({6})});
  check_grad(unary("Erf"), {random_doubles({6})});
  check_grad(unary("Selu", Attrs().set("alpha", 1.5f).set("gamma", 1.2f)), {away_from_zero({8})});
  check_grad(unary("Selu"), {away_from_zero({8})});
  // 0.2x + 0.5 leaves [0, 1] at |x| > 2.5: values on both sides of the kinks.
  check_grad(unary("HardSigmoid"), {random_doubles({10}, -4, 4)});
  check_grad(unary("HardSigmoid", Attrs().set("alpha", 0.5f).set("beta", 0.1f)), {random_doubles({10}, -3, 3, 4)});
  // Per-channel slope [C,1,1] broadcast onto [N,C,H,W], and a scalar slope.
  check_grad(binary("PRelu"), {away_from_zero({2, 3, 2, 2}), random_doubles({3, 1, 1}, 0.1, 0.5, 5)});
  check_grad(binary("PRelu"), {away_from_zero({4}), random_doubles({1}, 0.1, 0.5, 5)});
}

TEST(AutogradTest, FlatOpsGiveZeroGradients) {
  for (const char* op : {"Sign", "Ceil", "Floor", "Round"}) {
    SCOPED_TRACE(op);
    // Values away from the steps, where the derivative is 0.
    Tensor x = random_doubles({5}, 0.1, 0.4);
    check_grad(unary(op), {x});
  }
}

TEST(AutogradTest, ClipWithBoundsAsInputsAndAttributes) {
  // Opset 13: min and max are inputs, and collect the gradient of what was clipped.
  Fn clip13 = [](const std::vector<Variable>& v) { return apply1("Clip", {v[0], v[1], v[2]}); };
  Tensor lo = Tensor::from_vector<double>({}, SINGA_ONNX_DOUBLE, {-0.45});
  Tensor hi = Tensor::from_vector<double>({}, SINGA_ONNX_DOUBLE, {0.35});
  check_grad(clip13, {random_doubles({12}), lo, hi});
  // Only a max; values straddle it.
  Fn clip_max = [](const std::vector<Variable>& v) { return apply1("Clip", {v[0], Variable(), v[1]}); };
  check_grad(clip_max, {random_doubles({12}, -1, 1, 3), hi});
  // Opset 6: attributes.
  Fn clip6 = [](const std::vector<Variable>& v) {
    return apply("Clip", {v[0]}, Attrs().set("min", -0.3f).set("max", 0.6f), 1, "", 6)[0];
  };
  check_grad(clip6, {random_doubles({12}, -1, 1, 4)});
}

TEST(AutogradTest, VariadicSumMeanMaxMinWithBroadcast) {
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    Fn f = [op](const std::vector<Variable>& v) { return apply1(op, {v[0], v[1], v[2]}); };
    check_grad(f, {random_doubles({2, 3}, -1, 1, 1), random_doubles({3}, -1, 1, 2), random_doubles({2, 1}, -1, 1, 3)});
    Fn one = [op](const std::vector<Variable>& v) { return apply1(op, {v[0]}); };
    check_grad(one, {random_doubles({4})});
  }
}

TEST(AutogradTest, MaxSharesTies) {
  ensure_loaded();
  Variable a(Tensor::from_vector<double>({2}, SINGA_ONNX_DOUBLE, {1.0, 2.0}), true);
  Variable b(Tensor::from_vector<double>({2}, SINGA_ONNX_DOUBLE, {1.0, 3.0}), true);
  backward(reduce_sum(apply1("Max", {a, b}), {}));
  EXPECT_DOUBLE_EQ(a.grad().data<double>()[0], 0.5);
  EXPECT_DOUBLE_EQ(b.grad().data<double>()[0], 0.5);
  EXPECT_DOUBLE_EQ(a.grad().data<double>()[1], 0.0);
  EXPECT_DOUBLE_EQ(b.grad().data<double>()[1], 1.0);
}

TEST(AutogradTest, WhereAndTile) {
  Tensor cond = Tensor::from_vector<uint8_t>({2, 3}, SINGA_ONNX_BOOL, {1, 0, 1, 0, 0, 1});
  Fn where = [cond](const std::vector<Variable>& v) { return apply1("Where", {Variable(cond), v[0], v[1]}); };
  check_grad(where, {random_doubles({2, 3}), random_doubles({3}, -1, 1, 2)});
  Tensor reps = Tensor::from_vector<int64_t>({3}, SINGA_ONNX_INT64, {2, 1, 3});
  Fn tile = [reps](const std::vector<Variable>& v) { return apply1("Tile", {v[0], Variable(reps)}); };
  check_grad(tile, {random_doubles({2, 3, 2})});
}

TEST(AutogradTest, OtherReductions) {
  // Distinct values, so that max/min are unique.
  Tensor x = random_doubles({3, 4}, -1, 1, 11);
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    check_grad(unary(op, Attrs().set("axes", std::vector<int64_t>{1}).set("keepdims", int64_t(0))), {x});
    check_grad(unary(op, Attrs().set("axes", std::vector<int64_t>{0}).set("keepdims", int64_t(1))), {x});
    check_grad(unary(op, Attrs().set("keepdims", int64_t(0))), {x});
  }
  check_grad(unary("ReduceL1", Attrs().set("axes", std::vector<int64_t>{-1})), {away_from_zero({3, 4})});
}
