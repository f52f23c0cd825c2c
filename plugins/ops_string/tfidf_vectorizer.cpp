// TfIdfVectorizer (opset 9): counts the pool's n-grams (with up to
// max_skip_count tokens skipped between their items) in each input row and
// turns the counts into TF, IDF or TF-IDF values.
#include "ngram_pool.hpp"
#include "register.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace singa {
namespace text {
namespace {

using sdk::bit;

std::string shape_str(const sdk::Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

const char* kNoStrings =
    "string n-grams (pool_strings, string input) are not supported yet: the plugin ABI has no string tensors; "
    "use integer token ids with pool_int64s";

class TfIdfVectorizer {
 public:
  enum class Mode { kTF, kIDF, kTFIDF };

  explicit TfIdfVectorizer(const sdk::Node& node) {
    std::string mode = node.attr_string("mode", "");
    if (mode == "TF") mode_ = Mode::kTF;
    else if (mode == "IDF") mode_ = Mode::kIDF;
    else if (mode == "TFIDF") mode_ = Mode::kTFIDF;
    else node.fail("attribute mode must be TF, IDF or TFIDF, got '" + mode + "'");
    for (const char* a : {"min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts", "ngram_indexes"})
      if (!node.has_attr(a)) node.fail(std::string("required attribute ") + a + " is missing");
    min_len_ = node.attr_int("min_gram_length", 0);
    max_len_ = node.attr_int("max_gram_length", 0);
    max_skip_ = node.attr_int("max_skip_count", 0);
    if (min_len_ < 1 || max_len_ < min_len_)
      node.fail("need 1 <= min_gram_length <= max_gram_length, got " + std::to_string(min_len_) + " and " +
                std::to_string(max_len_));
    if (max_skip_ < 0) node.fail("attribute max_skip_count must be >= 0, got " + std::to_string(max_skip_));
    if (node.has_attr("pool_strings") || node.input_info(0).onnx_dtype == SINGA_ONNX_STRING) node.fail(kNoStrings);
    if (!node.has_attr("pool_int64s")) node.fail("attribute pool_int64s is missing (one of pool_strings/pool_int64s is required)");
    build_pool(node, node.attr_ints("pool_int64s"), node.attr_ints("ngram_counts"));

    std::vector<int64_t> indexes = node.attr_ints("ngram_indexes");
    if (indexes.size() != size_t(grams_))
      node.fail("ngram_indexes has " + std::to_string(indexes.size()) + " entries but the pool holds " +
                std::to_string(grams_) + " n-grams");
    for (int64_t i : indexes)
      if (i < 0) node.fail("ngram_indexes has a negative entry " + std::to_string(i));
    out_index_ = indexes;
    out_size_ = indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1;
    weights_ = node.attr_floats("weights");
    if (!weights_.empty() && weights_.size() != size_t(grams_))
      node.fail("weights has " + std::to_string(weights_.size()) + " entries but the pool holds " +
                std::to_string(grams_) + " n-grams");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    if (x.dtype() == SINGA_ONNX_STRING) sdk::fail(kNoStrings);
    if (x.ndim() != 1 && x.ndim() != 2)
      sdk::fail("input must be 1-D [C] or 2-D [N, C], got shape " + shape_str(x.shape()));
    int64_t rows = x.ndim() == 2 ? x.dim(0) : 1;
    int64_t cols = x.dim(-1);
    sdk::Tensor y = ctx.output(0, x.ndim() == 2 ? sdk::Shape{rows, out_size_} : sdk::Shape{out_size_},
                               SINGA_ONNX_FLOAT);
    float* py = y.data<float>();
    std::vector<int64_t> tokens(static_cast<size_t>(x.numel()));
    if (x.dtype() == SINGA_ONNX_INT32)
      std::copy(x.data<int32_t>(), x.data<int32_t>() + x.numel(), tokens.begin());
    else if (x.dtype() == SINGA_ONNX_INT64)
      std::copy(x.data<int64_t>(), x.data<int64_t>() + x.numel(), tokens.begin());
    else
      sdk::fail(std::string("input must be int32 or int64, got ") + sdk::dtype_name(x.dtype()));
    ctx.parallel_for(rows, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> counts(static_cast<size_t>(grams_));
      for (int64_t r = b; r < e; ++r) {
        std::fill(counts.begin(), counts.end(), 0);
        count_row(tokens.data() + r * cols, cols, counts);
        write_row(counts, py + r * out_size_);
      }
    });
  }

 private:
  // ngram_counts[k] is where the (k+1)-grams start in the flat pool.
  void build_pool(const sdk::Node& node, const std::vector<int64_t>& pool, const std::vector<int64_t>& starts) {
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t begin = starts[k];
      int64_t end = k + 1 < starts.size() ? starts[k + 1] : int64_t(pool.size());
      int64_t len = int64_t(k) + 1;
      if (begin < 0 || end < begin || end > int64_t(pool.size()) || (k == 0 && begin != 0))
        node.fail("ngram_counts must be non-decreasing offsets into pool_int64s starting at 0, got entry " +
                  std::to_string(k) + " = " + std::to_string(begin));
      if ((end - begin) % len != 0)
        node.fail("the " + std::to_string(len) + "-gram section of pool_int64s has " + std::to_string(end - begin) +
                  " items, not a multiple of " + std::to_string(len));
      for (int64_t p = begin; p < end; p += len) {
        if (!pool_.insert(pool.data() + p, size_t(len), int32_t(grams_)))
          node.fail("pool_int64s lists an n-gram twice (at item " + std::to_string(p) + ")");
        ++grams_;
      }
    }
    if (starts.empty() && !pool.empty()) node.fail("attribute ngram_counts is empty but pool_int64s is not");
  }

