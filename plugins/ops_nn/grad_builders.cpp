// Gradients of this pack's ops, as builders of backward nodes (gradient.hpp).
// Most call a compute kernel of ai.singa.grad (plugins/ops_grad) with the
// forward node's attributes; the normalisations and Gelu are written with
// forward ops, so they run wherever those ops have kernels.
#include <grad_emit.hpp>
#include <singa/gradient.hpp>

#include <cmath>

namespace {

using singa::ops::grad::as_type;
using singa::ops::grad::num;
using singa::ops::grad::op1;

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;


// An activation whose ai.singa.grad kernel reads (dY, Y) or (dY, X).
template <bool FromOutput>
void activation(GradBuilder& b) {
  const std::string op = b.node().op_type() + "Grad";
  b.set(0, b.grad_kernel(op, {b.output_grad(0), FromOutput ? b.output(0) : b.input(0)}, {true})[0]);
}
SINGA_GRADIENT("", "Relu", activation<true>);
SINGA_GRADIENT("", "Sigmoid", activation<true>);
SINGA_GRADIENT("", "Tanh", activation<true>);
SINGA_GRADIENT("", "LeakyRelu", activation<false>);
SINGA_GRADIENT("", "Elu", activation<false>);
SINGA_GRADIENT("", "Softplus", activation<false>);

SINGA_GRADIENT("", "Softsign", [](GradBuilder& b) {
  const Value x = b.input(0);
  const Value d = op1(b, "Reciprocal", [&] { Value s = b.add(num(b, 1, x), op1(b, "Abs", x)); return b.mul(s, s); }());
  b.set(0, b.mul(b.output_grad(0), d));
});
// Selu: gamma for x > 0, else y + gamma * alpha (= gamma * alpha * e^x).
SINGA_GRADIENT("", "Selu", [](GradBuilder& b) {
  const Value x = b.input(0), y = b.output(0);
  const double alpha = b.node().attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = b.node().attr_float("gamma", 1.05070102214813232421875f);
  const Value d = b.emit("Where", {b.emit("Greater", {x, num(b, 0, x)}), num(b, gamma, x), b.add(y, num(b, gamma * alpha, y))});
  b.set(0, b.mul(b.output_grad(0), d));
});
// HardSigmoid: alpha where 0 < alpha x + beta < 1.
SINGA_GRADIENT("", "HardSigmoid", [](GradBuilder& b) {
  const Value x = b.input(0);
  const double alpha = b.node().attr_float("alpha", 0.2f), beta = b.node().attr_float("beta", 0.5f);
  const Value z = b.add(b.mul(x, num(b, alpha, x)), num(b, beta, x));
  const Value inside = b.emit("And", {b.emit("Greater", {z, num(b, 0, x)}), b.emit("Less", {z, num(b, 1, x)})});
  b.set(0, b.mul(b.output_grad(0), b.mul(as_type(b, inside, x), num(b, alpha, x))));
});
// PRelu: x for x > 0, slope x else; the slope broadcasts onto x.
SINGA_GRADIENT("", "PRelu", [](GradBuilder& b) {
  const Value x = b.input(0), slope = b.input(1), g = b.output_grad(0);
  const Value pos = b.emit("Greater", {x, num(b, 0, x)});
  if (b.needs(0)) b.set(0, b.mul(g, b.emit("Where", {pos, num(b, 1, x), slope})));
  if (b.needs(1)) b.set_sum_to(1, b.mul(g, b.emit("Where", {pos, num(b, 0, x), x})));
});

// Clip: the gradient passes where min <= x <= max; the bounds (inputs from
// opset 11, attributes before) collect what was clipped to them.
SINGA_GRADIENT("", "Clip", [](GradBuilder& b) {
  const Value x = b.input(0);
  const auto& n = b.node();
  auto bound = [&](size_t input, const char* attr, double def) -> Value {
    if (n.opset() >= 11) return b.num_inputs() > input ? b.input(input) : Value();
    return num(b, n.attr_float(attr, float(def)), x);
  };
  const Value lo = bound(1, "min", -3.4028234663852886e38), hi = bound(2, "max", 3.4028234663852886e38);
  const Value below = lo.empty() ? Value() : b.emit("Less", {x, lo});
  const Value above = hi.empty() ? Value() : b.emit("Greater", {x, hi});
  Value pass = b.output_grad(0);
  if (!below.empty()) pass = b.emit("Where", {below, num(b, 0, x), pass});
  if (!above.empty()) pass = b.emit("Where", {above, num(b, 0, x), pass});
  b.set(0, pass);
  auto collect = [&](size_t input, const Value& mask) {
    if (b.num_inputs() > input && b.needs(input) && !mask.empty())
      b.set(input, b.reshape(b.emit("ReduceSum", {b.mul(b.output_grad(0), as_type(b, mask, x))},
                                    {Attr("keepdims", int64_t(0))}),
                             b.shape(b.input(input))));
  };
  collect(1, below);
  collect(2, above);
});

SINGA_GRADIENT("", "Conv", [](GradBuilder& b) {
  const bool has_b = b.num_inputs() > 2 && !b.input(2).empty();
  std::vector<Value> g = b.grad_kernel("ConvGrad", {b.output_grad(0), b.input(0), b.input(1)},
                                       {b.needs(0), b.needs(1), has_b && b.needs(2)});
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].empty()) b.set(i, g[i]);
});

