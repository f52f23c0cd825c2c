// Gradients of this pack's spatial ops (MaxUnpool, Col2Im, AffineGrid,
// GridSample), as builders of backward nodes (gradient.hpp). The ones that
// only move elements gather dY at positions worked out on the host.
#include <singa/gradient.hpp>

namespace {

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;

// dY flattened over `from` onwards, with one zero appended along that axis,
// gathered at `idx` (an index of -1 reads the appended zero).
Value gather_or_zero(GradBuilder& b, const Value& g, const Shape& lead, const std::vector<int64_t>& idx,
                     const Shape& idx_shape) {
  Shape flat = lead;
  flat.push_back(-1);
  const Value gf = b.reshape(g, flat);
  Shape zs = lead;
  zs.push_back(1);
  const int64_t len = b.shape(gf).back();
  const Value padded = b.emit("Concat", {gf, b.zeros(zs, b.dtype(g))}, {Attr("axis", int64_t(lead.size()))});
  std::vector<int64_t> at(idx);
  for (int64_t& v : at)
    if (v < 0) v = len;
  return b.emit("Gather", {padded, b.reshape(b.int64s(at), idx_shape)}, {Attr("axis", int64_t(lead.size()))});
}

// MaxUnpool: X's element j went to flat position indices[j] of the unpooled
// shape (kept where it lies inside output_shape), so dX[j] is dY there.
SINGA_GRADIENT("", "MaxUnpool", [](GradBuilder& b) {
  const auto& n = b.node();
  const Shape xs = b.shape(b.input(0)), ys = b.shape(b.output_grad(0));
  const size_t r = xs.size() - 2;
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  std::vector<int64_t> strides = n.attr_ints("strides"), pads = n.attr_ints("pads");
  if (strides.empty()) strides.assign(r, 1);
  if (pads.empty()) pads.assign(2 * r, 0);
  Shape from{xs[0], xs[1]};
  for (size_t i = 0; i < r; ++i) from.push_back((xs[2 + i] - 1) * strides[i] - pads[i] - pads[r + i] + kernel[i]);
  std::vector<int64_t> idx = b.input_ints(1);
  for (int64_t& at : idx) {
    int64_t rem = at, flat = 0, stride = 1;
    bool inside = at >= 0;
    for (size_t d = from.size(); d-- > 0;) {
      const int64_t c = rem % from[d];
      rem /= from[d];
      inside = inside && c < ys[d];
      flat += c * stride;
      stride *= ys[d];
    }
    at = inside ? flat : -1;
  }
  b.set(0, gather_or_zero(b, b.output_grad(0), {}, idx, xs));
});

// Col2Im sums each block column into the image; its adjoint reads every
// column entry back from the pixel it landed on (zero where it was padding).
SINGA_GRADIENT("", "Col2Im", [](GradBuilder& b) {
  const auto& n = b.node();
  const Shape xs = b.shape(b.input(0));
  const std::vector<int64_t> image = b.input_ints(1), block = b.input_ints(2);
  const size_t r = image.size();
  std::vector<int64_t> dil = n.attr_ints("dilations"), str = n.attr_ints("strides"), pads = n.attr_ints("pads");
  if (dil.empty()) dil.assign(r, 1);
  if (str.empty()) str.assign(r, 1);
  if (pads.empty()) pads.assign(2 * r, 0);
  std::vector<int64_t> nb(r);
  int64_t K = 1, L = 1;
  for (size_t i = 0; i < r; ++i) {
    nb[i] = (image[i] + pads[i] + pads[r + i] - (dil[i] * (block[i] - 1) + 1)) / str[i] + 1;
    K *= block[i];
    L *= nb[i];
  }
  std::vector<int64_t> idx(size_t(K * L));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t l = 0; l < L; ++l) {
      int64_t kr = k, lr = l, pix = 0, stride = 1;
      bool inside = true;
      for (size_t i = r; i-- > 0;) {
        const int64_t ki = kr % block[i], li = lr % nb[i];
        kr /= block[i];
        lr /= nb[i];
        const int64_t c = li * str[i] - pads[i] + ki * dil[i];
        inside = inside && c >= 0 && c < image[i];
        pix += c * stride;
        stride *= image[i];
      }
      idx[size_t(k * L + l)] = inside ? pix : -1;
    }
  const int64_t N = xs[0], C = xs[1] / K;
  const Value g = gather_or_zero(b, b.output_grad(0), {N, C}, idx, {K, L});  // [N, C, K, L]
  b.set(0, b.reshape(g, xs));
});

// AffineGrid: grid[n, p] = theta[n] [base_p; 1], linear in theta, so
// dtheta[n] = sum_p dgrid[n, p] [base_p; 1]^T. The base points come from the
// op itself with the identity transform.
SINGA_GRADIENT("", "AffineGrid", [](GradBuilder& b) {
  const Value theta = b.input(0), g = b.output_grad(0);
  const Shape ts = b.shape(theta);
  const int64_t N = ts[0], k = ts[1];  // k = 2 or 3 spatial dims
  std::vector<int64_t> size = b.input_ints(1);
  size[0] = 1;
  std::vector<int64_t> eye;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j <= k; ++j) eye.push_back(i == j ? 1 : 0);
  const Value id = b.emit("Cast", {b.reshape(b.int64s(eye), {1, k, k + 1})}, {Attr("to", int64_t(b.dtype(theta)))});
  Emit e;
  e.op_type = "AffineGrid";
  e.opset = std::max<int64_t>(b.node().opset(), 20);
  e.inputs = {id, b.int64s(size)};
  e.forward_attrs = true;
  const Value base = b.reshape(b.emit(e)[0], {-1, k});
  const int64_t P = b.shape(base)[0];
  const Value ones = b.emit("Expand", {b.scalar(1, b.dtype(theta)), b.int64s({P, 1})});
  const Value hom = b.emit("Concat", {base, ones}, {Attr("axis", int64_t(1))});  // [P, k + 1]
  const Value gf = b.reshape(g, {N, P, k});
  b.set(0, b.emit("Einsum", {gf, hom}, {Attr("equation", "npi,pj->nij")}));
});

// GridSample: both gradients from ai.singa's GridSampleGrad kernel
// (grid_sample_grad.cpp), which replays the forward's sampling.
SINGA_GRADIENT("", "GridSample", [](GradBuilder& b) {
  Emit e;
  e.op_type = "GridSampleGrad";
  e.domain = "ai.singa";
  e.inputs = {b.output_grad(0), b.input(0), b.input(1)};
  e.num_outputs = 2;
  e.wanted = {b.needs(0), b.needs(1)};
  e.forward_attrs = true;
  e.attrs = {Attr("onnx_opset", b.node().opset())};
  std::vector<Value> g = b.emit(e);
  for (size_t i = 0; i < 2; ++i)
    if (!g[i].empty()) b.set(i, g[i]);
});

}  // namespace
