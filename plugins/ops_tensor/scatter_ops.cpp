// Index-driven writes: Scatter (9-10), ScatterElements and ScatterND, with the
// opset-16 `reduction` (none, add, mul). The output starts as a copy of data;
// updates are applied in index order so that duplicates behave as the
// reference does (last write wins, or reductions accumulate).
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMin, kMax };

template <typename V>
V reduce_one(V a, V b, Reduction r) {
  switch (r) {
    case Reduction::kAdd: return a + b;
    case Reduction::kMul: return a * b;
    // NaN propagates (a != a only for NaN), as numpy's minimum/maximum do.
    case Reduction::kMin: return (b < a || b != b) ? b : a;
    default: return (a < b || b != b) ? b : a;
  }
}

template <typename T>
void reduce_into(T* dst, const T* src, int64_t n, Reduction r) {
  constexpr bool narrow_float = std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (narrow_float) {
      dst[i] = T(reduce_one(float(dst[i]), float(src[i]), r));
    } else if constexpr (std::is_same<T, bool>::value) {
      // add and max are "or", mul and min are "and".
      bool any = r == Reduction::kAdd || r == Reduction::kMax;
      dst[i] = any ? (dst[i] || src[i]) : (dst[i] && src[i]);
    } else {
      dst[i] = T(reduce_one(dst[i], src[i], r));
    }
  }
}

class ScatterBase : public KernelBase {
 public:
  explicit ScatterBase(const Node& node) : KernelBase(node) {
    std::string r = node.attr_string("reduction", "none");
    const bool minmax = node.opset() >= 18;
    if (r == "add") reduction_ = Reduction::kAdd;
    else if (r == "mul") reduction_ = Reduction::kMul;
    else if (r == "min" && minmax) reduction_ = Reduction::kMin;
    else if (r == "max" && minmax) reduction_ = Reduction::kMax;
    else if (r != "none")
      sdk::fail("attribute 'reduction' must be none, add, mul" + std::string(minmax ? ", min or max" : " (min and max need opset 18)") +
                ", got '" + r + "'");
  }

 protected:
  int64_t wrap(int64_t i, int64_t dim) const {
    if (i < -dim || i >= dim)
      fail("index " + std::to_string(i) + " is out of range for a dimension of size " + std::to_string(dim));
    return i < 0 ? i + dim : i;
  }
  Tensor copy_of_data(const Context& ctx, const Tensor& x) const {
    Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    parallel_memcpy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * elem_size(x));
    return y;
  }
  // Writes n elements of src over dst (in elements of x's dtype), or reduces.
  void apply(const Tensor& x, char* dst, const char* src, int64_t n) const {
    if (reduction_ == Reduction::kNone) {
      std::memcpy(dst, src, size_t(n) * elem_size(x));
      return;
    }
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      reduce_into(reinterpret_cast<T*>(dst), reinterpret_cast<const T*>(src), n, reduction_);
    });
  }
  void check_reduction_dtype(const Tensor& x) const {
    SINGA_CHECK(
        reduction_ == Reduction::kNone || (sdk::bit(x.dtype()) & (sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL))),
        std::string("reduction is not supported for element type ") + sdk::dtype_name(x.dtype()));
  }

  Reduction reduction_ = Reduction::kNone;
};

class ScatterElements : public ScatterBase {
 public:
  explicit ScatterElements(const Node& node) : ScatterBase(node), axis_(node.attr_int("axis", 0)) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices"), upd = required(ctx, 2, "updates");
    const Shape in = x.shape(), is = ind.shape();
    check(!in.empty(), "data must have rank >= 1");
    SINGA_CHECK(upd.shape() == is,
                "updates of shape " + shape_str(upd.shape()) + " must match indices of shape " + shape_str(is));
    check(upd.dl_dtype() == x.dl_dtype(), "updates must have the element type of data");
    SINGA_CHECK(is.size() == in.size(),
                "indices of shape " + shape_str(is) + " must have the rank of data " + shape_str(in));
    check_reduction_dtype(x);
    const size_t axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    for (size_t d = 0; d < in.size(); ++d)
      SINGA_CHECK(d == axis || is[d] <= in[d], "indices of shape " + shape_str(is) + " exceed data of shape " +
                                                   shape_str(in) + " on axis " + std::to_string(d));
    std::vector<int64_t> idx = read_index_tensor(ind);
    for (int64_t& i : idx) i = wrap(i, in[axis]);
    Tensor y = copy_of_data(ctx, x);
    const Shape ds = contiguous_strides(in);
    const size_t es = elem_size(x), r = in.size();
    char* dst = mutable_bytes(y);
    const char* src = bytes(upd);
    for (size_t i = 0; i < idx.size(); ++i) {
      int64_t rem = int64_t(i), off = 0;
      for (size_t d = r; d-- > 0;) {
        int64_t c = rem % is[d];
        rem /= is[d];
        off += (d == axis ? idx[i] : c) * ds[d];
      }
      apply(x, dst + size_t(off) * es, src + i * es, 1);
    }
  }

 private:
  int64_t axis_;
};

