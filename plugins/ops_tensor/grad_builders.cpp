// Gradients of this pack's shape and data-movement ops, as builders of
// backward nodes (gradient.hpp).
#include <singa/gradient.hpp>

#include <algorithm>

namespace {

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

int64_t norm_axis(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }

// Ops that only relabel the elements: the gradient takes the input's shape.
void reshape_like(GradBuilder& b) { b.set(0, b.reshape(b.output_grad(0), b.shape(b.input(0)))); }
SINGA_GRADIENT("", "Reshape", reshape_like);
SINGA_GRADIENT("", "Flatten", reshape_like);
SINGA_GRADIENT("", "Squeeze", reshape_like);
SINGA_GRADIENT("", "Unsqueeze", reshape_like);
SINGA_GRADIENT("", "Identity", [](GradBuilder& b) { b.set(0, b.output_grad(0)); });
SINGA_GRADIENT("", "OptionalGetElement", [](GradBuilder& b) { b.set(0, b.output_grad(0)); });
SINGA_GRADIENT("", "Cast", [](GradBuilder& b) {
  b.set(0, b.emit("Cast", {b.output_grad(0)}, {Attr("to", int64_t(b.dtype(b.input(0))))}));
});

SINGA_GRADIENT("", "Transpose", [](GradBuilder& b) {
  std::vector<int64_t> perm = b.node().attr_ints("perm");
  const size_t r = size_t(b.ndim(b.input(0)));
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  std::vector<int64_t> inv(r);
  for (size_t i = 0; i < r; ++i) inv[size_t(norm_axis(perm[i], r))] = int64_t(i);
  b.set(0, b.emit("Transpose", {b.output_grad(0)}, {Attr("perm", inv)}));
});

// Concat: the gradient split back into the inputs' extents along the axis.
SINGA_GRADIENT("", "Concat", [](GradBuilder& b) {
  const size_t r = size_t(b.ndim(b.output(0)));
  const int64_t axis = norm_axis(b.node().attr_int("axis", 0), r);
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < b.num_inputs(); ++i) sizes.push_back(b.shape(b.input(i))[size_t(axis)]);
  Emit e;
  e.op_type = "Split";
  e.inputs = {b.output_grad(0), b.int64s(sizes)};
  e.num_outputs = sizes.size();
  e.attrs = {Attr("axis", axis)};
  std::vector<Value> parts = b.emit(e);
  for (size_t i = 0; i < parts.size(); ++i)
    if (b.needs(i)) b.set(i, parts[i]);
});

// Split: the outputs' gradients (zeros where none reached) concatenated.
SINGA_GRADIENT("", "Split", [](GradBuilder& b) {
  const int64_t axis = norm_axis(b.node().attr_int("axis", 0), size_t(b.ndim(b.input(0))));
  std::vector<Value> parts;
  for (size_t k = 0; k < b.num_outputs(); ++k) {
    const Value y = b.output(k), g = b.output_grad(k);
    if (y.empty()) continue;
    parts.push_back(!g.empty() ? g : b.zeros(b.shape(y), b.dtype(y)));
  }
  b.set(0, b.emit("Concat", parts, {Attr("axis", axis)}));
});

SINGA_GRADIENT("", "Expand", [](GradBuilder& b) { b.set_sum_to(0, b.output_grad(0)); });

// Tile: output axis k holds repeats[k] copies of input axis k; viewing the
// gradient as [r0, d0, r1, d1, ...] and summing the r axes undoes it.
SINGA_GRADIENT("", "Tile", [](GradBuilder& b) {
  const Shape xs = b.shape(b.input(0));
  const std::vector<int64_t> reps = b.input_ints(1);
  Shape split;
  std::vector<int64_t> axes;
  for (size_t k = 0; k < xs.size(); ++k) {
    axes.push_back(int64_t(split.size()));
    split.push_back(reps[k]);
    split.push_back(xs[k]);
  }
  Value g = b.reshape(b.output_grad(0), split);
  b.set(0, b.reshape(b.emit("ReduceSum", {g, b.int64s(axes)}, {Attr("keepdims", int64_t(0))}), xs));
});