// The Indices output of a pooling node: as recorded, or recomputed by the
// forward op with both outputs.
Value pool_indices(GradBuilder& b, const char* domain, int64_t opset, bool copy_all_attrs, bool use_recorded = true) {
  if (use_recorded && b.num_outputs() > 1 && !b.output(1).empty()) return b.output(1);
  Emit e;
  e.op_type = b.node().op_type();
  e.domain = domain;
  e.opset = opset;
  for (size_t i = 0; i < b.num_inputs(); ++i) e.inputs.push_back(b.input(i));
  e.num_outputs = 2;
  e.forward_attrs = copy_all_attrs;
  if (!copy_all_attrs) {
    // MaxPool's Indices are recomputed row-major: every attribute but storage_order.
    const auto& n = b.node();
    for (const char* a : {"kernel_shape", "strides", "pads", "dilations"})
      if (n.has_attr(a)) e.attrs.emplace_back(a, n.attr_ints(a));
    if (n.has_attr("ceil_mode")) e.attrs.emplace_back("ceil_mode", n.attr_int("ceil_mode", 0));
    if (n.has_attr("auto_pad")) e.attrs.emplace_back("auto_pad", n.attr_string("auto_pad", "NOTSET"));
  }
  return b.emit(e)[1];
}

SINGA_GRADIENT("", "MaxPool", [](GradBuilder& b) {
  // MaxPoolGrad reads row-major Indices: column-major ones (storage_order=1)
  // are recomputed rather than used.
  const bool row_major = b.node().attr_int("storage_order", 0) == 0;
  const Value idx = pool_indices(b, "", std::max<int64_t>(b.node().opset(), 8), false, row_major);
  b.set(0, b.grad_kernel("MaxPoolGrad", {b.output_grad(0), idx, b.input(0)}, {true})[0]);
});

// The training path's Conv -> Relu -> MaxPool (conv_relu_pool.hpp): its
// gradient kernel reads the pooled output (Relu's mask) and the Indices.
SINGA_GRADIENT("ai.singa", "ConvReluMaxPool", [](GradBuilder& b) {
  const Value idx = pool_indices(b, "ai.singa", b.node().opset(), true);
  const bool has_b = b.num_inputs() > 2 && !b.input(2).empty();
  std::vector<Value> g =
      b.grad_kernel("ConvReluMaxPoolGrad", {b.output_grad(0), idx, b.output(0), b.input(0), b.input(1)},
                    {b.needs(0), b.needs(1), has_b && b.needs(2)});
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].empty()) b.set(i, g[i]);
});

SINGA_GRADIENT("", "AveragePool", [](GradBuilder& b) {
  b.set(0, b.grad_kernel("AveragePoolGrad", {b.output_grad(0), b.input(0)}, {true})[0]);
});

