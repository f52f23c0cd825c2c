// squeeze_rules.hpp - the output shapes of Flatten, Squeeze and Unsqueeze and
// where Squeeze/Unsqueeze read their axes (an attribute until opset 12, input
// 1 from 13), shared by every device's kernels: the CPU, CUDA and OpenCL
// packs each had a copy. Errors are plain sdk::fail messages; the host
// prefixes them with the model, node and op.
#ifndef SINGA_PLUGINS_SQUEEZE_RULES_HPP
#define SINGA_PLUGINS_SQUEEZE_RULES_HPP

#include "broadcast.hpp"  // shape_str

#include <singa/kernel.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace ops {

// Flatten to [outer, inner] at `axis` (negative counts from the end).
inline sdk::Shape flatten_shape(const sdk::Shape& in, int64_t axis) {
  const int64_t r = int64_t(in.size());
  SINGA_CHECK(axis >= -r && axis <= r, "axis " + std::to_string(axis) + " is out of range for input of shape " + shape_str(in));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= in[size_t(i)];
  return {outer, inner};
}

// Squeeze's and Unsqueeze's axes.
class SqueezeAxes {
 public:
  explicit SqueezeAxes(const sdk::Node& node) : from_input_(node.opset() >= 13) {
    if (!from_input_) {
      has_attr_ = node.has_attr("axes");
      attr_ = node.attr_ints("axes");
    }
  }
  // The axes, or false when none are given; `read_ints(tensor)` reads input 1
  // (on the host) as each pack does.
  template <class ReadInts>
  bool get(const sdk::Context& ctx, ReadInts&& read_ints, std::vector<int64_t>& out) const {
    if (!from_input_) {
      out = attr_;
      return has_attr_;
    }
    if (!ctx.has_input(1)) return false;
    out = read_ints(ctx.input(1));
    return true;
  }

 private:
  bool from_input_;
  bool has_attr_ = false;
  std::vector<int64_t> attr_;
};

// Axes normalised against `rank`, sorted; a repeated axis is an error.
inline std::vector<int64_t> sorted_axes(std::vector<int64_t> axes, int64_t rank) {
  const std::vector<int64_t> given = axes;  // as written, for messages
  for (int64_t& a : axes) {
    SINGA_CHECK(a >= -rank && a < rank,
               "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank) + " (axes " + shape_str(given) + ")");
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  SINGA_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), "axes " + shape_str(given) + " repeat an axis");
  return axes;
}

// Squeeze: the given axes (which must have size 1), or every size-1 axis
// when `axes` is null.
inline sdk::Shape squeeze_shape(const sdk::Shape& in, const std::vector<int64_t>* axes) {
  sdk::Shape out;
  if (!axes) {
    for (int64_t d : in)
      if (d != 1) out.push_back(d);
    return out;
  }
  const std::vector<int64_t> ax = sorted_axes(*axes, int64_t(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const bool drop = std::binary_search(ax.begin(), ax.end(), int64_t(i));
    SINGA_CHECK(!drop || in[i] == 1, "cannot squeeze axis " + std::to_string(i) + " of size " + std::to_string(in[i]) +
                                        " (input shape " + shape_str(in) + ")");
    if (!drop) out.push_back(in[i]);
  }
  return out;
}

// Unsqueeze: size-1 axes inserted at `axes` of the result.
inline sdk::Shape unsqueeze_shape(const sdk::Shape& in, const std::vector<int64_t>& axes) {
  const int64_t rank = int64_t(in.size() + axes.size());
  SINGA_CHECK(rank <= SINGA_MAX_DIMS, "result rank " + std::to_string(rank) + " exceeds " + std::to_string(SINGA_MAX_DIMS));
  const std::vector<int64_t> ax = sorted_axes(axes, rank);
  sdk::Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(std::binary_search(ax.begin(), ax.end(), i) ? 1 : in[next++]);
  return out;
}

}  // namespace ops
}  // namespace singa
#endif
