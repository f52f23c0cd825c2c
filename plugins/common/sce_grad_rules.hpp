// sce_grad_rules.hpp - the host side of ai.singa.grad's
// SoftmaxCrossEntropyLossGrad(dLoss, log_prob, labels[, weights]), shared by
// the CPU and CUDA kernels (each had a copy): the attributes, the shape and
// label checks, and the mean's denominator. Errors are plain sdk::fail
// messages; the host prefixes them with the model, node and op.
#ifndef SINGA_PLUGINS_SCE_GRAD_RULES_HPP
#define SINGA_PLUGINS_SCE_GRAD_RULES_HPP

#include "broadcast.hpp"  // shape_str

#include <singa/kernel.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace ops {

class SceGradRules {
 public:
  // log_prob is [N, C, D...] seen as [N, C, D]; labels hold N x D classes.
  struct Plan {
    int64_t N = 0, C = 0, D = 0;
    std::vector<int64_t> labels;
    double denom = 0;  // the mean's divisor: the (weighted) count of labels not ignored
  };

  explicit SceGradRules(const sdk::Node& node)
      : reduction_(node.attr_string("reduction", "mean")), has_ignore_(node.has_attr("ignore_index")),
        ignore_(node.attr_int("ignore_index", 0)) {
    if (reduction_ != "mean" && reduction_ != "sum" && reduction_ != "none")
      node.fail("attribute reduction must be none, sum or mean, got '" + reduction_ + "'");
  }

  bool per_item() const { return reduction_ == "none"; }
  bool mean() const { return reduction_ == "mean"; }
  bool ignored(int64_t label) const { return has_ignore_ && label == ignore_; }
  bool has_ignore() const { return has_ignore_; }
  int64_t ignore_index() const { return ignore_; }

  // Checks the inputs and reads the labels (a host tensor); `weights` were
  // read by the caller (empty when absent).
  Plan plan(const sdk::Tensor& dl, const sdk::Tensor& lp, const sdk::Tensor& lab, const std::vector<double>& weights) const {
    const sdk::Shape ls = lp.shape();
    sdk::check(ls.size() >= 2, "log_prob must be [N, C, ...]");
    Plan p;
    p.N = ls[0], p.C = ls[1], p.D = lp.numel() / std::max<int64_t>(1, p.N * p.C);
    sdk::check(lab.numel() == p.N * p.D, "labels must hold N x D values for log_prob " + shape_str(ls));
    sdk::check(lab.dtype() == SINGA_ONNX_INT64 || lab.dtype() == SINGA_ONNX_INT32, "labels must be int32 or int64");
    sdk::check(per_item() ? dl.numel() == p.N * p.D : dl.numel() == 1, "dLoss has the wrong number of values");
    sdk::check(weights.empty() || int64_t(weights.size()) == p.C, "weights must hold one value per class");
    p.labels.resize(size_t(p.N * p.D));
    for (int64_t i = 0; i < p.N * p.D; ++i) p.labels[size_t(i)] = lab.int_at(i);
    for (int64_t l : p.labels) {
      if (ignored(l)) continue;
      sdk::check(l >= 0 && l < p.C, "label " + std::to_string(l) + " outside [0, " + std::to_string(p.C) + ")");
      p.denom += weights.empty() ? 1.0 : weights[size_t(l)];
    }
    return p;
  }

 private:
  std::string reduction_;
  bool has_ignore_;
  int64_t ignore_;
};

}  // namespace ops
}  // namespace singa
#endif
