// Gradients of this pack's spatial rearrangements (DepthToSpace,
// SpaceToDepth, CenterCropPad, Upsample), as builders of backward nodes.
#include <singa/gradient.hpp>

namespace {

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// DepthToSpace only moves elements, so its gradient is the inverse move:
// SpaceToDepth for DCR; for CRD, dY [N, C', H*bs, W*bs] viewed as
// [N, C', H, bs, W, bs] and transposed back to [N, C', bs, bs, H, W].
SINGA_GRADIENT("", "DepthToSpace", [](GradBuilder& b) {
  const Shape xs = b.shape(b.input(0));
  const int64_t bs = b.node().attr_int("blocksize", 1);
  const Value g = b.output_grad(0);
  if (b.node().attr_string("mode", "DCR") != "CRD") {
    b.set(0, b.emit("SpaceToDepth", {g}, {Attr("blocksize", bs)}));
    return;
  }
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Co = C / (bs * bs);
  const Value v = b.reshape(g, {N, Co, H, bs, W, bs});
  const Value t = b.emit("Transpose", {v}, {Attr("perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4})});
  b.set(0, b.reshape(t, xs));
});

// SpaceToDepth is the inverse of DepthToSpace in DCR mode.
SINGA_GRADIENT("", "SpaceToDepth", [](GradBuilder& b) {
  const int64_t bs = b.node().attr_int("blocksize", 1);
  b.set(0, b.emit("DepthToSpace", {b.output_grad(0)}, {Attr("blocksize", bs), Attr("mode", "DCR")}));
});

// CenterCropPad: cropping (in - out) / 2 from the start and zero-padding
// (out - in) / 2 before are each other's adjoint, so the gradient is dY
// center-cropped-or-padded back to X's extents on the same axes.
SINGA_GRADIENT("", "CenterCropPad", [](GradBuilder& b) {
  const Shape xs = b.shape(b.input(0));
  const int64_t r = int64_t(xs.size());
  std::vector<int64_t> axes = b.node().attr_ints("axes");
  if (axes.empty())
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  std::vector<int64_t> target;
  for (int64_t a : axes) target.push_back(xs[size_t(a < 0 ? a + r : a)]);
  Emit e;
  e.op_type = "CenterCropPad";
  e.opset = std::max<int64_t>(b.node().opset(), 18);
  e.inputs = {b.output_grad(0), b.int64s(target)};
  if (b.node().has_attr("axes")) e.attrs = {Attr("axes", b.node().attr_ints("axes"))};
  b.set(0, b.emit(e)[0]);
});

// Upsample (7-9) is linear in X and separable: along each scaled axis,
// upsampling an n x n identity along its second axis alone gives the
// weights [n, out], and dY is contracted with them axis by axis.
SINGA_GRADIENT("", "Upsample", [](GradBuilder& b) {
  const auto& n = b.node();
  const Value x = b.input(0);
  Value g = b.output_grad(0);
  const Shape xs = b.shape(x), ys = b.shape(g);
  const size_t r = xs.size();
  std::vector<double> scales;
  if (n.opset() < 9) {
    for (float s : n.attr_floats("scales")) scales.push_back(double(s));
  } else {
    singa::sdk::Tensor t = b.constant(1);
    if (!t.present()) singa::sdk::fail("the gradient of Upsample needs its scales on the host", SINGA_UNIMPLEMENTED);
    singa::sdk::dispatch(t.dtype(), [&](auto tag) {
      for (int64_t k = 0; k < t.numel(); ++k) scales.push_back(double(t.data<decltype(tag)>()[k]));
    }, singa::sdk::kFloatTypes);
  }
  if (scales.size() != r) singa::sdk::fail("the gradient of Upsample needs one scale per axis", SINGA_INVALID_ARGUMENT);
  const std::string letters = "abcdefghijklmnopqrstuvwxy";
  if (r + 1 > letters.size()) singa::sdk::fail("the gradient of Upsample takes rank up to 24", SINGA_UNIMPLEMENTED);
  const std::string term = letters.substr(0, r);
  for (size_t d = 0; d < r; ++d) {
    if (xs[d] == ys[d] && scales[d] == 1.0) continue;
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < xs[d]; ++j) idx.push_back(j);
    const Value col = b.reshape(b.int64s(idx), {xs[d], 1}), row = b.reshape(b.int64s(idx), {1, xs[d]});
    const Value eye = b.emit("Cast", {b.emit("Equal", {col, row})}, {Attr("to", int64_t(b.dtype(x)))});
    Emit e;
    e.op_type = "Upsample";
    e.opset = n.opset();
    e.attrs = {Attr("mode", n.attr_string("mode", "nearest"))};
    if (n.opset() < 9) {
      e.attrs.emplace_back("scales", std::vector<float>{1.f, float(scales[d])});
      e.inputs = {eye};
    } else {
      const Value one = b.reshape(b.scalar(1.0, SINGA_ONNX_FLOAT), {1});
      const Value s = b.reshape(b.scalar(scales[d], SINGA_ONNX_FLOAT), {1});
      e.inputs = {eye, b.emit("Concat", {one, s}, {Attr("axis", int64_t(0))})};
    }
    const Value w = b.emit(e)[0];  // [in, out]
    if (b.shape(w) != Shape({xs[d], ys[d]}))
      singa::sdk::fail("gradient of Upsample: the weights along axis " + std::to_string(d) + " do not match the output",
                       SINGA_INTERNAL);
    std::string out = term;
    out[d] = 'z';
    g = b.emit("Einsum", {g, w}, {Attr("equation", term + ",z" + term[d] + "->" + out)});
  }
  b.set(0, g);
});

}  // namespace