SINGA_GRADIENT("", "GlobalAveragePool", [](GradBuilder& b) {
  const Shape xs = b.shape(b.input(0));
  int64_t spatial = 1;
  for (size_t i = 2; i < xs.size(); ++i) spatial *= xs[i];
  const Value g = b.mul(b.output_grad(0), num(b, 1.0 / double(spatial), b.output_grad(0)));
  b.set(0, b.emit("Expand", {g, b.int64s(xs)}));
});

// GlobalMaxPool: the gradient goes to the elements equal to the maximum.
SINGA_GRADIENT("", "GlobalMaxPool", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0);
  const Value at_max = b.emit("Equal", {x, b.output(0)});
  b.set(0, b.emit("Where", {at_max, g, num(b, 0, g)}));
});

// LpPool: y = (sum_window |x|^p)^(1/p), so x gets sum over the windows that
// hold it of g y^(1-p), times |x|^(p-1) sign(x). The window sums come from
// AveragePoolGrad counting padding (each window spread with 1/size) times
// the window size.
SINGA_GRADIENT("", "LpPool", [](GradBuilder& b) {
  const auto& n = b.node();
  const double p = n.opset() < 2 ? n.attr_float("p", 2.f) : double(n.attr_int("p", 2));
  const Value x = b.input(0), y = b.output(0), g = b.output_grad(0);
  int64_t size = 1;
  for (int64_t k : n.attr_ints("kernel_shape")) size *= k;
  const Value per_window = b.mul(g, b.emit("Pow", {y, num(b, 1 - p, y)}));
  const Value spread = b.grad_kernel("AveragePoolGrad", {per_window, x}, {true}, {Attr("count_include_pad", int64_t(1))})[0];
  const Value dxp = b.mul(b.emit("Pow", {op1(b, "Abs", x), num(b, p - 1, x)}), op1(b, "Sign", x));
  b.set(0, b.mul(b.mul(spread, num(b, double(size), x)), dxp));
});

// ConvTranspose is the adjoint of Conv with the same W and geometry: dX is
// Conv(dY, W), dW is Conv's weight gradient with X and dY swapped. The pads
// are those the forward resolved (from output_shape / auto_pad when given);
// output positions past the scattered extent are cropped from dY first.
SINGA_GRADIENT("", "ConvTranspose", [](GradBuilder& b) {
  const auto& n = b.node();
  const Value x = b.input(0), w = b.input(1);
  Value dy = b.output_grad(0);
  const Shape xs = b.shape(x), ws = b.shape(w), ys = b.shape(dy);
  const size_t r = xs.size() - 2;
  auto per_axis = [&](const char* a, int64_t def) {
    std::vector<int64_t> v = n.attr_ints(a);
    if (v.empty()) v.assign(r, def);
    return v;
  };
  const std::vector<int64_t> s = per_axis("strides", 1), d = per_axis("dilations", 1), op = per_axis("output_padding", 0);
  std::vector<int64_t> pads = n.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * r, 0);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const bool resolved = !n.attr_ints("output_shape").empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> ends;
  bool crop = false;
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = s[i] * (xs[2 + i] - 1) + op[i] + (ws[2 + i] - 1) * d[i] + 1, out = ys[2 + i];
    if (resolved) {
      const int64_t total = std::max<int64_t>(0, full - out);
      pads[i] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
    }
    int64_t pe = full - pads[i] - out;
    ends.push_back(out);
    if (pe < 0) {
      ends.back() = out + pe;
      crop = true;
      pe = 0;
    }
    pads[r + i] = pe;
  }
  if (crop) {
    std::vector<int64_t> axes, starts(r, 0);
    for (size_t i = 0; i < r; ++i) axes.push_back(int64_t(2 + i));
    dy = b.emit("Slice", {dy, b.int64s(starts), b.int64s(ends), b.int64s(axes)});
  }
  const int64_t group = n.attr_int("group", 1);
  std::vector<Attr> geo{Attr("strides", s), Attr("dilations", d), Attr("pads", pads), Attr("group", group)};
  if (b.needs(0)) b.set(0, b.emit("Conv", {dy, w}, geo));
  if (b.needs(1)) {
    Emit e;
    e.op_type = "ConvGrad";
    e.domain = singa::sdk::kGradDomain;
    e.inputs = {x, dy, w};
    e.num_outputs = 2;
    e.wanted = {false, true};
    e.attrs = geo;
    b.set(1, b.emit(e)[1]);
  }
  if (b.num_inputs() > 2 && !b.input(2).empty() && b.needs(2)) {
    std::vector<int64_t> axes{0};
    for (size_t i = 0; i < r; ++i) axes.push_back(int64_t(2 + i));
    b.set(2, b.emit("ReduceSum", {b.output_grad(0), b.int64s(axes)}, {Attr("keepdims", int64_t(0))}));
  }
});

