// tree_ops.cpp - TreeEnsembleRegressor and TreeEnsembleClassifier: the forest
// of tree_ensemble.hpp plus base values, post transform and (for the
// classifier) the choice of a label. Rows are independent, so they are
// evaluated in parallel.
#include "features.hpp"
#include "post_transform.hpp"
#include "registry.hpp"
#include "tree_ensemble.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

// Rows per parallel task and per cache block: a forest of hundreds of trees
// costs microseconds a row, so a few dozen rows outweigh the scheduling, and a
// block's features and scores stay in L1 while the trees stream past.
constexpr int64_t kRowGrain = 64;

void check_features(const TreeEnsemble& forest, const Features& f) {
  if (forest.max_feature() >= f.cols)
    sdk::fail("a branch reads feature " + std::to_string(forest.max_feature()) + " but X has only " +
              std::to_string(f.cols) + " columns");
}

std::vector<double> read_base_values(const sdk::Node& node, int64_t n, bool allow_one) {
  std::vector<double> base = attr_reals(node, "base_values");
  if (!base.empty() && int64_t(base.size()) != n && !(allow_one && base.size() == 1))
    node.fail("base_values has " + std::to_string(base.size()) + " values, expected " + std::to_string(n));
  return base;
}

int64_t read_n_targets(const sdk::Node& node) {
  const int64_t n = node.attr_int("n_targets", 1);
  if (n <= 0) node.fail("n_targets is " + std::to_string(n) + "; it must be positive");
  return n;
}

class TreeRegressor {
 public:
  explicit TreeRegressor(const sdk::Node& node)
      : n_targets_(read_n_targets(node)),
        forest_(node, "target", n_targets_),
        base_(read_base_values(node, n_targets_, false)),
        post_(read_post_transform(node)) {}

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "TreeEnsembleRegressor");
    check_features(forest_, f);
    float* y = ctx.output(0, {f.rows, n_targets_}, SINGA_ONNX_FLOAT).data<float>();
    const int64_t T = n_targets_;
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      std::vector<double> scores(static_cast<size_t>(kRowGrain * T));
      std::vector<uint8_t> has(static_cast<size_t>(kRowGrain * T));
      for (int64_t b0 = b; b0 < e; b0 += kRowGrain) {
        const int64_t n = std::min(kRowGrain, e - b0);
        forest_.evaluate(f.row(b0), n, f.cols, scores.data(), has.data());
        for (int64_t i = 0; i < n; ++i) {
          double* s = scores.data() + i * T;
          for (int64_t k = 0; k < T; ++k) s[k] += base_.empty() ? 0.0 : base_[size_t(k)];
          apply_post_transform(post_, s, T);
          for (int64_t k = 0; k < T; ++k) y[(b0 + i) * T + k] = float(s[k]);
        }
      }
    });
  }

 private:
  int64_t n_targets_;
  TreeEnsemble forest_;
  std::vector<double> base_;
  PostTransform post_;
};

class TreeClassifier {
 public:
  explicit TreeClassifier(const sdk::Node& node)
      : labels_(node, "classlabels_int64s"),
        forest_(node, "class", int64_t(labels_.size())),
        base_(read_base_values(node, int64_t(labels_.size()), labels_.size() == 2)),
        post_(read_post_transform(node)),
        binary_(labels_.size() == 2 && forest_.used_ids().size() == 1) {}

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "TreeEnsembleClassifier");
    check_features(forest_, f);
    const int64_t E = int64_t(labels_.size());
    std::vector<int64_t> picked(size_t(f.rows));
    int64_t* y = picked.data();
    float* z = ctx.output(1, {f.rows, E}, SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      std::vector<double> scores(static_cast<size_t>(kRowGrain * E));
      std::vector<uint8_t> has(static_cast<size_t>(kRowGrain * E));
      std::vector<double> s;
      for (int64_t b0 = b; b0 < e; b0 += kRowGrain) {
        const int64_t n = std::min(kRowGrain, e - b0);
        forest_.evaluate(f.row(b0), n, f.cols, scores.data(), has.data());
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = b0 + i;
          s.assign(scores.begin() + i * E, scores.begin() + (i + 1) * E);
          y[r] = binary_ ? binary_row(s, has.data() + i * E) : multi_row(s);
          for (int64_t k = 0; k < E; ++k) z[r * E + k] = float(s[size_t(k)]);
        }
      }
    });
    labels_.emit(ctx, 0, picked);
  }

 private:
  int64_t multi_row(std::vector<double>& s) const {
    for (size_t k = 0; k < base_.size() && base_.size() == s.size(); ++k) s[k] += base_[k];
    apply_post_transform(post_, s.data(), int64_t(s.size()));
    return labels_[size_t(std::max_element(s.begin(), s.end()) - s.begin())];
  }

  // Two labels but leaves that score only one id (gradient boosting, a
  // one-vs-rest forest): that single score speaks for the second label.
  // Non-negative weights make it a probability (threshold 0.5); mixed signs
  // make it a margin (threshold 0, LOGISTIC turns it into a probability).
  int64_t binary_row(std::vector<double>& s, const uint8_t* has) const {
    const size_t id = size_t(forest_.used_ids()[0]);
    double v = has[id] ? s[id] : 0.0;
    if (!base_.empty()) v += base_.size() == 1 ? base_[0] : base_[id];
    bool positive;
    if (forest_.weights_nonnegative()) {
      positive = v > 0.5;
      s = {1.0 - v, v};
    } else {
      positive = v > 0.0;
      s = {-v, v};
    }
    apply_post_transform(post_, s.data(), 2);
    return labels_[positive ? 1 : 0];
  }

  ClassLabels labels_;
  TreeEnsemble forest_;
  std::vector<double> base_;
  PostTransform post_;
  bool binary_;
};

}  // namespace

void register_tree_ensembles(sdk::Registrar& reg) {
  // Opset 3 adds the *_as_tensor attributes; one class reads both forms.
  for (int since : {1, 3}) {
    const int end = since == 1 ? 2 : kLastOpset;
    reg.kernel<TreeRegressor>(kDomain, "TreeEnsembleRegressor", since, end, "cpu", {{"T", 0, kFeatureTypes}});
    reg.kernel<TreeClassifier>(kDomain, "TreeEnsembleClassifier", since, end, "cpu", {{"T1", 0, kFeatureTypes}});
  }
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
