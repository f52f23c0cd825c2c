// The trie behind NgramPool.
#include "ngram_pool.hpp"

namespace singa {
namespace text {

bool NgramPool::insert(const int64_t* gram, size_t n, int32_t id) {
  int32_t node = kRoot;
  for (size_t i = 0; i < n; ++i) {
    int32_t child = next(node, gram[i]);
    if (child == kNone) {
      child = int32_t(nodes_.size());
      nodes_[size_t(node)].children.emplace(gram[i], child);
      nodes_.emplace_back();
    }
    node = child;
  }
  if (nodes_[size_t(node)].id != kNone) return false;
  nodes_[size_t(node)].id = id;
  return true;
}

}  // namespace text
}  // namespace singa