SINGA_GRADIENT("", "BatchNormalization", [](GradBuilder& b) {
  const bool training = b.node().opset() >= 14 && b.node().attr_int("training_mode", 0) != 0;
  std::vector<Value> g = b.grad_kernel(
      "BatchNormalizationGrad", {b.output_grad(0), b.input(0), b.input(1), b.input(3), b.input(4)},
      {b.needs(0), b.needs(1), b.needs(2)}, {Attr("training_mode", int64_t(training))});
  for (size_t i = 0; i < 3; ++i)
    if (!g[i].empty()) b.set(i, g[i]);
  if (training || !(b.needs(3) || b.needs(4))) return;
  // Inference mode: y = scale (x - mean) inv + B with inv = (var + eps)^-1/2,
  // so dmean = -sum(g) scale inv and dvar = -1/2 sum(g (x - mean)) scale inv^3,
  // summed over every axis but the channels.
  const Value x = b.input(0), dy = b.output_grad(0);
  const Shape xs = b.shape(x);
  const int64_t C = xs.size() > 1 ? xs[1] : 1;
  Shape cs(xs.size(), 1);
  if (xs.size() > 1) cs[1] = C;
  auto chan = [&](const Value& v) { return b.reshape(v, cs); };
  const Value inv = op1(b, "Reciprocal", op1(b, "Sqrt", b.add(chan(b.input(4)), num(b, b.node().attr_float("epsilon", 1e-5f), x))));
  const Value k = b.mul(chan(b.input(1)), inv);
  auto per_channel = [&](const Value& v) { return b.reshape(b.sum_to(v, cs), {C}); };
  if (b.needs(3)) b.set(3, b.neg(per_channel(b.mul(dy, k))));
  if (b.needs(4)) {
    const Value xc = b.sub(x, chan(b.input(3)));
    b.set(4, b.mul(per_channel(b.mul(b.mul(dy, xc), b.mul(k, b.mul(inv, inv)))), num(b, -0.5, x)));
  }
});

// A scalar input (Dropout's ratio) as a double.
double scalar_input(GradBuilder& b, size_t i, double def) {
  if (b.num_inputs() <= i || b.input(i).empty()) return def;
  singa::sdk::Tensor t = b.constant(i);
  if (!t.present()) return def;
  double v = def;
  singa::sdk::dispatch(t.dtype(), [&](auto tag) { v = double(t.data<decltype(tag)>()[0]); }, singa::sdk::kFloatTypes);
  return v;
}

SINGA_GRADIENT("", "Dropout", [](GradBuilder& b) {
  const bool training = b.num_inputs() > 2 && !b.input(2).empty() && b.input_ints(2)[0] != 0;
  if (!training) return b.set(0, b.output_grad(0));
  const Value mask = b.num_outputs() > 1 ? b.output(1) : Value();
  if (mask.empty())
    singa::sdk::fail("Dropout in training mode must be run with its mask output", SINGA_UNIMPLEMENTED);
  const double ratio = scalar_input(b, 1, 0.5);
  const Value g = b.output_grad(0);
  b.set(0, b.mul(b.mul(g, as_type(b, mask, g)), num(b, 1.0 / (1.0 - ratio), g)));
});

