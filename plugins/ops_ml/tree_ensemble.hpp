// tree_ensemble.hpp - the decision forest shared by TreeEnsembleClassifier and
// TreeEnsembleRegressor, flattened at create time into one node array so that
// evaluating a row is a tight walk over contiguous memory.
#ifndef SINGA_OPS_ML_TREE_ENSEMBLE_HPP
#define SINGA_OPS_ML_TREE_ENSEMBLE_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <vector>

namespace singa {
namespace ops {
namespace ml {

enum class NodeMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kLeaf };
enum class Aggregate : uint8_t { kSum, kAverage, kMin, kMax };

class TreeEnsemble {
 public:
  // Reads the nodes_* attributes and the leaf weights `<prefix>_treeids`,
  // `<prefix>_nodeids`, `<prefix>_ids`, `<prefix>_weights` (prefix "target" or
  // "class"); every leaf-weight id must lie in [0, n_outputs). Refuses
  // mismatched lengths, unknown modes, dangling children, cycles and trees
  // without exactly one root.
  TreeEnsemble(const sdk::Node& node, const char* prefix, int64_t n_outputs);

  // Aggregates the trees' leaf weights for `rows` rows of `cols` features
  // starting at x into scores[rows * n_outputs] (base values not added);
  // has[r * n_outputs + k] says whether any leaf scored output k of row r.
  // Rows are walked tree by tree so that a tree's nodes stay in cache while a
  // block of rows passes through it; each row still sees the trees in order.
  void evaluate(const double* x, int64_t rows, int64_t cols, double* scores, uint8_t* has) const;

  int64_t n_outputs() const { return n_outputs_; }
  // The largest feature index any branch reads (-1 for all-leaf forests).
  int64_t max_feature() const { return max_feature_; }
  // The distinct output ids the leaves write, and whether every weight >= 0
  // (the classifier's binary rules depend on both).
  const std::vector<int64_t>& used_ids() const { return used_ids_; }
  bool weights_nonnegative() const { return nonnegative_; }

 private:
  // 24 bytes: a leaf keeps its weight range [first, second) where a branch
  // keeps its children.
  struct Node {
    double value;
    int32_t feature;
    int32_t first;   // branch: true child; leaf: first weight
    int32_t second;  // branch: false child; leaf: end of weights
    NodeMode mode;
    bool missing_true;
  };
  struct Weight {
    int32_t id;
    double value;
  };

  const Node& leaf_for(int32_t root, const double* x) const;

  std::vector<Node> nodes_;
  std::vector<Weight> weights_;
  std::vector<int32_t> roots_;
  std::vector<int64_t> used_ids_;
  Aggregate aggregate_ = Aggregate::kSum;
  int64_t n_outputs_ = 0;
  int64_t max_feature_ = -1;
  bool nonnegative_ = true;
  // Every branch is BRANCH_LEQ without a missing-value track (all that
  // sklearn trees use): the walk then needs no per-node mode dispatch.
  bool all_leq_ = true;
};

}  // namespace ml
}  // namespace ops
}  // namespace singa
#endif