// Slice: the gradient lands where the slice was taken, zeros elsewhere
// (ops_grad's SliceGrad). Before opset 10 starts/ends/axes are attributes.
SINGA_GRADIENT("", "Slice", [](GradBuilder& b) {
  std::vector<Value> in{b.output_grad(0), b.input(0)};
  const auto& n = b.node();
  if (n.opset() < 10) {
    in.push_back(b.int64s(n.attr_ints("starts")));
    in.push_back(b.int64s(n.attr_ints("ends")));
    std::vector<int64_t> axes = n.attr_ints("axes");
    if (!axes.empty()) in.push_back(b.int64s(axes));
  } else {
    for (size_t i = 1; i < b.num_inputs(); ++i) in.push_back(b.input(i));
  }
  Emit e;
  e.op_type = "SliceGrad";
  e.domain = singa::sdk::kGradDomain;
  e.inputs = in;
  b.set(0, b.emit(e)[0]);
});

SINGA_GRADIENT("", "Gather", [](GradBuilder& b) {
  b.set(0, b.grad_kernel("GatherGrad", {b.output_grad(0), b.input(0), b.input(1)}, {true})[0]);
});

// ------------------------------------------------- index movement (scatter-add)

Value zeros_like(GradBuilder& b, const Value& v) { return b.zeros(b.shape(v), b.dtype(v)); }

Emit scatter(const char* op, const std::vector<Value>& in, std::vector<Attr> attrs) {
  Emit e;
  e.op_type = op;
  e.inputs = in;
  e.attrs = std::move(attrs);
  return e;
}

// GatherElements: each gathered element's gradient added back at its source.
SINGA_GRADIENT("", "GatherElements", [](GradBuilder& b) {
  const int64_t axis = b.node().attr_int("axis", 0);
  const Value x = b.input(0);
  b.set(0, b.emit(scatter("ScatterElements", {zeros_like(b, x), b.input(1), b.output_grad(0)},
                          {Attr("axis", axis), Attr("reduction", "add")}))[0]);
});

SINGA_GRADIENT("", "GatherND", [](GradBuilder& b) {
  if (b.node().attr_int("batch_dims", 0) != 0)
    singa::sdk::fail("the gradient of GatherND with batch_dims > 0 is not implemented", SINGA_UNIMPLEMENTED);
  const Value x = b.input(0);
  b.set(0, b.emit(scatter("ScatterND", {zeros_like(b, x), b.input(1), b.output_grad(0)}, {Attr("reduction", "add")}))[0]);
});

// Scatter ops. reduction none: the written positions take their gradient
// from the updates (data gets zeros there); updates that a later duplicate
// index overwrote get one too (the gradient does not track the last write).
// add: both get all of it. mul: out = data * prod(updates), so data gets
// g * prod(updates) and each update g * out / update. max/min: the gradient
// goes to whichever of data and the updates equals the result.
template <bool Elements>
void scatter_grad(GradBuilder& b) {
  const std::string red = b.node().attr_string("reduction", "none");
  const Value data = b.input(0), g = b.output_grad(0), idx = b.input(1), upd = b.input(2);
  std::vector<Attr> axis;
  if (Elements) axis.emplace_back("axis", b.node().attr_int("axis", 0));
  const char* scatter_op = Elements ? "ScatterElements" : "ScatterND";
  auto gather = [&](const Value& v) { return b.emit(scatter(Elements ? "GatherElements" : "GatherND", {v, idx}, axis))[0]; };
  auto with_reduction = [&](const char* r) {
    std::vector<Attr> a = axis;
    a.emplace_back("reduction", r);
    return a;
  };
  const Value zero = b.scalar(0, b.dtype(g));
  if (red == "none" || red == "add") {
    if (b.needs(0)) b.set(0, red == "add" ? g : b.emit(scatter(scatter_op, {g, idx, zeros_like(b, upd)}, axis))[0]);
    if (b.needs(2)) b.set(2, gather(g));
  } else if (red == "mul") {
    const Value ones = b.emit("Expand", {b.scalar(1, b.dtype(g)), b.int64s(b.shape(data))});
    if (b.needs(0)) b.set(0, b.mul(g, b.emit(scatter(scatter_op, {ones, idx, upd}, with_reduction("mul")))[0]));
    if (b.needs(2)) b.set(2, b.div(gather(b.mul(g, b.output(0))), upd));
  } else if (red == "max" || red == "min") {
    const Value out = b.output(0);
    if (b.needs(0)) b.set(0, b.emit("Where", {b.emit("Equal", {data, out}), g, zero}));
    if (b.needs(2)) b.set(2, b.emit("Where", {b.emit("Equal", {upd, gather(out)}), gather(g), zero}));
  } else {
    singa::sdk::fail("the gradient of " + b.node().op_type() + " with reduction '" + red + "' is not implemented",
                     SINGA_UNIMPLEMENTED);
  }
}
SINGA_GRADIENT("", "ScatterElements", scatter_grad<true>);
SINGA_GRADIENT("", "Scatter", scatter_grad<true>);
SINGA_GRADIENT("", "ScatterND", scatter_grad<false>);

