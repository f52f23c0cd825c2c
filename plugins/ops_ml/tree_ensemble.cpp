// tree_ensemble.cpp - building and walking the flattened forest.
#include "tree_ensemble.hpp"

#include "features.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace singa {
namespace ops {
namespace ml {
namespace {

NodeMode parse_mode(const sdk::Node& node, const std::string& m, size_t i) {
  if (m == "BRANCH_LEQ") return NodeMode::kLeq;
  if (m == "BRANCH_LT") return NodeMode::kLt;
  if (m == "BRANCH_GTE") return NodeMode::kGte;
  if (m == "BRANCH_GT") return NodeMode::kGt;
  if (m == "BRANCH_EQ") return NodeMode::kEq;
  if (m == "BRANCH_NEQ") return NodeMode::kNeq;
  if (m == "LEAF") return NodeMode::kLeaf;
  node.fail("nodes_modes[" + std::to_string(i) + "] is '" + m +
            "', not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF");
}

Aggregate parse_aggregate(const sdk::Node& node) {
  const std::string a = node.attr_string("aggregate_function", "SUM");
  if (a == "SUM") return Aggregate::kSum;
  if (a == "AVERAGE") return Aggregate::kAverage;
  if (a == "MIN") return Aggregate::kMin;
  if (a == "MAX") return Aggregate::kMax;
  node.fail("aggregate_function '" + a + "' is not one of SUM, AVERAGE, MIN, MAX");
}

using Key = std::pair<int64_t, int64_t>;  // (tree id, node id)

std::string key_str(const Key& k) {
  return "(tree " + std::to_string(k.first) + ", node " + std::to_string(k.second) + ")";
}

}  // namespace

TreeEnsemble::TreeEnsemble(const sdk::Node& node, const char* prefix, int64_t n_outputs)
    : aggregate_(parse_aggregate(node)), n_outputs_(n_outputs) {
  const std::vector<int64_t> tree_ids = node.attr_ints("nodes_treeids");
  const std::vector<int64_t> node_ids = node.attr_ints("nodes_nodeids");
  const std::vector<int64_t> features = node.attr_ints("nodes_featureids");
  const std::vector<int64_t> trues = node.attr_ints("nodes_truenodeids");
  const std::vector<int64_t> falses = node.attr_ints("nodes_falsenodeids");
  const std::vector<std::string> modes = node.attr_strings("nodes_modes");
  const std::vector<double> values = attr_reals(node, "nodes_values");
  const std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
  const size_t n = node_ids.size();
  if (n == 0) node.fail("the ensemble has no nodes (nodes_nodeids is empty)");
  check_len(node, "nodes_treeids", tree_ids.size(), n);
  check_len(node, "nodes_featureids", features.size(), n);
  check_len(node, "nodes_truenodeids", trues.size(), n);
  check_len(node, "nodes_falsenodeids", falses.size(), n);
  check_len(node, "nodes_modes", modes.size(), n);
  check_len(node, "nodes_values", values.size(), n);
  if (!missing.empty()) check_len(node, "nodes_missing_value_tracks_true", missing.size(), n);

  // (tree, node) -> position, as a sorted array: forests reach a million
  // nodes, where a node-based map would dominate the model's load time.
  std::vector<std::pair<Key, int32_t>> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = {Key{tree_ids[i], node_ids[i]}, int32_t(i)};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < n; ++i)
    if (sorted[i].first == sorted[i - 1].first) node.fail("node " + key_str(sorted[i].first) + " is defined twice");
  auto find = [&](const Key& k) -> int32_t {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(k, int32_t(-1)));
    return it != sorted.end() && it->first == k ? it->second : -1;
  };

  // Leaf weights, grouped by node so that a leaf owns one contiguous range.
  const std::string p = prefix;
  const std::vector<int64_t> w_trees = node.attr_ints((p + "_treeids").c_str());
  const std::vector<int64_t> w_nodes = node.attr_ints((p + "_nodeids").c_str());
  const std::vector<int64_t> w_ids = node.attr_ints((p + "_ids").c_str());
  const std::vector<double> w_values = attr_reals(node, p + "_weights");
  check_len(node, (p + "_treeids").c_str(), w_trees.size(), w_nodes.size());
  check_len(node, (p + "_ids").c_str(), w_ids.size(), w_nodes.size());
  check_len(node, (p + "_weights").c_str(), w_values.size(), w_nodes.size());
  std::vector<std::vector<Weight>> per_node(n);
  std::set<int64_t> used;
  for (size_t i = 0; i < w_nodes.size(); ++i) {
    const Key k{w_trees[i], w_nodes[i]};
    const int32_t at = find(k);
    if (at < 0) node.fail(p + "_nodeids[" + std::to_string(i) + "] names " + key_str(k) + ", which does not exist");
    if (w_ids[i] < 0 || w_ids[i] >= n_outputs)
      node.fail(p + "_ids[" + std::to_string(i) + "] is " + std::to_string(w_ids[i]) + ", outside [0, " +
                std::to_string(n_outputs) + ")");
    per_node[size_t(at)].push_back({int32_t(w_ids[i]), w_values[i]});
    used.insert(w_ids[i]);
    if (w_values[i] < 0) nonnegative_ = false;
  }
  used_ids_.assign(used.begin(), used.end());

