// loss.hpp - losses as recorded ops (each returns a scalar Variable).
#ifndef SINGA_LOSS_HPP
#define SINGA_LOSS_HPP

#include <singa/autograd.hpp>

namespace singa {
namespace loss {

using autograd::Variable;

// Mean softmax cross-entropy of logits [N, C] against class indices [N]
// (int32/int64), one ONNX SoftmaxCrossEntropyLoss. Per-position classes, as
// in PyTorch: logits [N, C, d1, ...] against indices [N, d1, ...] (a
// token classifier's [N, C, T] against [N, T]).
Variable softmax_cross_entropy(const Variable& logits, const Variable& labels);
// The same against one-hot (or soft) targets [N, C].
Variable softmax_cross_entropy_onehot(const Variable& logits, const Variable& targets);
// Mean squared error.
Variable mse(const Variable& prediction, const Variable& target);
// Mean binary cross-entropy of probabilities in (0, 1) against targets in [0, 1].
Variable binary_cross_entropy(const Variable& probability, const Variable& target, float epsilon = 1e-7f);

// The sum of several losses (one per output of a multi-output model), loss
// i times weights[i] (every weight 1 when `weights` is empty).
Variable weighted_sum(const std::vector<Variable>& losses, const std::vector<double>& weights = {});

// Class index per row of [N, C] scores, and how many equal `labels` (int64 [N]).
std::vector<int64_t> argmax_rows(const Tensor& scores);
int64_t count_correct(const Tensor& scores, const Tensor& labels);

}  // namespace loss
}  // namespace singa
#endif
