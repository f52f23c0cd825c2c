// Expand (broadcast to a shape) and Tile (repeat along each axis). Both are
// one copy whose source strides are 0 on repeated dimensions (repeat_copy.hpp).
#include "common.hpp"
#include "registry.hpp"
#include "repeat_copy.hpp"

#include <algorithm>

namespace singa {
namespace ops {
namespace tensor {
namespace {

class Expand : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    std::vector<int64_t> target = read_ints(required(ctx, 1, "shape"), "shape");
    const Shape in = x.shape();
    const size_t rank = std::max(in.size(), target.size());
    SINGA_CHECK(rank <= SINGA_MAX_DIMS, "result rank " + std::to_string(rank) + " is too large");
    Shape out(rank), src_strides(rank, 0);
    const Shape in_strides = contiguous_strides(in);
    for (size_t i = 0; i < rank; ++i) {
      // align both shapes on their last dimension
      int64_t a = i + in.size() >= rank ? in[i + in.size() - rank] : 1;
      int64_t b = i + target.size() >= rank ? target[i + target.size() - rank] : 1;
      SINGA_CHECK(a == b || a == 1 || b == 1,
                  "input of shape " + shape_str(in) + " cannot be expanded to " + ints_str(target));
      SINGA_CHECK(b >= 0, "shape " + ints_str(target) + " has a negative dimension");
      out[i] = a == 1 ? b : a;
      if (a != 1) src_strides[i] = in_strides[i + in.size() - rank];
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
    repeat_copy(ctx, out, mutable_bytes(y), bytes(x), src_strides, elem_size(x));
  }
};

class Tile : public KernelBase {
 public:
  explicit Tile(const Node& node) : KernelBase(node), legacy_(node.opset() < 6) {}

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    const Shape in = x.shape();
    std::vector<int64_t> repeats;
    if (legacy_) {
      // Tile-1: a scalar count of tiles along one scalar axis.
      int64_t tiles = read_scalar_int(required(ctx, 1, "tiles"), "tiles");
      int64_t axis = normalize_axis(read_scalar_int(required(ctx, 2, "axis"), "axis"), int64_t(in.size()), "axis");
      repeats.assign(in.size(), 1);
      repeats[size_t(axis)] = tiles;
    } else {
      repeats = read_ints(required(ctx, 1, "repeats"), "repeats");
    }
    SINGA_CHECK(repeats.size() == in.size(),
                "repeats " + ints_str(repeats) + " must have one entry per input dimension " + shape_str(in));
    // View the output as [rep_0, d_0, rep_1, d_1, ...]: row-major it is the tiled tensor.
    const Shape in_strides = contiguous_strides(in);
    Shape out(in.size()), view, src_strides;
    for (size_t i = 0; i < in.size(); ++i) {
      SINGA_CHECK(repeats[i] >= 0, "repeats " + ints_str(repeats) + " has a negative entry");
      out[i] = in[i] * repeats[i];
      view.insert(view.end(), {repeats[i], in[i]});
      src_strides.insert(src_strides.end(), {0, in_strides[i]});
    }
    Tensor y = ctx.output(0, out, x.dl_dtype());
    repeat_copy(ctx, view, mutable_bytes(y), bytes(x), src_strides, elem_size(x));
  }

 private:
  bool legacy_;
};

}  // namespace

void register_expand_tile(sdk::Registrar& reg) {
  reg.kernel<Expand>("", "Expand", 8, 17, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
  reg.kernel<Tile>("", "Tile", 1, 5, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1) | input_bit(2));
  reg.kernel<Tile>("", "Tile", 6, 17, "cpu", {{"T", 0, kMoveTypes}}, 0, input_bit(1));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