  nodes_.resize(n);
  std::map<int64_t, std::vector<int32_t>> tree_nodes;
  std::vector<uint8_t> is_child(n, 0);
  for (size_t i = 0; i < n; ++i) {
    Node& d = nodes_[i];
    d.mode = parse_mode(node, modes[i], i);
    d.value = values[i];
    d.feature = 0;
    d.missing_true = !missing.empty() && missing[i] != 0;
    tree_nodes[tree_ids[i]].push_back(int32_t(i));
    if (d.mode == NodeMode::kLeaf) {
      d.first = int32_t(weights_.size());
      weights_.insert(weights_.end(), per_node[i].begin(), per_node[i].end());
      d.second = int32_t(weights_.size());
      continue;
    }
    if (!per_node[i].empty())
      node.fail("node " + key_str({tree_ids[i], node_ids[i]}) + " is a branch but has " + p + " weights");
    if (d.mode != NodeMode::kLeq || d.missing_true) all_leq_ = false;
    if (features[i] < 0) node.fail("nodes_featureids[" + std::to_string(i) + "] is negative");
    d.feature = int32_t(features[i]);
    max_feature_ = std::max(max_feature_, features[i]);
    for (int side = 0; side < 2; ++side) {
      const Key c{tree_ids[i], side == 0 ? trues[i] : falses[i]};
      const int32_t at = find(c);
      if (at < 0)
        node.fail("branch " + key_str({tree_ids[i], node_ids[i]}) + " points to " + key_str(c) + ", which does not exist");
      (side == 0 ? d.first : d.second) = at;
      is_child[size_t(at)] = 1;
    }
  }

  for (const auto& t : tree_nodes) {
    int32_t root = -1;
    for (int32_t i : t.second) {
      if (is_child[size_t(i)]) continue;
      if (root >= 0) node.fail("tree " + std::to_string(t.first) + " has more than one root (nodes no branch points to)");
      root = i;
    }
    if (root < 0) node.fail("tree " + std::to_string(t.first) + " has no root: every node is some branch's child");
    roots_.push_back(root);
  }

  // A cycle would make evaluation loop forever: depth-first search with
  // colours (0 unseen, 1 on the path, 2 done) finds any.
  std::vector<uint8_t> colour(n, 0);
  std::vector<std::pair<int32_t, int>> stack;
  for (int32_t r : roots_) {
    stack.push_back({r, 0});
    colour[size_t(r)] = 1;
    while (!stack.empty()) {
      auto& top = stack.back();
      const Node& d = nodes_[size_t(top.first)];
      if (d.mode == NodeMode::kLeaf || top.second == 2) {
        colour[size_t(top.first)] = 2;
        stack.pop_back();
        continue;
      }
      const int32_t c = top.second++ == 0 ? d.first : d.second;
      if (colour[size_t(c)] == 1)
        node.fail("tree " + std::to_string(tree_ids[size_t(c)]) + " has a cycle through node " +
                  std::to_string(node_ids[size_t(c)]));
      if (colour[size_t(c)] == 0) {
        colour[size_t(c)] = 1;
        stack.push_back({c, 0});
      }
    }
  }
}

const TreeEnsemble::Node& TreeEnsemble::leaf_for(int32_t root, const double* x) const {
  const Node* d = &nodes_[size_t(root)];
  if (all_leq_) {
    while (d->mode != NodeMode::kLeaf) d = &nodes_[size_t(x[d->feature] <= d->value ? d->first : d->second)];
    return *d;
  }
  while (d->mode != NodeMode::kLeaf) {
    const double v = x[d->feature];
    bool go_true;
    switch (d->mode) {
      case NodeMode::kLeq: go_true = v <= d->value; break;
      case NodeMode::kLt: go_true = v < d->value; break;
      case NodeMode::kGte: go_true = v >= d->value; break;
      case NodeMode::kGt: go_true = v > d->value; break;
      case NodeMode::kEq: go_true = v == d->value; break;
      default: go_true = v != d->value; break;
    }
    // A missing value (NaN) fails every comparison but NEQ; the tracks-true
    // flag sends it down the true branch instead.
    if (d->missing_true && std::isnan(v)) go_true = true;
    d = &nodes_[size_t(go_true ? d->first : d->second)];
  }
  return *d;
}

void TreeEnsemble::evaluate(const double* x, int64_t rows, int64_t cols, double* scores, uint8_t* has) const {
  const int64_t T = n_outputs_;
  std::fill(scores, scores + rows * T, 0.0);
  std::fill(has, has + rows * T, uint8_t(0));
  for (int32_t root : roots_) {
    for (int64_t r = 0; r < rows; ++r) {
      const Node& leaf = leaf_for(root, x + r * cols);
      double* s = scores + r * T;
      uint8_t* h = has + r * T;
      for (int32_t w = leaf.first; w < leaf.second; ++w) {
        const Weight& wt = weights_[size_t(w)];
        double& v = s[wt.id];
        if (!h[wt.id]) {
          v = wt.value;
          h[wt.id] = 1;
        } else if (aggregate_ == Aggregate::kMin) {
          v = std::min(v, wt.value);
        } else if (aggregate_ == Aggregate::kMax) {
          v = std::max(v, wt.value);
        } else {
          v += wt.value;
        }
      }
    }
  }
  if (aggregate_ == Aggregate::kAverage)
    for (int64_t k = 0; k < rows * T; ++k) scores[k] /= double(roots_.size());
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
