// TopK: the k largest (or smallest) values along an axis and their int64
// indices. Opset 1 takes k as an attribute, 10+ as input 1; 11 adds
// `largest` and `sorted`; 24 bfloat16. Equal values keep their original order (lower index
// first), as the opset-11 specification requires; results are always sorted.
#include "reduce_common.hpp"
#include "topk_select.hpp"

#include <memory>

namespace singa {
namespace ops {
namespace reduce {
namespace {

// NaN ranks above every number so that the ordering stays strict-weak.
template <typename C> inline bool above(C a, C b) {
  if (a != a) return b == b;
  if (b != b) return false;
  return a > b;
}

template <typename T>
void run(const sdk::Context& ctx, const AxisSplit& s, int64_t k, bool largest, const T* x, T* vals, int64_t* idx) {
  using C = cmp_t<T>;
  using Item = std::pair<C, int64_t>;
  if (s.outer == 0 || s.inner == 0 || k == 0) return;
  if (k <= kTopKSelectMax) {
    // One pass per lane with a k-entry buffer (topk_select.hpp); a strided or
    // narrow-typed lane is copied into `row` first.
    ctx.parallel_for(s.outer * s.inner, grain_for(s.n), [&](int64_t b, int64_t e) {
      const size_t row_len = s.inner == 1 && std::is_same<T, C>::value ? 0 : size_t(s.n);
      // unique_ptr, not vector: std::vector<bool> has no data().
      std::unique_ptr<C[]> row(row_len ? new C[row_len] : nullptr), bv(new C[size_t(k)]);
      std::vector<int64_t> bi(static_cast<size_t>(k));
      TopKBuffer<C> buf{bv.get(), bi.data(), k};
      for (int64_t lane = b; lane < e; ++lane) {
        const int64_t o = lane / s.inner, i = lane % s.inner;
        const T* xs = x + o * s.n * s.inner + i;
        const C* xr = nullptr;
        if constexpr (std::is_same<T, C>::value) {
          xr = xs;
        }
        if (row) {
          for (int64_t j = 0; j < s.n; ++j) row[size_t(j)] = widen<C>(xs[j * s.inner]);
          xr = row.get();
        }
        topk_select(buf, xr, s.n, largest);
        T* vo = vals + o * k * s.inner + i;
        int64_t* io = idx + o * k * s.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vo[j * s.inner] = xs[bi[size_t(j)] * s.inner];
          io[j * s.inner] = bi[size_t(j)];
        }
      }
    });
    return;
  }
  auto before = [largest](const Item& a, const Item& b) {
    if (largest) return above(a.first, b.first) || (!above(b.first, a.first) && a.second < b.second);
    return above(b.first, a.first) || (!above(a.first, b.first) && a.second < b.second);
  };
  ctx.parallel_for(s.outer * s.inner, grain_for(s.n * 4), [&](int64_t b, int64_t e) {
    std::vector<Item> items(size_t(s.n));
    for (int64_t lane = b; lane < e; ++lane) {
      const int64_t o = lane / s.inner, i = lane % s.inner;
      const T* xs = x + o * s.n * s.inner + i;
      for (int64_t j = 0; j < s.n; ++j) items[size_t(j)] = Item(widen<C>(xs[j * s.inner]), j);
      std::partial_sort(items.begin(), items.begin() + k, items.end(), before);
      T* vo = vals + o * k * s.inner + i;
      int64_t* io = idx + o * k * s.inner + i;
      for (int64_t j = 0; j < k; ++j) {
        vo[j * s.inner] = xs[items[size_t(j)].second * s.inner];
        io[j * s.inner] = items[size_t(j)].second;
      }
    }
  });
}

// KFromInput: opset 10+ reads k from input 1 (int64, one value).
template <bool KFromInput> class TopK {
 public:
  explicit TopK(const sdk::Node& node) {
    axis_ = node.attr_int("axis", -1);
    largest_ = node.attr_int("largest", 1) != 0;
    if (KFromInput) {
      if (!node.has_input(1)) sdk::fail("input 'K' is required");
      sdk::Tensor c = node.constant(1);
      if (c.present()) {
        k_ = read_k(c);
        k_known_ = true;
      }
    } else {
      if (!node.has_attr("k")) sdk::fail("attribute 'k' is required");
      k_ = node.attr_int("k", 0);
      if (k_ < 0) sdk::fail("attribute 'k' must not be negative, got " + std::to_string(k_));
      k_known_ = true;
    }
    singa_value_info in = node.input_info(0);
    if (in.ndim >= 0) normalize_axis(axis_, in.ndim);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = ctx.input(0);
    if (!k_known_ && !ctx.has_input(1)) sdk::fail("input 'K' is missing");
    const int64_t k = k_known_ ? k_ : read_k(ctx.input(1));
    const Shape shape = x.shape();
    const int64_t axis = normalize_axis(axis_, int64_t(shape.size()));
    if (k > shape[size_t(axis)])
      sdk::fail("k = " + std::to_string(k) + " exceeds the size " + std::to_string(shape[size_t(axis)]) + " of axis " +
                std::to_string(axis));
    AxisSplit s = split_at(shape, axis);
    Shape out_shape = shape;
    out_shape[size_t(axis)] = k;
    sdk::Tensor vals = ctx.output(0, out_shape, x.dl_dtype());
    sdk::Tensor idx = ctx.output(1, out_shape, SINGA_ONNX_INT64);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          run<T>(ctx, s, k, largest_, x.data<T>(), vals.data<T>(), idx.data<int64_t>());
        },
        kAllNumeric);
  }

 private:
  int64_t read_k(const sdk::Tensor& t) const {
    if (t.dtype() != SINGA_ONNX_INT64)
      sdk::fail(std::string("input 'K' must be int64, got ") + sdk::dtype_name(t.dtype()));
    if (t.numel() != 1) sdk::fail("input 'K' must hold one value, got " + std::to_string(t.numel()));
    int64_t k = t.data<int64_t>()[0];
    if (k < 0) sdk::fail("K must not be negative, got " + std::to_string(k));
    return k;
  }

  int64_t axis_ = -1, k_ = 0;
  bool largest_ = true, k_known_ = false;
};

}  // namespace

void register_topk(sdk::Registrar& reg) {
  const uint64_t i64 = sdk::bit(SINGA_ONNX_INT64);
  reg.kernel<TopK<false>>("", "TopK", 1, 9, "cpu", {{"T", 0, sdk::kFloatTypes}, {"I", -2, i64}});
  reg.kernel<TopK<true>>("", "TopK", 10, 10, "cpu", {{"T", 0, sdk::kFloatTypes}, {"I", -2, i64}}, 0, uint64_t(1) << 1);
  reg.kernel<TopK<true>>("", "TopK", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, sdk::kFloatTypes | sdk::kIntTypes}, {"I", -2, i64}}, 0,
                         uint64_t(1) << 1);
  // TopK-24 added bfloat16.
  reg.kernel<TopK<true>>("", "TopK", 24, SINGA_VERSION_OPEN, "cpu",
                         {{"T", 0, sdk::kFloatTypes | sdk::kIntTypes | kBf16}, {"I", -2, i64}}, 0, uint64_t(1) << 1);
}

}  // namespace reduce
}  // namespace ops
}  // namespace singa
