// Backward rules of shape and data-movement ops and reductions.
#include "tape.hpp"

namespace singa {
namespace autograd {
namespace {

void reshape_like(GradContext& c) { c.gx[0] = c.gy[0].reshaped(c.x[0].shape()); }

int64_t norm_axis(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }

// ReduceSum / ReduceMean: the gradient spreads back over the reduced axes.
void reduce_rule(GradContext& c, bool mean) {
  const Shape& xs = c.x[0].shape();
  std::vector<int64_t> axes;
  bool axes_input = c.node.proto.op_type() == "ReduceSum" && c.node.opset >= 13;
  if (axes_input) {
    if (c.x.size() > 1 && c.x[1].defined())
      for (int64_t i = 0; i < c.x[1].numel(); ++i) axes.push_back(c.x[1].data<int64_t>()[i]);
  } else {
    axes = c.attr_ints("axes");
  }
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) {
    c.gx[0] = c.gy[0];
    return;
  }
  std::vector<bool> reduced(xs.size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(norm_axis(a, xs.size()))] = true;
  Shape kept = xs;
  int64_t count = 1;
  for (size_t i = 0; i < xs.size(); ++i)
    if (reduced[i]) {
      count *= xs[i];
      kept[i] = 1;
    }
  Tensor g = c.gy[0].reshaped(kept);
  if (mean) g = run1("Mul", {g, scalar(1.0 / double(count), g.dtype())});
  c.gx[0] = run1("Expand", {g, int64s(xs)});
}

void transpose_rule(GradContext& c) {
  std::vector<int64_t> perm = c.attr_ints("perm");
  size_t r = size_t(c.x[0].ndim());
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  std::vector<int64_t> inv(r);
  for (size_t i = 0; i < r; ++i) inv[size_t(perm[i])] = int64_t(i);
  c.gx[0] = run1("Transpose", {c.gy[0]}, Attrs().set("perm", inv));
}

void concat_rule(GradContext& c) {
  const size_t r = size_t(c.y[0].ndim());
  int64_t axis = norm_axis(c.attr_int("axis", 0), r);
  std::vector<int64_t> sizes;
  for (const Tensor& t : c.x) sizes.push_back(t.shape()[size_t(axis)]);
  std::vector<Tensor> parts = run("Split", {c.gy[0], int64s(sizes)}, Attrs().set("axis", axis), sizes.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (c.need[i]) c.gx[i] = parts[i];
}

void split_rule(GradContext& c) {
  const size_t r = size_t(c.x[0].ndim());
  int64_t axis = norm_axis(c.attr_int("axis", 0), r);
  std::vector<Tensor> parts;
  for (size_t k = 0; k < c.y.size(); ++k) {
    if (!c.y[k].defined()) continue;
    parts.push_back(c.gy[k].defined() ? c.gy[k] : Tensor::zeros(c.y[k].shape(), c.y[k].dtype()));
  }
  c.gx[0] = run1("Concat", parts, Attrs().set("axis", axis));
}

void expand_rule(GradContext& c) { c.gx[0] = reduce_to(c.gy[0], c.x[0].shape()); }

// Slice: the gradient lands where the slice was taken, zeros elsewhere.
void slice_rule(GradContext& c) {
  std::vector<Tensor> in{c.gy[0], c.x[0]};
  for (size_t i = 1; i < c.x.size(); ++i) in.push_back(c.x[i]);
  if (c.node.opset < 10) {
    // Before opset 10 starts/ends/axes are attributes.
    in.resize(2);
    in.push_back(int64s(c.attr_ints("starts")));
    in.push_back(int64s(c.attr_ints("ends")));
    std::vector<int64_t> axes = c.attr_ints("axes");
    if (!axes.empty()) in.push_back(int64s(axes));
  }
  c.gx[0] = run_grad("SliceGrad", ::onnx::NodeProto(), in, {true})[0];
}

void gather_rule(GradContext& c) {
  c.gx[0] = run_grad("GatherGrad", c.node.proto, {c.gy[0], c.x[0], c.x[1]}, {true})[0];
}

}  // namespace

void register_tensor_rules() {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) register_rule("", op, reshape_like);
  register_rule("", "Transpose", transpose_rule);
  register_rule("", "Concat", concat_rule);
  register_rule("", "Split", split_rule);
  register_rule("", "Expand", expand_rule);
  register_rule("", "Slice", slice_rule);
  register_rule("", "Gather", gather_rule);
  register_rule("", "ReduceSum", [](GradContext& c) { reduce_rule(c, false); });
  register_rule("", "ReduceMean", [](GradContext& c) { reduce_rule(c, true); });
}

void register_math_rules();
void register_nn_rules();
void register_elementwise_rules();

void register_builtin_rules() {
  register_math_rules();
  register_nn_rules();
  register_tensor_rules();
  register_elementwise_rules();
}

}  // namespace autograd
}  // namespace singa
