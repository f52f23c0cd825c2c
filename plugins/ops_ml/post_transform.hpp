// post_transform.hpp - the score transforms of ai.onnx.ml estimators
// (attribute post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT).
#ifndef SINGA_OPS_ML_POST_TRANSFORM_HPP
#define SINGA_OPS_ML_POST_TRANSFORM_HPP

#include <singa/kernel.hpp>

#include <cstdint>

namespace singa {
namespace ops {
namespace ml {

enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

// Reads attribute post_transform (default NONE); unknown names are refused.
PostTransform read_post_transform(const sdk::Node& node);

// Applies `t` in place to one row of n scores. SOFTMAX_ZERO is a softmax that
// leaves exact zeros at zero; PROBIT is the inverse of the standard normal CDF.
void apply_post_transform(PostTransform t, double* scores, int64_t n);

double logistic(double x);
double probit(double p);

}  // namespace ml
}  // namespace ops
}  // namespace singa
#endif
