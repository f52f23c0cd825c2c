#include <singa/error.hpp>
#include <singa/loss.hpp>

namespace singa {
namespace loss {

using autograd::apply;
using autograd::apply1;
using autograd::Attrs;

static Variable constant(double v, int32_t dtype) { return Variable(autograd::scalar(v, dtype)); }

Variable softmax_cross_entropy(const Variable& logits, const Variable& labels) {
  const Shape& ls = logits.shape();
  Shape want(ls.begin(), ls.end());
  if (want.size() >= 2) want.erase(want.begin() + 1);  // the class axis
  if (ls.size() < 2 || labels.shape() != want)
    throw Error(SINGA_INVALID_ARGUMENT, "softmax_cross_entropy: logits " + shape_to_string(logits.shape()) +
                                            " and labels " + shape_to_string(labels.shape()) + " do not match");
  return apply("SoftmaxCrossEntropyLoss", {logits, labels}, Attrs().set("reduction", "mean"), 2)[0];
}

Variable softmax_cross_entropy_onehot(const Variable& logits, const Variable& targets) {
  if (logits.shape() != targets.shape())
    throw Error(SINGA_INVALID_ARGUMENT, "softmax_cross_entropy_onehot: logits " + shape_to_string(logits.shape()) +
                                            " and targets " + shape_to_string(targets.shape()) + " differ");
  Variable per_row = autograd::reduce_sum(autograd::mul(targets, autograd::log_softmax(logits, 1)), {1});
  return apply1("Neg", {autograd::reduce_mean(per_row, {0})});
}

Variable mse(const Variable& prediction, const Variable& target) {
  Variable d = autograd::sub(prediction, target);
  return autograd::reduce_mean(autograd::mul(d, d), {});
}

Variable binary_cross_entropy(const Variable& p, const Variable& t, float epsilon) {
  const int32_t dt = p.dtype();
  Variable one = constant(1.0, dt), eps = constant(epsilon, dt);
  Variable lp = apply1("Log", {autograd::add(p, eps)});
  Variable lq = apply1("Log", {autograd::add(autograd::sub(one, p), eps)});
  Variable ll = autograd::add(autograd::mul(t, lp), autograd::mul(autograd::sub(one, t), lq));
  return apply1("Neg", {autograd::reduce_mean(ll, {})});
}

Variable weighted_sum(const std::vector<Variable>& losses, const std::vector<double>& weights) {
  if (losses.empty()) throw Error(SINGA_INVALID_ARGUMENT, "weighted_sum: no losses");
  if (!weights.empty() && weights.size() != losses.size())
    throw Error(SINGA_INVALID_ARGUMENT, "weighted_sum: " + std::to_string(losses.size()) + " losses but " +
                                            std::to_string(weights.size()) + " weights");
  Variable total;
  for (size_t i = 0; i < losses.size(); ++i) {
    if (losses[i].data().numel() != 1)
      throw Error(SINGA_INVALID_ARGUMENT, "weighted_sum: loss " + std::to_string(i) + " has shape " +
                                              shape_to_string(losses[i].shape()) + ", not one value");
    Variable term = losses[i];
    if (!weights.empty() && weights[i] != 1.0) term = autograd::mul(term, constant(weights[i], term.dtype()));
    total = total.defined() ? autograd::add(total, term) : term;
  }
  return total;
}

std::vector<int64_t> argmax_rows(const Tensor& scores) {
  if (scores.ndim() != 2 || (scores.dtype() != SINGA_ONNX_FLOAT && scores.dtype() != SINGA_ONNX_DOUBLE))
    throw Error(SINGA_INVALID_ARGUMENT, "argmax_rows: scores must be float [N, C], got " + shape_to_string(scores.shape()));
  Tensor s = scores.to_host();
  const int64_t N = s.shape()[0], C = s.shape()[1];
  std::vector<int64_t> out(size_t(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    double best = 0;
    for (int64_t c = 0; c < C; ++c) {
      double v = s.dtype() == SINGA_ONNX_FLOAT ? double(s.data<float>()[n * C + c]) : s.data<double>()[n * C + c];
      if (c == 0 || v > best) {
        best = v;
        out[size_t(n)] = c;
      }
    }
  }
  return out;
}

int64_t count_correct(const Tensor& scores, const Tensor& labels) {
  std::vector<int64_t> pred = argmax_rows(scores);
  if (labels.dtype() != SINGA_ONNX_INT64 || labels.numel() != int64_t(pred.size()))
    throw Error(SINGA_INVALID_ARGUMENT, "count_correct: labels must be int64 with one value per row");
  int64_t n = 0;
  for (size_t i = 0; i < pred.size(); ++i) n += pred[i] == labels.data<int64_t>()[i];
  return n;
}

}  // namespace loss
}  // namespace singa
