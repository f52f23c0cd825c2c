// MaxUnpool: scatters pooled values back to the positions MaxPool's Indices
// name; everything else is zero.
#include "nn_common.hpp"
#include "register.hpp"
#include "spatial.hpp"

#include <cstring>

namespace singa {
namespace nn {
namespace {

class MaxUnpool : public NodeKernel {
 public:
  explicit MaxUnpool(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    sdk::Tensor ind = required(ctx, 1, "I");
    const Shape xs = x.shape();
    SINGA_CHECK(ind.shape() == xs, "I of shape " + shape_str(ind.shape()) + " must match X " + shape_str(xs));
    SINGA_CHECK(ind.dtype() == SINGA_ONNX_INT64, std::string("I must be int64, got ") + sdk::dtype_name(ind.dtype()));
    std::vector<int64_t> in = spatial_dims(xs, "X", *this);
    const size_t r = in.size();
    if (attrs_.kernel_shape.size() != r || (!attrs_.strides.empty() && attrs_.strides.size() != r) ||
        (!attrs_.pads.empty() && attrs_.pads.size() != 2 * r))
      fail("kernel_shape, strides and pads must match the " + std::to_string(r) + " spatial dims of X " + shape_str(xs));
    // The shape MaxPool's input had by default; indices are positions in it.
    Shape pooled_from{xs[0], xs[1]};
    for (size_t i = 0; i < r; ++i) {
      const int64_t s = attrs_.strides.empty() ? 1 : attrs_.strides[i];
      const int64_t p = attrs_.pads.empty() ? 0 : attrs_.pads[i] + attrs_.pads[i + r];
      pooled_from.push_back((in[i] - 1) * s + attrs_.kernel_shape[i] - p);
      SINGA_CHECK(pooled_from.back() > 0, "pads leave no output along spatial axis " + std::to_string(i));
    }
    Shape ys = pooled_from;
    if (ctx.has_input(2)) {
      ys = ctx.input(2).to_int_vector();
      SINGA_CHECK(
          ys.size() == xs.size() && ys[0] == xs[0] && ys[1] == xs[1],
          "output_shape " + shape_str(ys) + " must be [N, C, ...] of X's rank with X's N and C " + shape_str(xs));
      for (int64_t d : ys) SINGA_CHECK(d >= 0, "output_shape " + shape_str(ys) + " has a negative dim");
    }
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const size_t elem = size_t(x.dl_dtype().bits / 8);
    std::memset(y.data_ptr(), 0, size_t(sdk::numel(ys)) * elem);
    const int64_t* pi = ind.data<int64_t>();
    const int64_t total = sdk::numel(pooled_from), n = x.numel();
    const char* px = static_cast<const char*>(x.data_ptr());
    char* py = static_cast<char*>(y.data_ptr());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = pi[j];
      SINGA_CHECK(at >= 0 && at < total,
                  "index " + std::to_string(at) + " is outside the unpooled shape " + shape_str(pooled_from));
      // Same coordinates in the (possibly larger) requested output shape.
      int64_t rem = at, flat = 0, stride = 1;
      bool inside = true;
      for (size_t d = pooled_from.size(); d-- > 0;) {
        const int64_t c = rem % pooled_from[d];
        rem /= pooled_from[d];
        inside = inside && c < ys[d];
        flat += c * stride;
        stride *= ys[d];
      }
      if (inside) std::memcpy(py + size_t(flat) * elem, px + size_t(j) * elem, elem);
    }
  }

 private:
  WindowAttrs attrs_;
};

}  // namespace

void register_max_unpool(sdk::Registrar& reg) {
  const uint64_t i64 = bit(SINGA_ONNX_INT64);
  reg.kernel<MaxUnpool>("", "MaxUnpool", 9, 10, "cpu", {{"T1", 0, sdk::kFloatTypes}, {"T2", 1, i64}}, 0, 0b100);
  reg.kernel<MaxUnpool>("", "MaxUnpool", 11, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, sdk::kFloatTypes}, {"T2", 1, i64}}, 0, 0b100);
  reg.kernel<MaxUnpool>("", "MaxUnpool", 22, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kRealTypes}, {"T2", 1, i64}}, 0,
                        0b100);
}

}  // namespace nn
}  // namespace singa
