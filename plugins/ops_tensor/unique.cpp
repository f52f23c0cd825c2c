// Unique (opsets 11-17): the distinct elements of the flattened input, or
// the distinct slices along `axis`, sorted (numpy's order, lexicographic for
// slices) or in order of first occurrence, with first indices, inverse
// indices and counts. NaNs compare equal to each other and sort last, as
// numpy's unique does.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>

namespace singa {
namespace ops {
namespace tensor {
namespace {

constexpr uint64_t kUniqueTypes = sdk::kFloatTypes | sdk::kIntTypes | sdk::bit(SINGA_ONNX_BOOL) |
                                  sdk::bit(SINGA_ONNX_COMPLEX64) | sdk::bit(SINGA_ONNX_COMPLEX128);

// A total order on one element type: NaN after every number, equal to NaN.
template <typename T>
struct Order {
  static int cmp(T a, T b) { return a < b ? -1 : (b < a ? 1 : 0); }
};
template <typename F>
int cmp_float(F a, F b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (b < a ? 1 : 0);
}
template <>
struct Order<float> {
  static int cmp(float a, float b) { return cmp_float(a, b); }
};
template <>
struct Order<double> {
  static int cmp(double a, double b) { return cmp_float(a, b); }
};
template <>
struct Order<sdk::half> {
  static int cmp(sdk::half a, sdk::half b) { return cmp_float(float(a), float(b)); }
};
// numpy orders complex numbers by real part, then imaginary part.
template <typename F>
struct Order<std::complex<F>> {
  static int cmp(std::complex<F> a, std::complex<F> b) {
    const int c = cmp_float(a.real(), b.real());
    return c != 0 ? c : cmp_float(a.imag(), b.imag());
  }
};

// The input seen as [outer, count, inner]: slice s is every x[o, s, i].
struct Slices {
  int64_t outer = 1, count = 0, inner = 1;
};

// Groups of equal slices: the slice indices in sorted order and where each
// run of equal slices starts.
template <typename T>
void group_slices(const T* x, const Slices& s, std::vector<int64_t>& order, std::vector<int64_t>& run_start) {
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < s.outer; ++o) {
      const T* pa = x + (o * s.count + a) * s.inner;
      const T* pb = x + (o * s.count + b) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) {
        const int c = Order<T>::cmp(pa[i], pb[i]);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  order.resize(size_t(s.count));
  std::iota(order.begin(), order.end(), int64_t(0));
  // stable: the first slice of each run is its first occurrence
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  run_start.clear();
  for (int64_t k = 0; k < s.count; ++k)
    if (k == 0 || cmp(order[size_t(k - 1)], order[size_t(k)]) != 0) run_start.push_back(k);
  run_start.push_back(s.count);
}

class Unique : public KernelBase {
 public:
  explicit Unique(const Node& node)
      : KernelBase(node), has_axis_(node.has_attr("axis")), axis_(node.attr_int("axis", 0)),
        sorted_(node.attr_int("sorted", 1)) {
    if (sorted_ != 0 && sorted_ != 1) node.fail("sorted must be 0 or 1, got " + std::to_string(sorted_));
  }

  void compute(Context& ctx) const {
    const Tensor x = required(ctx, 0, "X");
    const Shape shape = x.shape();
    Slices s;
    int64_t axis = -1;
    if (has_axis_) {
      axis = normalize_axis(axis_, int64_t(shape.size()), "axis");
      for (int64_t d = 0; d < axis; ++d) s.outer *= shape[size_t(d)];
      for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) s.inner *= shape[d];
      s.count = shape[size_t(axis)];
    } else {
      s.count = x.numel();
    }
    std::vector<int64_t> order, run_start;
    switch (x.dtype()) {
      case SINGA_ONNX_COMPLEX64:
        group_slices(x.data<std::complex<float>>(), s, order, run_start);
        break;
      case SINGA_ONNX_COMPLEX128:
        group_slices(x.data<std::complex<double>>(), s, order, run_start);
        break;
      default:
        sdk::dispatch(
            x.dtype(), [&](auto tag) { group_slices(x.data<decltype(tag)>(), s, order, run_start); },
            kUniqueTypes & ~(sdk::bit(SINGA_ONNX_COMPLEX64) | sdk::bit(SINGA_ONNX_COMPLEX128)));
    }
    const int64_t u = int64_t(run_start.size()) - 1;
    // groups in output order: by value when sorted, else by first occurrence
    std::vector<int64_t> group(static_cast<size_t>(u));
    std::iota(group.begin(), group.end(), int64_t(0));
    if (!sorted_)
      std::sort(group.begin(), group.end(), [&](int64_t a, int64_t b) {
        return order[size_t(run_start[size_t(a)])] < order[size_t(run_start[size_t(b)])];
      });

    Shape y_shape = has_axis_ ? shape : Shape{u};
    if (has_axis_) y_shape[size_t(axis)] = u;
    Tensor y = ctx.output(0, y_shape, x.dl_dtype());
    const size_t es = elem_size(x), row = size_t(s.inner) * es;
    for (int64_t g = 0; g < u; ++g) {
      const int64_t first = order[size_t(run_start[size_t(group[size_t(g)])])];
      for (int64_t o = 0; o < s.outer; ++o)
        std::memcpy(mutable_bytes(y) + size_t(o * u + g) * row, bytes(x) + size_t(o * s.count + first) * row, row);
    }
    const size_t outs = ctx.num_outputs();
    if (outs > 1) {
      int64_t* idx = ctx.output(1, {u}, SINGA_ONNX_INT64).data<int64_t>();
      for (int64_t g = 0; g < u; ++g) idx[g] = order[size_t(run_start[size_t(group[size_t(g)])])];
    }
    if (outs > 2) {
      int64_t* inv = ctx.output(2, {s.count}, SINGA_ONNX_INT64).data<int64_t>();
      for (int64_t g = 0; g < u; ++g) {
        const int64_t grp = group[size_t(g)];
        for (int64_t k = run_start[size_t(grp)]; k < run_start[size_t(grp + 1)]; ++k) inv[order[size_t(k)]] = g;
      }
    }
    if (outs > 3) {
      int64_t* counts = ctx.output(3, {u}, SINGA_ONNX_INT64).data<int64_t>();
      for (int64_t g = 0; g < u; ++g) {
        const int64_t grp = group[size_t(g)];
        counts[g] = run_start[size_t(grp + 1)] - run_start[size_t(grp)];
      }
    }
  }

 private:
  bool has_axis_;
  int64_t axis_, sorted_;
};

}  // namespace

void register_unique(sdk::Registrar& reg) {
  reg.kernel<Unique>("", "Unique", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kUniqueTypes}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
