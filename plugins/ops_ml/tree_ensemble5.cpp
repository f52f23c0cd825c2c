// tree_ensemble5.cpp - TreeEnsemble (ai.onnx.ml 5), the unified tree op.
// Interior nodes are the nodes_* tuples; each branch names its children by
// index, into the nodes (nodes_*nodeids with *leafs = 0) or into the leaves
// (with *leafs = 1); leaves are the leaf_* tuples (one target, one weight).
// BRANCH_MEMBER nodes test membership in a set: membership_values lists the
// sets of the member nodes in node order, each ended by a NaN. The trees'
// leaf weights are aggregated per target (SUM, AVERAGE, MIN, MAX), then the
// post transform is applied. X, the splits and the weights share one type.
#include "features.hpp"
#include "post_transform.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

using sdk::bit;

constexpr int64_t kRowGrain = 64;
constexpr uint64_t kRealTypes = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_DOUBLE) | bit(SINGA_ONNX_FLOAT16);

enum Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };

// A tensor attribute of a real type, as doubles; `dtype` receives its type.
std::vector<double> real_tensor(const sdk::Node& node, const char* name, int32_t& dtype, bool required) {
  const sdk::Tensor t = node.attr_tensor(name);
  if (!t.present()) {
    if (required) node.fail(std::string("required tensor attribute ") + name + " is missing");
    return {};
  }
  dtype = t.dtype();
  std::vector<double> out(static_cast<size_t>(t.numel()));
  sdk::dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(t.data<T>()[i]);
  }, kRealTypes);
  return out;
}

