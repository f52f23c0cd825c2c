// hard_swish_match.hpp - HardSwish spelled out with ReLU6, as hand-written
// modules export it below opset 14 (timm's hard_swish, YOLOv5's export
// Hardswish, MobileNetV3 ports): y * Clip(y + 3, 0, 6) / 6, or
// y * (Clip(y + 3, 0, 6) / 6), the division also as a product with 1/6.
// activation_match.hpp fuses the four nodes as one HardSwish.
#ifndef SINGA_PLUGINS_COMMON_HARD_SWISH_MATCH_HPP
#define SINGA_PLUGINS_COMMON_HARD_SWISH_MATCH_HPP

#include <singa/graph_pass.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace singa {
namespace ops {

// Clip's bounds (attributes before opset 11, constant scalar inputs from
// it); false when a bound is not a constant float scalar.
inline bool clip_bounds(const sdk::Graph& g, const sdk::GraphNode& clip, float& lo, float& hi) {
  lo = std::numeric_limits<float>::lowest();
  hi = std::numeric_limits<float>::max();
  if (clip.opset() < 11) {
    lo = clip.attr_float("min", lo);
    hi = clip.attr_float("max", hi);
    return true;
  }
  for (size_t slot = 1; slot < 3 && slot < clip.num_inputs(); ++slot) {
    const std::string name = clip.input_name(slot);
    if (name.empty()) continue;
    sdk::Tensor t = g.constant(name);
    if (!t.present() || t.dtype() != SINGA_ONNX_FLOAT || t.numel() != 1) return false;
    (slot == 1 ? lo : hi) = t.data<float>()[0];
  }
  return true;
}

namespace hard_swish_detail {

inline bool standard(const sdk::GraphNode& n, const char* op, size_t ins) {
  const std::string d = n.domain();
  return n.valid() && (d.empty() || d == "ai.onnx") && n.op_type() == op && n.num_inputs() == ins &&
         n.num_outputs() == 1 && !n.output_name(0).empty();
}

// The input of two-input `n` other than x ("" when x is neither).
inline std::string other(const sdk::GraphNode& n, const std::string& x) {
  if (n.input_name(0) == x) return n.input_name(1);
  if (n.input_name(1) == x) return n.input_name(0);
  return "";
}

// Whether `name` is a float constant scalar within a relative 1e-6 of v.
inline bool scalar_is(const sdk::Graph& g, const std::string& name, float v) {
  if (name.empty()) return false;
  sdk::Tensor t = g.constant(name);
  return t.present() && t.dtype() == SINGA_ONNX_FLOAT && t.numel() == 1 &&
         std::abs(t.data<float>()[0] - v) <= 1e-6f * std::abs(v);
}

// The one reader of the output of `n`, when that output is read once and is
// no graph output; an invalid node otherwise.
inline sdk::GraphNode only_reader(const sdk::Graph& g, const sdk::GraphNode& n) {
  const std::string v = n.output_name(0);
  const sdk::GraphNode none(nullptr, nullptr);
  if (g.is_output(v)) return none;
  std::vector<sdk::GraphNode> r = g.consumers(v);
  return r.size() == 1 ? r[0] : none;
}

// Whether `n` divides x by 6 (Div(x, 6), Mul(x, 1/6) in either order).
inline bool sixth_of(const sdk::Graph& g, const sdk::GraphNode& n, const std::string& x) {
  if (standard(n, "Div", 2)) return n.input_name(0) == x && scalar_is(g, n.input_name(1), 6.f);
  return standard(n, "Mul", 2) && scalar_is(g, other(n, x), 1.f / 6.f);
}

}  // namespace hard_swish_detail

// With `readers` the two readers of y: on a match, `nodes` gets the four
// nodes of y's HardSwish, the one writing the result last.
inline bool match_relu6_hard_swish(const sdk::Graph& g, const std::string& y,
                                   const std::vector<sdk::GraphNode>& readers, std::vector<sdk::GraphNode>& nodes) {
  using namespace hard_swish_detail;
  if (readers.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    const sdk::GraphNode& add = readers[i];
    const sdk::GraphNode& mul = readers[1 - i];
    if (!standard(add, "Add", 2) || !scalar_is(g, other(add, y), 3.f) || !standard(mul, "Mul", 2)) continue;
    const sdk::GraphNode clip = only_reader(g, add);
    float lo = 0, hi = 0;
    if (!clip.valid() || clip.op_type() != "Clip" || clip.input_name(0) != add.output_name(0) ||
        clip.num_outputs() != 1 || !clip_bounds(g, clip, lo, hi) || lo != 0.f || hi != 6.f)
      continue;
    const sdk::GraphNode next = only_reader(g, clip);
    if (!next.valid()) continue;
    const std::string c = clip.output_name(0);
    if (next == mul && other(mul, y) == c) {
      // y * relu6(y + 3), then / 6.
      const sdk::GraphNode scale = only_reader(g, mul);
      if (!scale.valid() || !sixth_of(g, scale, mul.output_name(0))) continue;
      nodes = {add, clip, mul, scale};
      return true;
    }
    // relu6(y + 3) / 6, then y * that.
    if (!sixth_of(g, next, c)) continue;
    const sdk::GraphNode last = only_reader(g, next);
    if (!last.valid() || !(last == mul) || other(mul, y) != next.output_name(0)) continue;
    nodes = {add, clip, next, mul};
    return true;
  }
  return false;
}

}  // namespace ops
}  // namespace singa
#endif
