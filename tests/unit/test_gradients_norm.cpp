// Gradients written through the plugins' gradient hooks (gradient.hpp) for
// the normalisations and Gelu, against float64 central differences.
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

using testing_util::check_grad;
using testing_util::ensure_loaded;
using testing_util::onnx_op;
using testing_util::random_doubles;

TEST(GradientsNorm, LayerNormalizationOverTheLastAxes) {
  check_grad(onnx_op("LayerNormalization", 17),
             {random_doubles({2, 3, 4}, -1, 1, 1), random_doubles({4}, 0.5, 1.5, 2), random_doubles({4}, -1, 1, 3)});
  check_grad(onnx_op("LayerNormalization", 17, Attrs().set("axis", int64_t(1)).set("epsilon", 1e-3f)),
             {random_doubles({2, 3, 4}, -1, 1, 4), random_doubles({3, 4}, 0.5, 1.5, 5)});
}

TEST(GradientsNorm, RMSNormalization) {
  check_grad(onnx_op("RMSNormalization", 23), {random_doubles({3, 5}, -1, 1, 6), random_doubles({5}, 0.5, 1.5, 7)});
  check_grad(onnx_op("RMSNormalization", 23, Attrs().set("axis", int64_t(-2))),
             {random_doubles({2, 3, 4}, -1, 1, 8), random_doubles({3, 4}, 0.5, 1.5, 9)});
}

TEST(GradientsNorm, GroupNormalizationPerChannelAndPerGroup) {
  check_grad(onnx_op("GroupNormalization", 21, Attrs().set("num_groups", int64_t(2))),
             {random_doubles({2, 4, 3}, -1, 1, 10), random_doubles({4}, 0.5, 1.5, 11), random_doubles({4}, -1, 1, 12)});
  check_grad(onnx_op("GroupNormalization", 18, Attrs().set("num_groups", int64_t(2))),
             {random_doubles({2, 4, 2, 2}, -1, 1, 13), random_doubles({2}, 0.5, 1.5, 14), random_doubles({2}, -1, 1, 15)});
}

TEST(GradientsNorm, GeluExactAndTanh) {
  check_grad(onnx_op("Gelu", 20), {random_doubles({3, 4}, -3, 3, 16)});
  check_grad(onnx_op("Gelu", 20, Attrs().set("approximate", "tanh")), {random_doubles({3, 4}, -3, 3, 17)});
}

// The gradients are found on the forward kernels' hooks, and an op without
// one is named when backward reaches it.
TEST(GradientsNorm, HooksAreWhereGradientsComeFrom) {
  ensure_loaded();
  EXPECT_TRUE(has_gradient("LayerNormalization"));
  EXPECT_TRUE(has_gradient("Gelu"));
  EXPECT_TRUE(has_gradient("ConvReluMaxPool", "ai.singa"));
  EXPECT_FALSE(has_gradient("Bernoulli"));
  EXPECT_FALSE(has_gradient("NoSuchOp"));
  Variable x(random_doubles({3}, -1, 1, 1), true);
  try {
    backward(reduce_sum(apply1("Bernoulli", {apply1("Sigmoid", {x})}), {}));
    FAIL() << "backward through Bernoulli succeeded";
  } catch (const singa::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Bernoulli'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no gradient"), std::string::npos) << e.what();
  }
}

}  // namespace