// Pad (every mode): padding the flat positions 0..n-1 of x (with -1 in
// constant mode) tells each output element's source; the gradient is the
// output gradient added back at those sources.
SINGA_GRADIENT("", "Pad", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Shape xs = b.shape(x);
  int64_t n = 1;
  for (int64_t d : xs) n *= d;
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = i;
  const auto& node = b.node();
  Emit e;
  e.op_type = "Pad";
  e.opset = std::max<int64_t>(node.opset(), 18);
  e.attrs = {Attr("mode", node.attr_string("mode", "constant"))};
  const Value iota = b.reshape(b.int64s(pos), xs);
  const Value fill = b.scalar(-1, SINGA_ONNX_INT64);
  if (node.opset() < 11) {
    e.inputs = {iota, b.int64s(node.attr_ints(node.opset() < 2 ? "paddings" : "pads")), fill};
  } else {
    e.inputs = {iota, b.input(1), fill};
    if (b.num_inputs() > 3 && !b.input(3).empty()) e.inputs.push_back(b.input(3));
  }
  const Value src = b.emit(e)[0];
  const Value valid = b.emit("GreaterOrEqual", {src, b.scalar(0, SINGA_ONNX_INT64)});
  const Value at = b.reshape(b.emit("Where", {valid, src, b.scalar(0, SINGA_ONNX_INT64)}), {-1});
  const Value upd = b.reshape(b.emit("Where", {valid, g, b.scalar(0, b.dtype(g))}), {-1});
  const Value flat = b.emit(scatter("ScatterElements", {b.zeros({n}, b.dtype(g)), at, upd},
                                    {Attr("axis", int64_t(0)), Attr("reduction", "add")}))[0];
  b.set(0, b.reshape(flat, xs));
});

// ------------------------------------------------------------------ Resize

// Input i (scales, roi) as doubles; empty when absent or not on the host.
std::vector<double> host_floats(GradBuilder& b, size_t i) {
  std::vector<double> v;
  if (b.num_inputs() <= i || b.input(i).empty()) return v;
  singa::sdk::Tensor t = b.constant(i);
  if (!t.present()) return v;
  singa::sdk::dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t k = 0; k < t.numel(); ++k) v.push_back(double(t.data<T>()[k]));
  }, singa::sdk::kFloatTypes);
  return v;
}

// A 1-D tensor of `dtype` from host values.
Value floats(GradBuilder& b, const std::vector<double>& v, int32_t dtype) {
  std::vector<Value> parts;
  for (double x : v) parts.push_back(b.reshape(b.scalar(x, dtype), {1}));
  return parts.size() == 1 ? parts[0] : b.emit("Concat", parts, {Attr("axis", int64_t(0))});
}

