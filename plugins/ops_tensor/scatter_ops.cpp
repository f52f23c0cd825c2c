// Index-driven writes: Scatter (9-10), ScatterElements and ScatterND, with the
// opset-16 `reduction` (none, add, mul). The output starts as a copy of data;
// updates are applied in index order so that duplicates behave as the
// reference does (last write wins, or reductions accumulate).
#include "common.hpp"
#include "registry.hpp"

#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

enum class Reduction { kNone, kAdd, kMul };

template <typename T>
void reduce_into(T* dst, const T* src, int64_t n, Reduction r) {
  constexpr bool narrow_float = std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (narrow_float) {
      float a = float(dst[i]), b = float(src[i]);
      dst[i] = T(r == Reduction::kAdd ? a + b : a * b);
    } else if constexpr (std::is_same<T, bool>::value) {
      dst[i] = r == Reduction::kAdd ? (dst[i] || src[i]) : (dst[i] && src[i]);
    } else {
      dst[i] = T(r == Reduction::kAdd ? dst[i] + src[i] : dst[i] * src[i]);
    }
  }
}

class ScatterBase : public KernelBase {
 public:
  explicit ScatterBase(const Node& node) : KernelBase(node) {
    std::string r = node.attr_string("reduction", "none");
    if (r == "add") reduction_ = Reduction::kAdd;
    else if (r == "mul") reduction_ = Reduction::kMul;
    else if (r != "none") sdk::fail("attribute 'reduction' must be none, add or mul, got '" + r + "'");
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
    check(reduction_ == Reduction::kNone || (sdk::bit(x.dtype()) & (sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL))),
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
    check(upd.shape() == is, "updates of shape " + shape_str(upd.shape()) + " must match indices of shape " + shape_str(is));
    check(upd.dl_dtype() == x.dl_dtype(), "updates must have the element type of data");
    check(is.size() == in.size(), "indices of shape " + shape_str(is) + " must have the rank of data " + shape_str(in));
    check_reduction_dtype(x);
    const size_t axis = size_t(normalize_axis(axis_, int64_t(in.size()), "axis"));
    for (size_t d = 0; d < in.size(); ++d)
      check(d == axis || is[d] <= in[d], "indices of shape " + shape_str(is) + " exceed data of shape " + shape_str(in) +
                                             " on axis " + std::to_string(d));
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
    check(k <= in.size(), "indices' last dimension " + std::to_string(k) + " exceeds data rank " + std::to_string(in.size()));
    Shape expect(is.begin(), is.end() - 1);
    expect.insert(expect.end(), in.begin() + int64_t(k), in.end());
    check(upd.shape() == expect, "updates of shape " + shape_str(upd.shape()) + " should be " + shape_str(expect));
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

}  // namespace

void register_scatter_ops(sdk::Registrar& reg) {
  reg.kernel<ScatterElements>("", "Scatter", 9, 10, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<ScatterElements>("", "ScatterElements", 11, 17, "cpu", {{"T", 0, kMoveTypes}, {"Tind", 1, kIndexTypes}});
  reg.kernel<ScatterND>("", "ScatterND", 11, 17, "cpu", {{"T", 0, kMoveTypes}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