  // For each skip distance, walks the trie from every start position. Unigrams
  // do not depend on the skip, so they are counted in the first pass only.
  void count_row(const int64_t* t, int64_t n, std::vector<int64_t>& counts) const {
    if (pool_.empty()) return;
    int64_t first_len = min_len_;
    for (int64_t skip = 0; skip <= max_skip_; ++skip) {
      int64_t step = skip + 1;
      for (int64_t s = 0; s < n; ++s) {
        if (s + step * (first_len - 1) >= n) break;
        int32_t node = NgramPool::kRoot;
        for (int64_t len = 1, p = s; len <= max_len_ && p < n; ++len, p += step) {
          node = pool_.next(node, t[p]);
          if (node == NgramPool::kNone) break;
          int32_t id = pool_.id(node);
          if (len >= first_len && id != NgramPool::kNone) ++counts[size_t(id)];
        }
      }
      if (first_len == 1 && ++first_len > max_len_) break;
    }
  }

  void write_row(const std::vector<int64_t>& counts, float* out) const {
    std::fill(out, out + out_size_, 0.0f);
    for (size_t i = 0; i < counts.size(); ++i) {
      float w = weights_.empty() ? 1.0f : weights_[i];
      float v = mode_ == Mode::kTF    ? float(counts[i])
                : mode_ == Mode::kIDF ? (counts[i] > 0 ? w : 0.0f)
                                      : float(counts[i]) * w;
      out[out_index_[i]] += v;
    }
  }

  Mode mode_ = Mode::kTF;
  int64_t min_len_ = 1, max_len_ = 1, max_skip_ = 0;
  NgramPool pool_;
  int64_t grams_ = 0;
  std::vector<int64_t> out_index_;
  int64_t out_size_ = 0;
  std::vector<float> weights_;
};

}  // namespace

void register_tfidf_vectorizer(sdk::Registrar& reg) {
  // String input is accepted here only to be refused with a clear message.
  const uint64_t tokens = bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64) | bit(SINGA_ONNX_STRING);
  reg.kernel<TfIdfVectorizer>("", "TfIdfVectorizer", 9, SINGA_VERSION_OPEN, "cpu", {{"T", 0, tokens}, {"T1", -1, bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace text
}  // namespace singa
