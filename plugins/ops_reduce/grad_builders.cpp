// Gradients of this pack's ops (softmax and the reductions), as builders of
// backward nodes (gradient.hpp).
#include "reduce_grad_shape.hpp"

#include <singa/gradient.hpp>

namespace {

using singa::ops::reduce::kept_shape;

using singa::sdk::Attr;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// Softmax and LogSoftmax before opset 13 coerce the input to 2-D at `axis`
// (default 1); from 13 they work along one axis (default -1).
void softmax_like(GradBuilder& b, const char* grad_op) {
  std::vector<Attr> extra;
  if (b.node().opset() < 13) extra = {Attr("coerce_2d", int64_t(1)), Attr("axis", b.node().attr_int("axis", 1))};
  b.set(0, b.grad_kernel(grad_op, {b.output_grad(0), b.output(0)}, {true}, extra)[0]);
}
SINGA_GRADIENT("", "Softmax", [](GradBuilder& b) { softmax_like(b, "SoftmaxGrad"); });
SINGA_GRADIENT("", "LogSoftmax", [](GradBuilder& b) { softmax_like(b, "LogSoftmaxGrad"); });


// ReduceSum / ReduceMean: the gradient spreads back over the reduced axes.
void reduce_sum_like(GradBuilder& b, bool mean) {
  const Shape xs = b.shape(b.input(0)), kept = kept_shape(b);
  Value g = b.reshape(b.output_grad(0), kept);
  if (mean) {
    int64_t n = 1, m = 1;  // 1 / count = numel(kept) / numel(x)
    for (int64_t d : xs) n *= d;
    for (int64_t d : kept) m *= d;
    g = b.mul(g, b.scalar(m == 0 ? 0.0 : double(m) / double(n), b.dtype(g)));
  }
  b.set(0, b.emit("Expand", {g, b.int64s(xs)}));
}
SINGA_GRADIENT("", "ReduceSum", [](GradBuilder& b) { reduce_sum_like(b, false); });
SINGA_GRADIENT("", "ReduceMean", [](GradBuilder& b) { reduce_sum_like(b, true); });

// ReduceMax / ReduceMin: to the elements equal to the result, ties sharing.
void reduce_extremum(GradBuilder& b) {
  const Value x = b.input(0);
  const Shape kept = kept_shape(b);
  const Value y = b.reshape(b.output(0), kept), g = b.reshape(b.output_grad(0), kept);
  const Value hit = b.emit("Cast", {b.emit("Equal", {x, y})}, {Attr("to", int64_t(b.dtype(x)))});
  std::vector<int64_t> axes;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] == 1) axes.push_back(int64_t(i));
  const Value count = b.emit("ReduceSum", {hit, b.int64s(axes)}, {Attr("keepdims", int64_t(1))});
  b.set(0, b.mul(hit, b.div(g, count)));
}
SINGA_GRADIENT("", "ReduceMax", reduce_extremum);
SINGA_GRADIENT("", "ReduceMin", reduce_extremum);

// dy/dx of the smooth reductions: 2x (SumSquare), x/y (L2), e^(x-y)
// (LogSumExp), sign(x) (L1).
void reduce_smooth(GradBuilder& b, int which) {
  const Value x = b.input(0);
  const Shape kept = kept_shape(b);
  const Value y = b.reshape(b.output(0), kept), g = b.reshape(b.output_grad(0), kept);
  Value d;
  switch (which) {
    case 0: d = b.mul(x, b.scalar(2, b.dtype(x))); break;
    case 1: d = b.div(x, y); break;
    case 2: d = b.emit("Exp", {b.sub(x, y)}); break;
    default: d = b.emit("Sign", {x}); break;
  }
  b.set(0, b.mul(d, g));
}
SINGA_GRADIENT("", "ReduceSumSquare", [](GradBuilder& b) { reduce_smooth(b, 0); });
SINGA_GRADIENT("", "ReduceL2", [](GradBuilder& b) { reduce_smooth(b, 1); });
SINGA_GRADIENT("", "ReduceLogSumExp", [](GradBuilder& b) { reduce_smooth(b, 2); });
SINGA_GRADIENT("", "ReduceL1", [](GradBuilder& b) { reduce_smooth(b, 3); });

// CumSum: each input element feeds the sums after it (before it when
// reversed), so its gradient is the cumulative sum the other way round.
SINGA_GRADIENT("", "CumSum", [](GradBuilder& b) {
  singa::sdk::Emit e;
  e.op_type = "CumSum";
  e.inputs = {b.output_grad(0), b.input(1)};
  e.attrs = {Attr("exclusive", b.node().attr_int("exclusive", 0)),
             Attr("reverse", int64_t(b.node().attr_int("reverse", 0) == 0))};
  b.set(0, b.emit(e)[0]);
});

// TopK: the values' gradient goes back to where they were taken from.
SINGA_GRADIENT("", "TopK", [](GradBuilder& b) {
  Value idx = b.num_outputs() > 1 ? b.output(1) : Value();
  if (idx.empty()) {
    singa::sdk::Emit e;
    e.op_type = "TopK";
    e.opset = b.node().opset();
    for (size_t i = 0; i < b.num_inputs(); ++i) e.inputs.push_back(b.input(i));
    e.num_outputs = 2;
    e.forward_attrs = true;
    idx = b.emit(e)[1];
  }
  const Value x = b.input(0), g = b.output_grad(0);
  singa::sdk::Emit e;
  e.op_type = "ScatterElements";
  e.inputs = {b.zeros(b.shape(x), b.dtype(g)), idx, g};
  e.attrs = {Attr("axis", b.node().attr_int("axis", -1)), Attr("reduction", "add")};
  b.set(0, b.emit(e)[0]);
});

}  // namespace