SINGA_GRADIENT("", "SoftmaxCrossEntropyLoss", [](GradBuilder& b) {
  Value logp = b.num_outputs() > 1 ? b.output(1) : Value();
  if (logp.empty()) logp = b.emit("LogSoftmax", {b.input(0)}, {Attr("axis", int64_t(1))});
  Value dx;
  if (!b.output_grad(0).empty()) {
    std::vector<Value> in{b.output_grad(0), logp, b.input(1)};
    if (b.num_inputs() > 2 && !b.input(2).empty()) in.push_back(b.input(2));
    dx = b.grad_kernel("SoftmaxCrossEntropyLossGrad", in, {true})[0];
  }
  // Through the log_prob output (x - logsumexp over the classes, axis 1):
  // g - softmax(x) * sum_c g.
  const Value glp = b.num_outputs() > 1 ? b.output_grad(1) : Value();
  if (!glp.empty()) {
    const Value total = b.emit("ReduceSum", {glp, b.int64s({1})}, {Attr("keepdims", int64_t(1))});
    const Value d = b.sub(glp, b.mul(op1(b, "Exp", logp), total));
    dx = dx.empty() ? d : b.add(dx, d);
  }
  if (!dx.empty()) b.set(0, dx);
});

// ------------------------------------------------------------ normalisation

// x normalised over `axes` (keepdims): xhat = (x - mean) / sqrt(var + eps)
// (rms: x / sqrt(mean(x^2) + eps)), with 1 / sqrt(...) as `inv`.
struct Normalized {
  Value xhat, inv;
};
Normalized normalize(GradBuilder& b, const Value& x, const std::vector<int64_t>& axes, double eps, bool rms) {
  auto mean = [&](const Value& v) { return b.emit("ReduceMean", {v}, {Attr("axes", axes), Attr("keepdims", int64_t(1))}); };
  const Value xc = rms ? x : b.sub(x, mean(x));
  const Value inv = op1(b, "Reciprocal", op1(b, "Sqrt", b.add(mean(b.mul(xc, xc)), num(b, eps, x))));
  return {b.mul(xc, inv), inv};
}
// The gradient reaching x through xhat: inv (g - mean(g) - xhat mean(g xhat))
// (rms: without the mean(g) term, which centring adds).
Value normalize_backward(GradBuilder& b, const Normalized& n, const Value& g, const std::vector<int64_t>& axes, bool rms) {
  auto mean = [&](const Value& v) { return b.emit("ReduceMean", {v}, {Attr("axes", axes), Attr("keepdims", int64_t(1))}); };
  Value d = b.sub(g, b.mul(n.xhat, mean(b.mul(g, n.xhat))));
  if (!rms) d = b.sub(d, mean(g));
  return b.mul(n.inv, d);
}

// LayerNormalization and RMSNormalization: normalised over axes [axis, r).
// LayerNormalization's Mean and InvStdDev outputs (keepdims shape) add
// g_mean / n and -g_inv inv^2 xhat / n to dx.
void layer_norm(GradBuilder& b, bool rms) {
  const Value x = b.input(0), g = b.output_grad(0);
  const int64_t r = b.ndim(x);
  int64_t axis = b.node().attr_int("axis", -1);
  if (axis < 0) axis += r;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < r; ++a) axes.push_back(a);
  const Normalized n = normalize(b, x, axes, b.node().attr_float("epsilon", 1e-5f), rms);
  const Value scale = b.input(1);
  // Mean and InvStdDev may be of the stash type, not x's.
  auto stat_grad = [&](size_t k) {
    const Value v = b.num_outputs() > k ? b.output_grad(k) : Value();
    return v.empty() || b.dtype(v) == b.dtype(x) ? v : as_type(b, v, x);
  };
  const Value gmean = stat_grad(1), ginv = stat_grad(2);
  if (g.empty()) {
    if (gmean.empty() && ginv.empty()) return;
  } else {
    if (b.needs(1)) b.set_sum_to(1, b.mul(g, n.xhat));
    if (!rms && b.num_inputs() > 2 && !b.input(2).empty() && b.needs(2)) b.set_sum_to(2, g);
  }
  if (!b.needs(0)) return;
  Value dx = g.empty() ? Value() : normalize_backward(b, n, b.mul(g, scale), axes, rms);
  const Shape xs = b.shape(x);
  int64_t count = 1;
  for (int64_t a : axes) count *= xs[size_t(a)];
  auto add = [&](const Value& d) { dx = dx.empty() ? d : b.add(dx, d); };
  if (!gmean.empty()) add(b.emit("Expand", {b.mul(gmean, num(b, 1.0 / double(count), x)), b.int64s(xs)}));
  if (!ginv.empty()) add(b.mul(b.mul(b.mul(ginv, b.mul(n.inv, n.inv)), num(b, -1.0 / double(count), x)), n.xhat));
  if (!dx.empty()) b.set(0, dx);
}
SINGA_GRADIENT("", "LayerNormalization", [](GradBuilder& b) { layer_norm(b, false); });
SINGA_GRADIENT("", "RMSNormalization", [](GradBuilder& b) { layer_norm(b, true); });