// Resize is linear in X and separable: along each resized axis, output o is
// sum_j w[o, j] x[j]. Resizing an n x n identity along its second axis alone
// (same mode, scale and roi) gives those weights as [n, out]; the gradient
// contracts dY with them axis by axis.
SINGA_GRADIENT("", "Resize", [](GradBuilder& b) {
  const auto& n = b.node();
  const Value x = b.input(0);
  Value g = b.output_grad(0);
  const Shape xs = b.shape(x), ys = b.shape(g);
  const size_t r = xs.size();
  const int64_t opset = n.opset();
  const size_t scales_at = opset < 11 ? 1 : 2;
  std::vector<double> scales = host_floats(b, scales_at), roi = opset < 11 ? std::vector<double>() : host_floats(b, 1);
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  for (auto& a : axes) if (a < 0) a += int64_t(r);
  std::vector<double> scale(r, 1.0), roi0(r, 0.0), roi1(r, 1.0);
  const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  double kept = policy == "not_larger" ? 1e300 : 0.0;
  // Without scales the forward took them from `sizes` (before rounding).
  std::vector<int64_t> sizes;
  if (scales.empty() && opset >= 11 && b.num_inputs() > 3 && !b.input(3).empty() && b.constant(3).present())
    sizes = b.input_ints(3);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = size_t(axes[i]);
    if (!scales.empty()) {
      scale[d] = scales[i];
    } else {
      scale[d] = double(sizes.size() == axes.size() ? sizes[i] : ys[d]) / double(xs[d]);
      kept = policy == "not_larger" ? std::min(kept, scale[d]) : std::max(kept, scale[d]);
    }
    if (roi.size() == 2 * axes.size()) {
      roi0[d] = roi[i];
      roi1[d] = roi[i + axes.size()];
    }
  }
  // Policies other than stretch resize every listed axis by one scale.
  if (scales.empty() && policy != "stretch")
    for (int64_t a : axes) scale[size_t(a)] = kept;
  const std::string mode = n.attr_string("mode", "nearest");
  std::vector<Attr> attrs{Attr("mode", mode)};
  if (opset >= 11) {
    attrs.emplace_back("coordinate_transformation_mode", n.attr_string("coordinate_transformation_mode", "half_pixel"));
    attrs.emplace_back("nearest_mode", n.attr_string("nearest_mode", "round_prefer_floor"));
    attrs.emplace_back("cubic_coeff_a", n.attr_float("cubic_coeff_a", -0.75f));
    attrs.emplace_back("exclude_outside", n.attr_int("exclude_outside", 0));
    attrs.emplace_back("extrapolation_value", 0.0f);
  }
  if (opset >= 18) attrs.emplace_back("antialias", n.attr_int("antialias", 0));
  const std::string letters = "abcdefghijklmnopqrstuvwxy";
  if (r + 1 > letters.size()) singa::sdk::fail("the gradient of Resize takes rank up to 24", SINGA_UNIMPLEMENTED);
  const std::string term = letters.substr(0, r);
  const bool crop = n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  for (size_t d = 0; d < r; ++d) {
    if (xs[d] == ys[d] && scale[d] == 1.0 && !crop) continue;
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < xs[d]; ++j) idx.push_back(j);
    const Value col = b.reshape(b.int64s(idx), {xs[d], 1}), row = b.reshape(b.int64s(idx), {1, xs[d]});
    const Value eye = b.emit("Cast", {b.emit("Equal", {col, row})}, {Attr("to", int64_t(b.dtype(x)))});
    Emit e;
    e.op_type = "Resize";
    e.opset = opset;
    e.attrs = attrs;
    const Value sc = floats(b, {1.0, scale[d]}, SINGA_ONNX_FLOAT);
    if (opset < 11) {
      e.inputs = {eye, sc};
    } else {
      const Value rv = crop ? floats(b, {0.0, roi0[d], 1.0, roi1[d]}, b.dtype(b.input(1))) : Value();
      e.inputs = {eye, rv, sc};
    }
    Value w;  // [in, out]
    if (scales.empty() && policy != "stretch" && sizes.size() == axes.size()) {
      // The output size is round(kept * in), which scales would floor: resize
      // eye x ones(m) along [1, 2] with sizes of this axis and of one axis k
      // that set the kept scale, so the policy finds the same scale.
      size_t k = 0;
      for (size_t i = 0; i < axes.size(); ++i)
        if (double(sizes[i]) / double(xs[size_t(axes[i])]) == kept) k = i;
      size_t self = 0;
      for (size_t i = 0; i < axes.size(); ++i)
        if (size_t(axes[i]) == d) self = i;
      const int64_t m = xs[size_t(axes[k])];
      Emit p = e;
      p.attrs.emplace_back("keep_aspect_ratio_policy", policy);
      p.attrs.emplace_back("axes", std::vector<int64_t>{1, 2});
      const Value z = b.emit("Expand", {b.reshape(eye, {xs[d], xs[d], 1}), b.int64s({1, 1, m})});
      p.inputs = {z, Value(), Value(), b.int64s({sizes[self], sizes[k]})};
      const Value full = b.emit(p)[0];
      w = b.reshape(b.emit("Slice", {full, b.int64s({0}), b.int64s({1}), b.int64s({2})}), {xs[d], -1});
    } else {
      w = b.emit(e)[0];
    }
    if (b.shape(w) != Shape({xs[d], ys[d]}))
      singa::sdk::fail("gradient of Resize: the weights along axis " + std::to_string(d) + " do not match the output",
                       SINGA_INTERNAL);
    std::string out = term;
    out[d] = 'z';
    g = b.emit("Einsum", {g, w},
               {Attr("equation", term + "," + std::string("z") + term[d] + "->" + out)});
  }
  b.set(0, g);
});

}  // namespace
