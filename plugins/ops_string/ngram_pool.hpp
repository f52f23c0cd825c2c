// ngram_pool.hpp - a set of integer n-grams stored as a trie, so that all
// n-grams starting at one position are matched in a single walk.
#ifndef SINGA_OPS_STRING_NGRAM_POOL_HPP
#define SINGA_OPS_STRING_NGRAM_POOL_HPP

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace text {

class NgramPool {
 public:
  static constexpr int32_t kRoot = 0;
  static constexpr int32_t kNone = -1;

  NgramPool() : nodes_(1) {}

  // Adds gram[0..n) with identifier `id`. Returns false when that n-gram is
  // already in the pool.
  bool insert(const int64_t* gram, size_t n, int32_t id);

  // The trie node reached from `node` by `token`, or kNone.
  int32_t next(int32_t node, int64_t token) const {
    const auto& m = nodes_[size_t(node)].children;
    auto it = m.find(token);
    return it == m.end() ? kNone : it->second;
  }
  // The identifier of the n-gram ending at `node`, or kNone.
  int32_t id(int32_t node) const { return nodes_[size_t(node)].id; }
  bool empty() const { return nodes_[0].children.empty(); }

 private:
  struct TrieNode {
    std::unordered_map<int64_t, int32_t> children;
    int32_t id = kNone;
  };
  std::vector<TrieNode> nodes_;
};

}  // namespace text
}  // namespace singa

#endif
