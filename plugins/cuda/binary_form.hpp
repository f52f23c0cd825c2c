// binary_form.hpp - how a binary op's B lines up with A. Before opset 7 B
// broadcasts onto A only with broadcast=1, aligned at `axis` (default: B's
// dims are A's trailing dims); from 7 numpy rules apply both ways.
#ifndef SINGA_CUDA_BINARY_FORM_HPP
#define SINGA_CUDA_BINARY_FORM_HPP

#include "broadcast.hpp"
#include "ops_common.hpp"

namespace singa {
namespace cuda {

class BinaryForm {
 public:
  explicit BinaryForm(const sdk::Node& node) : legacy_(node.opset() < 7) {
    if (!legacy_) return;
    broadcast_ = node.attr_int("broadcast", 0) != 0;
    has_axis_ = node.has_attr("axis");
    axis_ = node.attr_int("axis", 0);
  }

  // B's shape as the broadcasting plan sees it, and the output shape.
  void shapes(const sdk::Shape& as, const sdk::Shape& bs, sdk::Shape& b_view, sdk::Shape& out, const NodeKernel& k) const {
    b_view = legacy_ ? legacy_b_shape(as, bs, k) : bs;
    k.check(broadcast_shape(as, b_view, out), "shapes " + shape_str(as) + " and " + shape_str(bs) + " do not broadcast");
  }

 private:
  sdk::Shape legacy_b_shape(const sdk::Shape& as, const sdk::Shape& bs, const NodeKernel& k) const {
    if (!broadcast_) {
      k.check(as == bs, "shapes " + shape_str(as) + " and " + shape_str(bs) +
                            " differ and the broadcast attribute is not set (opset < 7)");
      return bs;
    }
    const int64_t rank = int64_t(as.size()), brank = int64_t(bs.size());
    int64_t axis = has_axis_ ? axis_ : rank - brank;
    if (axis < 0) axis += rank;
    k.check(brank <= rank && axis >= 0 && axis + brank <= rank,
            "cannot broadcast B " + shape_str(bs) + " onto A " + shape_str(as) + " at axis " + std::to_string(axis));
    sdk::Shape full(as.size(), 1);
    for (int64_t i = 0; i < brank; ++i) {
      const int64_t d = bs[size_t(i)];
      k.check(d == 1 || d == as[size_t(axis + i)],
              "cannot broadcast B " + shape_str(bs) + " onto A " + shape_str(as) + " at axis " + std::to_string(axis));
      full[size_t(axis + i)] = d;
    }
    return full;
  }

  bool legacy_ = false, broadcast_ = false, has_axis_ = false;
  int64_t axis_ = 0;
};

}  // namespace cuda
}  // namespace singa

#endif
