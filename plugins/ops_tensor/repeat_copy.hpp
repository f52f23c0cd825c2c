// repeat_copy.hpp - the copy behind Expand and Tile: a contiguous output whose
// source strides are the input's own or 0 (a repeated dimension). Rows are
// written as one memcpy (source stride 1) or one pattern fill (stride 0), and
// a repeated block that fits in cache is written once and then copied from
// the output itself, doubling, instead of element by element.
#ifndef SINGA_OPS_TENSOR_REPEAT_COPY_HPP
#define SINGA_OPS_TENSOR_REPEAT_COPY_HPP

#include "common.hpp"

#include <algorithm>
#include <cstring>

namespace singa {
namespace ops {
namespace tensor {

namespace repeat_detail {

// A repeated block up to this size is copied from the output (it is still in
// cache); larger ones are rebuilt from the source, which is never larger.
constexpr int64_t kReplicateBytes = int64_t(1) << 16;

// n copies of the es-byte value v at d: a 64-byte pattern, then whole-pattern
// copies (the compiler turns them into vector stores).
inline void fill_row(char* d, const char* v, int64_t n, size_t es) {
  const int64_t bytes = n * int64_t(es);
  if (es > 64 || 64 % es != 0) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * int64_t(es), v, es);
    return;
  }
  alignas(64) char pat[64];
  for (size_t i = 0; i < 64; i += es) std::memcpy(pat + i, v, es);
  int64_t i = 0;
  for (; i + 64 <= bytes; i += 64) std::memcpy(d + i, pat, 64);
  std::memcpy(d + i, pat, size_t(bytes - i));
}

// The coalesced view: dims[k] with source strides src[k] (elements) and
// block[k] = elements of output below one index of dims[k].
struct View {
  std::vector<int64_t> dims, src, block;
  size_t es = 0;
};

// Writes indices [i0, i1) of level k; dst and src point at its index 0.
inline void produce(const View& v, size_t k, int64_t i0, int64_t i1, char* dst, const char* src) {
  const int64_t es = int64_t(v.es), blk = v.block[k], s = v.src[k];
  if (k + 1 == v.dims.size()) {
    if (s == 1)
      std::memcpy(dst + i0 * es, src + i0 * es, size_t((i1 - i0) * es));
    else
      fill_row(dst + i0 * es, src, i1 - i0, v.es);
    return;
  }
  const int64_t bytes = blk * es;
  if (s == 0 && bytes <= kReplicateBytes && i1 - i0 > 1) {
    char* first = dst + i0 * bytes;
    produce(v, k + 1, 0, v.dims[k + 1], first, src);
    // Doubling: each memcpy copies what is written so far, up to a cap that
    // keeps the copied-from part in cache.
    const int64_t cap = std::max<int64_t>(1, (kReplicateBytes * 4) / bytes);
    int64_t done = 1, n = i1 - i0;
    while (done < n) {
      const int64_t c = std::min({done, n - done, cap});
      std::memcpy(first + done * bytes, first, size_t(c * bytes));
      done += c;
    }
    return;
  }
  for (int64_t i = i0; i < i1; ++i) produce(v, k + 1, 0, v.dims[k + 1], dst + i * bytes, src + i * s * es);
}

}  // namespace repeat_detail

// dst (contiguous, `shape`) [idx] = src[sum idx_k * src_strides[k]], where each
// src stride is 0 or the stride of a contiguous source's dimension (Expand,
// Tile's [rep, dim] view). Other strides fall back to strided_copy.
inline void repeat_copy(const Context& ctx, const Shape& shape, char* dst, const char* src, const Shape& src_strides,
                        size_t es) {
  using namespace repeat_detail;
  View v;
  v.es = es;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    // Merge into the outer neighbour when the source stays linear across both
    // (two repeated dims, or two contiguous ones).
    if (!v.dims.empty() && v.src.back() == src_strides[i] * shape[i]) {
      v.dims.back() *= shape[i];
      v.src.back() = src_strides[i];
      continue;
    }
    v.dims.push_back(shape[i]);
    v.src.push_back(src_strides[i]);
  }
  if (v.dims.empty()) {
    std::memcpy(dst, src, es);
    return;
  }
  if (v.src.back() != 0 && v.src.back() != 1) {
    strided_copy(ctx, shape, dst, contiguous_strides(shape), src, src_strides, es);
    return;
  }
  const size_t r = v.dims.size();
  v.block.assign(r, 1);
  for (size_t k = r - 1; k-- > 0;) v.block[k] = v.block[k + 1] * v.dims[k + 1];
  // Tasks: index ranges of the outermost levels, each a contiguous output
  // block of at least ~32 KB, so the pool's hand-off stays small beside it.
  const int64_t total = v.block[0] * v.dims[0] * int64_t(es);
  const int64_t target = std::max<int64_t>(int64_t(32) << 10, total / (16 * std::max(1, ctx.num_threads())));
  size_t k = 0;
  int64_t outer = 1;  // tasks above level k (flattened indices of levels < k)
  while (k + 1 < r && v.block[k] * int64_t(es) > target) outer *= v.dims[k++];
  // Level k is split into pieces of `per` indices, each at least `target` bytes.
  const int64_t level_bytes = v.block[k] * int64_t(es);
  const int64_t per = std::max<int64_t>(1, std::min(v.dims[k], target / std::max<int64_t>(1, level_bytes)));
  const int64_t pieces = (v.dims[k] + per - 1) / per;
  if (outer * pieces == 1) {
    produce(v, k, 0, v.dims[k], dst, src);
    return;
  }
  ctx.parallel_for(outer * pieces, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      int64_t rem = t / pieces, doff = 0, soff = 0;
      for (size_t j = k; j-- > 0;) {
        const int64_t idx = rem % v.dims[j];
        rem /= v.dims[j];
        doff += idx * v.block[j];
        soff += idx * v.src[j];
      }
      const int64_t i0 = (t % pieces) * per, i1 = std::min(v.dims[k], i0 + per);
      produce(v, k, i0, i1, dst + doff * int64_t(es), src + soff * int64_t(es));
    }
  });
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
#endif