// GroupNormalization: x [N, C, ...] viewed as [N, G, C/G * ...] and
// normalised over its last axis; scale and bias are per channel (opset 21)
// or per group (opset 18).
SINGA_GRADIENT("", "GroupNormalization", [](GradBuilder& b) {
  const Value x = b.input(0), g = b.output_grad(0), scale = b.input(1);
  const Shape xs = b.shape(x);
  const int64_t groups = b.node().attr_int("num_groups", 1), N = xs[0], C = xs[1];
  const bool per_channel = b.node().opset() >= 21;
  const Shape grouped{N, groups, -1};
  const Value xr = b.emit("Reshape", {x, b.int64s(grouped)});
  const Normalized n = normalize(b, xr, {2}, b.node().attr_float("epsilon", 1e-5f), false);
  Shape bshape(xs.size(), 1);  // scale and bias broadcast onto x (per channel) or onto xr (per group)
  Value dxhat;
  if (per_channel) {
    bshape[1] = C;
    const Value xhat = b.reshape(n.xhat, xs);
    if (b.needs(1)) b.set(1, b.reshape(b.sum_to(b.mul(g, xhat), bshape), {C}));
    if (b.needs(2)) b.set(2, b.reshape(b.sum_to(g, bshape), {C}));
    dxhat = b.emit("Reshape", {b.mul(g, b.reshape(scale, bshape)), b.int64s(grouped)});
  } else {
    const Value gr = b.emit("Reshape", {g, b.int64s(grouped)});
    const Shape gshape{1, groups, 1};
    if (b.needs(1)) b.set(1, b.reshape(b.sum_to(b.mul(gr, n.xhat), gshape), {groups}));
    if (b.needs(2)) b.set(2, b.reshape(b.sum_to(gr, gshape), {groups}));
    dxhat = b.mul(gr, b.reshape(scale, gshape));
  }
  if (b.needs(0)) b.set(0, b.reshape(normalize_backward(b, n, dxhat, {2}, false), xs));
});

// Gelu: d/dx [x Phi(x)] = Phi(x) + x phi(x); with approximate="tanh",
// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2), t = tanh(u).
SINGA_GRADIENT("", "Gelu", [](GradBuilder& b) {
  const Value x = b.input(0);
  Value d;
  if (b.node().attr_string("approximate", "none") == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    const Value x2 = b.mul(x, x);
    const Value u = b.mul(b.mul(x, b.add(num(b, 1, x), b.mul(x2, num(b, c, x)))), num(b, k, x));
    const Value t = op1(b, "Tanh", u);
    const Value one_t = b.add(num(b, 1, x), t);
    const Value du = b.mul(num(b, k, x), b.add(num(b, 1, x), b.mul(x2, num(b, 3 * c, x))));
    d = b.mul(num(b, 0.5, x), b.add(one_t, b.mul(b.mul(x, b.sub(num(b, 1, x), b.mul(t, t))), du)));
  } else {
    const Value cdf = b.mul(num(b, 0.5, x), b.add(num(b, 1, x), op1(b, "Erf", b.mul(x, num(b, M_SQRT1_2, x)))));
    const Value pdf = b.mul(op1(b, "Exp", b.mul(b.mul(x, x), num(b, -0.5, x))), num(b, 1.0 / std::sqrt(2 * M_PI), x));
    d = b.add(cdf, b.mul(x, pdf));
  }
  b.set(0, b.mul(b.output_grad(0), d));
});

}  // namespace
