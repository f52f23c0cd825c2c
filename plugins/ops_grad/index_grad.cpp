// SliceGrad(dY, X, starts, ends[, axes[, steps]]) and GatherGrad(dY, X,
// indices): zeros of X's shape with dY added where the forward op read.
#include "register.hpp"

#include <nn_common.hpp>

#include <algorithm>
#include <cstring>

namespace singa {
namespace grad {
namespace {

using nn::NodeKernel;
using nn::Shape;

class SliceGrad : public NodeKernel {
 public:
  explicit SliceGrad(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X");
    std::vector<int64_t> starts = required(ctx, 2, "starts").to_int_vector(), ends = required(ctx, 3, "ends").to_int_vector();
    const Shape xs = x.shape();
    const int64_t r = int64_t(xs.size());
    std::vector<int64_t> axes, steps;
    if (ctx.has_input(4)) axes = ctx.input(4).to_int_vector();
    if (ctx.has_input(5)) steps = ctx.input(5).to_int_vector();
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    check(starts.size() == ends.size() && axes.size() == starts.size() && steps.size() == starts.size(),
          "starts, ends, axes and steps differ in length");
    std::vector<int64_t> first(size_t(r), 0), step(size_t(r), 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      check(a >= 0 && a < r && steps[i] != 0, "bad axis or zero step");
      const int64_t dim = xs[size_t(a)];
      int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
      s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
      first[size_t(a)] = s;
      step[size_t(a)] = steps[i];
    }
    const Shape ys = dy.shape();
    check(int64_t(ys.size()) == r, "dY must have the rank of X");
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    const size_t es = size_t(x.dl_dtype().bits / 8) * x.dl_dtype().lanes;
    check(es > 0 && dy.dtype() == x.dtype(), "dY and X must share a fixed-size element type");
    char* o = static_cast<char*>(dx.data_ptr());
    std::memset(o, 0, size_t(x.numel()) * es);
    const char* g = static_cast<const char*>(dy.data_ptr());
    std::vector<int64_t> stride(size_t(r), 1), pos(size_t(r), 0);
    for (int64_t i = r - 2; i >= 0; --i) stride[size_t(i)] = stride[size_t(i + 1)] * xs[size_t(i + 1)];
    for (int64_t j = 0; j < dy.numel(); ++j) {
      int64_t at = 0;
      for (int64_t i = 0; i < r; ++i) at += (first[size_t(i)] + pos[size_t(i)] * step[size_t(i)]) * stride[size_t(i)];
      std::memcpy(o + at * int64_t(es), g + j * int64_t(es), es);  // a slice reads each position once
      for (int64_t i = r - 1; i >= 0; --i) {
        if (++pos[size_t(i)] < ys[size_t(i)]) break;
        pos[size_t(i)] = 0;
      }
    }
  }
};

class GatherGrad : public NodeKernel {
 public:
  explicit GatherGrad(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 0)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor dy = required(ctx, 0, "dY"), x = required(ctx, 1, "X"), idx = required(ctx, 2, "indices");
    const Shape xs = x.shape();
    const int64_t r = int64_t(xs.size()), axis = axis_ < 0 ? axis_ + r : axis_;
    check(axis >= 0 && axis < r, "axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= xs[size_t(i)];
    for (int64_t i = axis + 1; i < r; ++i) inner *= xs[size_t(i)];
    const int64_t n = xs[size_t(axis)], k = idx.numel();
    check(dy.numel() == outer * k * inner, "dY does not match Gather's output");
    sdk::Tensor dx = ctx.output(0, xs, x.dl_dtype());
    nn::dispatch_among<float, double>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const T* g = dy.data<T>();
      T* o = dx.data<T>();
      std::fill(o, o + x.numel(), T(0));
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = idx.int_at(j);
          if (at < 0) at += n;
          check(at >= 0 && at < n, "index out of range");
          const T* src = g + (a * k + j) * inner;
          T* dst = o + (a * n + at) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
        }
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_index_grads(sdk::Registrar& reg) {
  reg.kernel<SliceGrad>(kDomain, "SliceGrad", 1, 1, "cpu", {});
  reg.kernel<GatherGrad>(kDomain, "GatherGrad", 1, 1, "cpu", {{"T", 1, kGradTypes}, {"Tind", 2, sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64)}});
}

}  // namespace grad
}  // namespace singa
