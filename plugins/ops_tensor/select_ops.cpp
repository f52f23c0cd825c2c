// NonZero (coordinates of non-zero elements) and OneHot.
#include "common.hpp"
#include "registry.hpp"

#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

constexpr uint64_t kValueTypes = sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL);
// Indices and depth are read through int64 conversion.
constexpr uint64_t kIndexLike = sdk::kIntTypes | sdk::kFloatTypes;

template <typename T>
bool is_nonzero(T v) {
  if constexpr (std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value)
    return float(v) != 0.f;
  else
    return v != T(0);
}

class NonZero : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "X");
    // A scalar counts as a 1-element vector, as numpy.nonzero does.
    Shape shape = x.ndim() == 0 ? Shape{1} : x.shape();
    const int64_t n = x.numel(), r = int64_t(shape.size());
    std::vector<int64_t> hits;
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* p = x.data<T>();
          for (int64_t i = 0; i < n; ++i)
            if (is_nonzero(p[i])) hits.push_back(i);
        },
        kValueTypes);
    const int64_t nnz = int64_t(hits.size());
    Tensor y = ctx.output(0, {r, nnz}, SINGA_ONNX_INT64);
    int64_t* out = y.data<int64_t>();
    for (int64_t j = 0; j < nnz; ++j) {
      int64_t rem = hits[size_t(j)];
      for (int64_t d = r; d-- > 0;) {
        out[d * nnz + j] = rem % shape[size_t(d)];
        rem /= shape[size_t(d)];
      }
    }
  }
};

class OneHot : public KernelBase {
 public:
  explicit OneHot(const Node& node) : KernelBase(node), axis_(node.attr_int("axis", -1)) {}

  void compute(Context& ctx) const {
    Tensor ind = required(ctx, 0, "indices"), depth_t = required(ctx, 1, "depth"), values = required(ctx, 2, "values");
    SINGA_CHECK(depth_t.numel() == 1, "depth must hold one value, got shape " + shape_str(depth_t.shape()));
    SINGA_CHECK(values.numel() == 2, "values must hold [off_value, on_value], got shape " + shape_str(values.shape()));
    const int64_t depth = depth_t.int_at(0);
    SINGA_CHECK(depth > 0, "depth must be positive, got " + std::to_string(depth));
    const Shape is = ind.shape();
    const int64_t rank = int64_t(is.size()) + 1;
    const size_t axis = size_t(normalize_axis(axis_, rank, "axis"));
    Shape out(is.begin(), is.begin() + int64_t(axis));
    out.push_back(depth);
    out.insert(out.end(), is.begin() + int64_t(axis), is.end());
    std::vector<int64_t> idx = read_index_tensor(ind);
    Tensor y = ctx.output(0, out, values.dl_dtype());
    const size_t es = elem_size(values);
    const char* off = bytes(values);
    const char* on = off + es;
    char* dst = mutable_bytes(y);
    fill_elems(dst, off, y.numel(), es);
    int64_t inner = 1;
    for (size_t d = axis; d < is.size(); ++d) inner *= is[d];
    for (size_t i = 0; i < idx.size(); ++i) {
      int64_t k = idx[i] < 0 ? idx[i] + depth : idx[i];
      if (k < 0 || k >= depth) continue;  // out-of-range indices give an all-off row
      int64_t o = int64_t(i) / inner, in = int64_t(i) % inner;
      std::memcpy(dst + size_t((o * depth + k) * inner + in) * es, on, es);
    }
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_select_ops(sdk::Registrar& reg) {
  reg.kernel<NonZero>("", "NonZero", 9, 17, "cpu", {{"T", 0, kValueTypes}});
  // OneHot-11 only added negative indices, which OneHot-9 nodes never carry.
  reg.kernel<OneHot>("", "OneHot", 9, 17, "cpu",
                     {{"T1", 0, kIndexLike}, {"T2", 1, kIndexLike}, {"T3", 2, kMoveTypes}}, 0,
                     input_bit(1) | input_bit(2));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