class ScatterND : public ScatterBase {
 public:
  using ScatterBase::ScatterBase;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "data"), ind = required(ctx, 1, "indices"), upd = required(ctx, 2, "updates");
    const Shape in = x.shape(), is = ind.shape();
    check(!in.empty() && !is.empty(), "data and indices must have rank >= 1");
    check(upd.dl_dtype() == x.dl_dtype(), "updates must have the element type of data");
    check_reduction_dtype(x);
    const size_t k = size_t(is.back());
    SINGA_CHECK(k <= in.size(),
                "indices' last dimension " + std::to_string(k) + " exceeds data rank " + std::to_string(in.size()));
    Shape expect(is.begin(), is.end() - 1);
    expect.insert(expect.end(), in.begin() + int64_t(k), in.end());
    SINGA_CHECK(upd.shape() == expect,
                "updates of shape " + shape_str(upd.shape()) + " should be " + shape_str(expect));
    std::vector<int64_t> idx = read_index_tensor(ind);
    const Shape ds = contiguous_strides(in);
    int64_t slice = 1;
    for (size_t d = k; d < in.size(); ++d) slice *= in[d];
    const int64_t tuples = sdk::numel(Shape(is.begin(), is.end() - 1));
    std::vector<int64_t> offsets(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j) off += wrap(idx[size_t(t) * k + j], in[j]) * ds[j];
      offsets[size_t(t)] = off;
    }
    Tensor y = copy_of_data(ctx, x);
    const size_t es = elem_size(x);
    char* dst = mutable_bytes(y);
    const char* src = bytes(upd);
    for (int64_t t = 0; t < tuples; ++t)
      apply(x, dst + size_t(offsets[size_t(t)]) * es, src + size_t(t * slice) * es, slice);
  }
};

// TensorScatter-24: writes `update` into a copy of the cache `past_cache`
// along the sequence axis, at write_indices[b] for batch entry b (0 when
// absent); "circular" wraps positions modulo the cache length.
class TensorScatter : public KernelBase {
 public:
  explicit TensorScatter(const Node& node) : KernelBase(node), axis_(node.attr_int("axis", -2)) {
    std::string mode = node.attr_string("mode", "linear");
    if (mode == "circular") circular_ = true;
    else if (mode != "linear") node.fail("attribute 'mode' must be linear or circular, got '" + mode + "'");
  }

  void compute(Context& ctx) const {
    Tensor past = required(ctx, 0, "past_cache"), upd = required(ctx, 1, "update");
    const Shape ps = past.shape(), us = upd.shape();
    const int64_t r = int64_t(ps.size());
    SINGA_CHECK(r >= 2, "past_cache must have rank >= 2, got shape " + shape_str(ps));
    const size_t axis = size_t(normalize_axis(axis_, r, "axis"));
    check(axis != 0, "axis must not be the batch axis 0");
    check(upd.dl_dtype() == past.dl_dtype(), "update must have the element type of past_cache");
    bool ok = us.size() == ps.size();
    for (size_t d = 0; ok && d < ps.size(); ++d) ok = d == axis ? us[d] <= ps[d] : us[d] == ps[d];
    SINGA_CHECK(ok, "update of shape " + shape_str(us) + " must match past_cache of shape " + shape_str(ps) +
                        " except for a sequence axis " + std::to_string(axis) + " no longer than the cache's");
    const int64_t batch = ps[0], max_len = ps[axis], len = us[axis];
    std::vector<int64_t> starts(size_t(batch), 0);
    if (ctx.has_input(2)) {
      std::vector<int64_t> w = read_ints(ctx.input(2), "write_indices");
      SINGA_CHECK(int64_t(w.size()) == batch, "write_indices must hold one index per batch entry (" +
                                                  std::to_string(batch) + "), got " + std::to_string(w.size()));
      for (int64_t b = 0; b < batch; ++b) {
        int64_t i = w[size_t(b)];
        if (circular_) {
          check(max_len > 0 || len == 0, "cannot write circularly into an empty sequence axis");
          if (max_len > 0) i = ((i % max_len) + max_len) % max_len;
        } else {
          SINGA_CHECK(i >= 0 && i <= max_len - len,
                      "write index " + std::to_string(i) + " of batch entry " + std::to_string(b) + " with " +
                          std::to_string(len) + " new positions exceeds the cache length " + std::to_string(max_len));
        }
        starts[size_t(b)] = i;
      }
    }
    Tensor y = ctx.output(0, ps, past.dl_dtype());
    const size_t es = elem_size(past);
    parallel_memcpy(ctx, y.data_ptr(), past.data_ptr(), size_t(past.numel()) * es);
    if (upd.numel() == 0) return;
    int64_t outer = 1, inner = 1;
    for (size_t d = 1; d < axis; ++d) outer *= ps[d];
    for (size_t d = axis + 1; d < ps.size(); ++d) inner *= ps[d];
    const size_t row = size_t(inner) * es;
    char* dst = mutable_bytes(y);
    const char* src = bytes(upd);
    ctx.parallel_for(batch * outer, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, len * inner)), [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) {
        const int64_t start = starts[size_t(i / outer)];
        char* d = dst + size_t(i * max_len) * row;
        const char* s = src + size_t(i * len) * row;
        for (int64_t j = 0; j < len; ++j) {
          int64_t pos = start + j;
          if (pos >= max_len) pos -= max_len;  // circular only: start < max_len and len <= max_len
          std::memcpy(d + size_t(pos) * row, s + size_t(j) * row, row);
        }
      }
    });
  }

 private:
  int64_t axis_;
  bool circular_ = false;
};

}  // namespace

void register_scatter_ops(sdk::Registrar& reg) {
  reg.kernel<ScatterElements>("", "Scatter", 9, 10, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<ScatterElements>("", "ScatterElements", 11, 17, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<ScatterND>("", "ScatterND", 11, 17, "cpu", {{"T", 0, kMoveTypes}});
  // 18: reduction min and max.
  reg.kernel<ScatterElements>("", "ScatterElements", 18, SINGA_VERSION_OPEN, "cpu",
                              {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<ScatterND>("", "ScatterND", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}});
  reg.kernel<TensorScatter>("", "TensorScatter", 24, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(2));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
