// loss.hpp - losses as recorded ops (each returns a scalar Variable).
#ifndef SINGA_LOSS_HPP
#define SINGA_LOSS_HPP

#include <singa/autograd.hpp>

namespace singa {
namespace loss {

using autograd::Variable;

// Mean softmax cross-entropy of logits [N, C] against class indices [N]
// (int32/int64), one ONNX SoftmaxCrossEntropyLoss.
Variable softmax_cross_entropy(const Variable& logits, const Variable& labels);
// The same against one-hot (or soft) targets [N, C].
Variable softmax_cross_entropy_onehot(const Variable& logits, const Variable& targets);
// Mean squared error.
Variable mse(const Variable& prediction, const Variable& target);
// Mean binary cross-entropy of probabilities in (0, 1) against targets in [0, 1].
Variable binary_cross_entropy(const Variable& probability, const Variable& target, float epsilon = 1e-7f);

// Class index per row of [N, C] scores, and how many equal `labels` (int64 [N]).
std::vector<int64_t> argmax_rows(const Tensor& scores);
int64_t count_correct(const Tensor& scores, const Tensor& labels);

}  // namespace loss
}  // namespace singa
#endif