class TreeEnsemble5 {
 public:
  explicit TreeEnsemble5(const sdk::Node& node) {
    const std::vector<int64_t> features = node.attr_ints("nodes_featureids");
    const std::vector<int64_t> trues = node.attr_ints("nodes_truenodeids");
    const std::vector<int64_t> falses = node.attr_ints("nodes_falsenodeids");
    const std::vector<int64_t> true_leaf = node.attr_ints("nodes_trueleafs");
    const std::vector<int64_t> false_leaf = node.attr_ints("nodes_falseleafs");
    const std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
    const std::vector<int64_t> roots = node.attr_ints("tree_roots");
    const std::vector<int64_t> targets = node.attr_ints("leaf_targetids");
    int32_t weight_type = 0, member_type = 0;
    split_type_ = 0;
    const std::vector<double> splits = real_tensor(node, "nodes_splits", split_type_, true);
    const std::vector<double> weights = real_tensor(node, "leaf_weights", weight_type, true);
    const std::vector<double> members = real_tensor(node, "membership_values", member_type, false);
    if (weight_type != split_type_)
      node.fail(std::string("leaf_weights is ") + sdk::dtype_name(weight_type) + " but nodes_splits is " +
                sdk::dtype_name(split_type_) + "; they must share X's type");
    if (!members.empty() && member_type != split_type_)
      node.fail(std::string("membership_values is ") + sdk::dtype_name(member_type) + " but nodes_splits is " +
                sdk::dtype_name(split_type_));

    const sdk::Tensor modes_t = node.attr_tensor("nodes_modes");
    if (!modes_t.present()) node.fail("required tensor attribute nodes_modes is missing");
    if (modes_t.dtype() != SINGA_ONNX_UINT8)
      node.fail(std::string("nodes_modes must be a uint8 tensor, got ") + sdk::dtype_name(modes_t.dtype()));

    const size_t n = splits.size();
    check_len(node, "nodes_featureids", features.size(), n);
    check_len(node, "nodes_modes", size_t(modes_t.numel()), n);
    check_len(node, "nodes_truenodeids", trues.size(), n);
    check_len(node, "nodes_falsenodeids", falses.size(), n);
    check_len(node, "nodes_trueleafs", true_leaf.size(), n);
    check_len(node, "nodes_falseleafs", false_leaf.size(), n);
    if (!missing.empty()) check_len(node, "nodes_missing_value_tracks_true", missing.size(), n);
    const size_t n_leaves = weights.size();
    check_len(node, "leaf_targetids", targets.size(), n_leaves);
    if (n > size_t(INT32_MAX / 2) || n_leaves > size_t(INT32_MAX / 2)) node.fail("the ensemble is too large");
    if (roots.empty()) node.fail("tree_roots is empty");

    n_targets_ = node.attr_int("n_targets", -1);
    if (!node.has_attr("n_targets")) {
      n_targets_ = 0;
      for (int64_t t : targets) n_targets_ = std::max(n_targets_, t + 1);
    }
    if (n_targets_ <= 0) node.fail("n_targets is " + std::to_string(n_targets_) + "; it must be positive");
    for (size_t i = 0; i < n_leaves; ++i)
      if (targets[i] < 0 || targets[i] >= n_targets_)
        node.fail("leaf_targetids[" + std::to_string(i) + "] is " + std::to_string(targets[i]) + ", outside [0, " +
                  std::to_string(n_targets_) + ")");
    leaves_.resize(n_leaves);
    for (size_t i = 0; i < n_leaves; ++i) leaves_[i] = {weights[i], int32_t(targets[i])};

    agg_ = node.attr_int("aggregate_function", kSum);
    if (agg_ < kAverage || agg_ > kMax)
      node.fail("aggregate_function is " + std::to_string(agg_) + "; it must be 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)");
    const int64_t post = node.attr_int("post_transform", 0);
    if (post < 0 || post > 4)
      node.fail("post_transform is " + std::to_string(post) +
                "; it must be 0 (NONE), 1 (SOFTMAX), 2 (LOGISTIC), 3 (SOFTMAX_ZERO) or 4 (PROBIT)");
    static const PostTransform kPost[] = {PostTransform::kNone, PostTransform::kSoftmax, PostTransform::kLogistic,
                                          PostTransform::kSoftmaxZero, PostTransform::kProbit};
    post_ = kPost[post];

    // Children: >= 0 an interior node, < 0 the leaf ~child.
    auto child = [&](size_t i, bool side_true) -> int32_t {
      const int64_t id = side_true ? trues[i] : falses[i];
      const bool leaf = (side_true ? true_leaf[i] : false_leaf[i]) != 0;
      const char* what = side_true ? "nodes_truenodeids" : "nodes_falsenodeids";
      if (leaf) {
        if (id < 0 || size_t(id) >= n_leaves)
          node.fail(std::string(what) + "[" + std::to_string(i) + "] names leaf " + std::to_string(id) + " but there are " +
                    std::to_string(n_leaves) + " leaves");
        return ~int32_t(id);
      }
      if (id < 0 || size_t(id) >= n)
        node.fail(std::string(what) + "[" + std::to_string(i) + "] names node " + std::to_string(id) + " but there are " +
                  std::to_string(n) + " nodes");
      return int32_t(id);
    };

    nodes_.resize(n);
    size_t next_member = 0;
    for (size_t i = 0; i < n; ++i) {
      Node& d = nodes_[i];
      const uint8_t m = modes_t.data<uint8_t>()[i];
      if (m > kMember)
        node.fail("nodes_modes[" + std::to_string(i) + "] is " + std::to_string(m) + "; modes are 0 (BRANCH_LEQ) to 6 (BRANCH_MEMBER)");
      d.mode = Mode(m);
      if (features[i] < 0 || features[i] > INT32_MAX) node.fail("nodes_featureids[" + std::to_string(i) + "] is out of range");
      d.feature = int32_t(features[i]);
      d.split = splits[i];
      d.missing_true = !missing.empty() && missing[i] != 0;
      d.t = child(i, true);
      d.f = child(i, false);
      if (d.mode == kMember) {
        // The node's set: the values up to the next NaN.
        d.set_begin = int32_t(sets_.size());
        while (next_member < members.size() && !std::isnan(members[next_member])) sets_.push_back(members[next_member++]);
        if (next_member >= members.size())
          node.fail("membership_values has no set (ending with NaN) left for BRANCH_MEMBER node " + std::to_string(i));
        ++next_member;
        d.set_end = int32_t(sets_.size());
        std::sort(sets_.begin() + d.set_begin, sets_.end());
      }
    }
    if (next_member != members.size())
      node.fail("membership_values has " + std::to_string(members.size() - next_member) +
                " values after the last BRANCH_MEMBER node's set");

    for (size_t r = 0; r < roots.size(); ++r) {
      const int64_t i = roots[r];
      if (i < 0 || size_t(i) >= n)
        node.fail("tree_roots[" + std::to_string(r) + "] is " + std::to_string(i) + " but there are " + std::to_string(n) +
                  " nodes");
      // A tree that is a single leaf: a root whose both branches name one leaf.
      if (true_leaf[size_t(i)] && false_leaf[size_t(i)] && trues[size_t(i)] == falses[size_t(i)]) roots_.push_back(nodes_[size_t(i)].t);
      else roots_.push_back(int32_t(i));
    }
    check_acyclic(node);
  }

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    const sdk::Tensor x = ctx.input(0);
    if (x.dtype() != split_type_)
      sdk::fail(std::string("X is ") + sdk::dtype_name(x.dtype()) + " but nodes_splits and leaf_weights are " +
                sdk::dtype_name(split_type_) + "; they must have the same type");
    if (x.ndim() != 2) sdk::fail("X must have shape [N, F], got rank " + std::to_string(x.ndim()));
    const int64_t rows = x.dim(0), cols = x.dim(1);
    if (max_feature_ >= cols)
      sdk::fail("a branch reads feature " + std::to_string(max_feature_) + " but X has only " + std::to_string(cols) +
                " columns");
    const int64_t T = n_targets_;
    const sdk::Tensor y = ctx.output(0, {rows, T}, x.dtype());
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using E = decltype(tag);
      const E* px = x.data<E>();
      E* py = y.data<E>();
      // The reference starts MIN and MAX from the type's extremes.
      double lowest = -double(std::numeric_limits<float>::max()), highest = double(std::numeric_limits<float>::max());
      if (x.dtype() == SINGA_ONNX_DOUBLE) {
        lowest = std::numeric_limits<double>::lowest();
        highest = std::numeric_limits<double>::max();
      } else if (x.dtype() == SINGA_ONNX_FLOAT16) {
        lowest = -65504.0;
        highest = 65504.0;
      }
      const double init = agg_ == kMin ? highest : agg_ == kMax ? lowest : 0.0;
      ctx.parallel_for(rows, kRowGrain, [&](int64_t b, int64_t e) {
        std::vector<double> row(static_cast<size_t>(cols)), s(static_cast<size_t>(T));
        for (int64_t r = b; r < e; ++r) {
          for (int64_t c = 0; c < cols; ++c) row[size_t(c)] = double(px[r * cols + c]);
          std::fill(s.begin(), s.end(), init);
          for (int32_t root : roots_) {
            const Leaf& lf = leaves_[size_t(~walk(root, row.data()))];
            double& v = s[size_t(lf.target)];
            if (agg_ == kMin) v = std::min(v, lf.weight);
            else if (agg_ == kMax) v = std::max(v, lf.weight);
            else v += lf.weight;
          }
          if (agg_ == kAverage)
            for (double& v : s) v /= double(roots_.size());
          apply_post_transform(post_, s.data(), T);
          for (int64_t k = 0; k < T; ++k) py[r * T + k] = E(s[size_t(k)]);
        }
      });
    }, kRealTypes);
  }

 private:
  struct Node {
    double split;
    int32_t feature;
    int32_t t, f;  // children: >= 0 node, < 0 leaf ~index
    int32_t set_begin = 0, set_end = 0;
    Mode mode;
    bool missing_true;
  };
  struct Leaf {
    double weight;
    int32_t target;
  };

  // Follows the branches from `at` to a leaf; returns the leaf as ~index.
  int32_t walk(int32_t at, const double* x) const {
    while (at >= 0) {
      const Node& d = nodes_[size_t(at)];
      const double v = x[d.feature];
      bool go;
      switch (d.mode) {
        case kLeq: go = v <= d.split; break;
        case kLt: go = v < d.split; break;
        case kGte: go = v >= d.split; break;
        case kGt: go = v > d.split; break;
        case kEq: go = v == d.split; break;
        case kNeq: go = v != d.split; break;
        default: go = std::binary_search(sets_.begin() + d.set_begin, sets_.begin() + d.set_end, v); break;
      }
      if (d.missing_true && std::isnan(v)) go = true;
      at = go ? d.t : d.f;
    }
    return at;
  }

  // Every tree must end in leaves: a cycle among the nodes would loop forever.
  // Also records the largest feature any reachable branch reads.
  void check_acyclic(const sdk::Node& node) {
    std::vector<uint8_t> colour(nodes_.size(), 0);  // 0 unseen, 1 on the path, 2 done
    std::vector<std::pair<int32_t, int>> stack;
    for (int32_t r : roots_) {
      if (r < 0 || colour[size_t(r)] == 2) continue;
      stack.push_back({r, 0});
      colour[size_t(r)] = 1;
      while (!stack.empty()) {
        auto& top = stack.back();
        const Node& d = nodes_[size_t(top.first)];
        if (top.second == 0) max_feature_ = std::max<int64_t>(max_feature_, d.feature);
        if (top.second == 2) {
          colour[size_t(top.first)] = 2;
          stack.pop_back();
          continue;
        }
        const int32_t c = top.second++ == 0 ? d.t : d.f;
        if (c < 0 || colour[size_t(c)] == 2) continue;
        if (colour[size_t(c)] == 1) node.fail("the trees have a cycle through node " + std::to_string(c));
        colour[size_t(c)] = 1;
        stack.push_back({c, 0});
      }
    }
  }

  std::vector<Node> nodes_;
  std::vector<Leaf> leaves_;
  std::vector<double> sets_;
  std::vector<int32_t> roots_;
  int32_t split_type_ = 0;
  int64_t n_targets_ = 0;
  int64_t max_feature_ = -1;
  int64_t agg_ = kSum;
  PostTransform post_ = PostTransform::kNone;
};

}  // namespace

void register_tree_ensemble5(sdk::Registrar& reg) {
  reg.kernel<TreeEnsemble5>(kDomain, "TreeEnsemble", 5, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
