#include "buckets.hpp"

#include <singa/error.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace singa {
namespace dist {

std::vector<Bucket> make_buckets(const std::vector<int64_t>& numels, int64_t bytes, std::vector<size_t>& bucket_of) {
  std::vector<Bucket> out;
  bucket_of.assign(numels.size(), 0);
  const int64_t cap = std::max<int64_t>(1, bytes / 4);
  for (size_t k = numels.size(); k-- > 0;) {
    if (out.empty() || (out.back().count > 0 && out.back().count + numels[k] > cap)) out.emplace_back();
    Bucket& b = out.back();
    b.params.push_back(k);
    b.offsets.push_back(b.count);
    b.count += numels[k];
    bucket_of[k] = out.size() - 1;
  }
  return out;
}

void select_sparse(std::vector<float>& v, bool top_k, float spars, int64_t base, std::vector<int32_t>& idx,
                   std::vector<float>& val) {
  const int64_t n = int64_t(v.size());
  if (n == 0) return;
  if (base + n > INT32_MAX) throw Error(SINGA_INVALID_ARGUMENT, "sparse update: more than 2^31 gradient values");
  auto take = [&](int64_t i) {
    idx.push_back(int32_t(base + i));
    val.push_back(v[size_t(i)]);
    v[size_t(i)] = 0;
  };
  if (top_k) {
    const int64_t k = std::min<int64_t>(n, std::max<int64_t>(1, std::llround(double(spars) * double(n))));
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    // Ties broken by index, so that every run picks the same entries.
    auto larger = [&](int64_t a, int64_t b) {
      const float x = std::fabs(v[size_t(a)]), y = std::fabs(v[size_t(b)]);
      return x > y || (x == y && a < b);
    };
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), larger);
    order.resize(size_t(k));
    std::sort(order.begin(), order.end());
    for (int64_t i : order) take(i);
  } else {
    for (int64_t i = 0; i < n; ++i)
      if (std::fabs(v[size_t(i)]) >= spars) take(i);
  }
}

}  // namespace dist
}  // namespace singa
