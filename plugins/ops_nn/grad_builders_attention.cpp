// Gradients of the attention family (Attention, RotaryEmbedding, SwiGLU,
// CausalConvWithState), as builders of backward nodes made of forward ops
// (gradient.hpp), so they run wherever those ops have kernels.
#include <grad_emit.hpp>
#include <singa/gradient.hpp>

#include <cmath>

namespace {

using singa::ops::grad::num;

using singa::sdk::Attr;
using singa::sdk::Emit;
using singa::sdk::GradBuilder;
using singa::sdk::Shape;
using singa::sdk::Value;
using Ints = std::vector<int64_t>;

bool given(const GradBuilder& b, size_t i) { return b.num_inputs() > i && !b.input(i).empty(); }
Value grad_of(const GradBuilder& b, size_t k) { return b.num_outputs() > k ? b.output_grad(k) : Value(); }
Value transpose(GradBuilder& b, const Value& x, Ints perm) {
  return b.emit("Transpose", {x}, {Attr("perm", std::move(perm))});
}
Value matmul(GradBuilder& b, const Value& x, const Value& y) { return b.emit("MatMul", {x, y}); }
Value slice(GradBuilder& b, const Value& x, int64_t axis, int64_t from, int64_t to) {
  return b.emit("Slice", {x, b.int64s({from}), b.int64s({to}), b.int64s({axis})});
}
Value reduce_sum(GradBuilder& b, const Value& x, Ints axes, bool keep) {
  return b.emit("ReduceSum", {x, b.int64s(std::move(axes))}, {Attr("keepdims", int64_t(keep))});
}
// a + c where either may be absent ("").
Value add_opt(GradBuilder& b, const Value& a, const Value& c) {
  if (a.empty()) return c;
  if (c.empty()) return a;
  return b.add(a, c);
}

// ------------------------------------------------------------ Attention
//
// With P the softmax weights (recomputed by the forward op with
// qk_matmul_output_mode 3, which applies every mask, the causal frontier and
// nonpad_kv_seqlen exactly as the forward did) and K, V the present caches
// [B, Hkv, T, *] with their heads repeated for the query heads of a group:
//   dV = P^T dY,  dP = dY V^T,  dS = P (dP - rowsum(dP P))   (softmax),
//   dmask = dS summed to the mask's shape (float masks are additive),
//   dRaw = dS (1 - tanh^2) under a softcap, dQ = scale dRaw K,
//   dK = scale dRaw^T Q; the query heads of a group add up on their KV head,
//   and the present caches' gradients split into past and current parts.
// A gradient reaching qk_matmul_output joins at the stage its mode names.
// Masked keys have P = 0, so no gradient reaches their scores; a fully
// masked row's output is constant 0 and gets none either.

struct AttnDims {
  bool four;
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv, P;
};

AttnDims attention_dims(GradBuilder& b) {
  const Shape qs = b.shape(b.input(0)), ks = b.shape(b.input(1)), vs = b.shape(b.input(2));
  AttnDims d{};
  d.four = qs.size() == 4;
  d.B = qs[0];
  if (d.four) {
    d.Hq = qs[1], d.Sq = qs[2], d.D = qs[3], d.Hkv = ks[1], d.Skv = ks[2], d.Dv = vs[3];
  } else {
    d.Hq = b.node().attr_int("q_num_heads", 0), d.Hkv = b.node().attr_int("kv_num_heads", 0);
    singa::sdk::check(d.Hq > 0 && d.Hkv > 0, "gradient of Attention: 3-D inputs need q_num_heads and kv_num_heads");
    d.Sq = qs[1], d.Skv = ks[1], d.D = qs[2] / d.Hq, d.Dv = vs[2] / d.Hkv;
  }
  d.P = given(b, 4) ? b.shape(b.input(4))[2] : 0;
  return d;
}

// [B, S, H*W] -> [B, H, S, W] (3-D layout) or unchanged (4-D).
Value to_heads(GradBuilder& b, const AttnDims& d, const Value& x, int64_t H, int64_t S, int64_t W) {
  if (d.four) return x;
  return transpose(b, b.reshape(x, {d.B, S, H, W}), {0, 2, 1, 3});
}
// The inverse of to_heads.
Value from_heads(GradBuilder& b, const AttnDims& d, const Value& x, int64_t H, int64_t S, int64_t W) {
  if (d.four) return x;
  return b.reshape(transpose(b, x, {0, 2, 1, 3}), {d.B, S, H * W});
}
// [B, Hkv, T, W] -> [B, Hq, T, W], each KV head repeated for its query group.
Value repeat_heads(GradBuilder& b, const AttnDims& d, const Value& x, int64_t T, int64_t W) {
  const int64_t G = d.Hq / d.Hkv;
  if (G == 1) return x;
  const Value x5 = b.reshape(x, {d.B, d.Hkv, 1, T, W});
  return b.reshape(b.emit("Expand", {x5, b.int64s({d.B, d.Hkv, G, T, W})}), {d.B, d.Hq, T, W});
}
// The adjoint of repeat_heads: the query heads of a group summed.
Value sum_heads(GradBuilder& b, const AttnDims& d, const Value& x, int64_t T, int64_t W) {
  const int64_t G = d.Hq / d.Hkv;
  if (G == 1) return x;
  return reduce_sum(b, b.reshape(x, {d.B, d.Hkv, G, T, W}), {2}, false);
}

// The forward op run again with every input, its attributes and the
// qk_matmul_output_mode `mode`; returns (present_key, present_value, qk).
std::vector<Value> attention_again(GradBuilder& b, int64_t mode) {
  Emit e;
  e.op_type = "Attention";
  e.opset = b.node().opset();
  for (size_t i = 0; i < b.num_inputs(); ++i) e.inputs.push_back(b.input(i));
  e.num_outputs = 4;
  e.wanted = {false, true, true, true};
  e.forward_attrs = true;
  e.attrs.emplace_back("qk_matmul_output_mode", mode);
  std::vector<Value> out = b.emit(e);
  return {out[1], out[2], out[3]};
}

SINGA_GRADIENT("", "Attention", [](GradBuilder& b) {
  const auto& n = b.node();
  const AttnDims d = attention_dims(b);
  const int64_t T = d.P + d.Skv;
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  const double cap = n.attr_float("softcap", 0.f);
  const double scale = n.has_attr("scale") ? double(n.attr_float("scale", 1.f))
                                           : (d.D > 0 ? 1.0 / std::sqrt(double(d.D)) : 1.0);
  const Value q = b.input(0);
  const Value dy = grad_of(b, 0), dpk = grad_of(b, 1), dpv = grad_of(b, 2), dqk = grad_of(b, 3);
  const auto at = [&](int64_t m) { return mode == m ? dqk : Value(); };

  const std::vector<Value> again = attention_again(b, 3);
  const Value kc = again[0], vc = again[1], p = again[2];
  const Value kx = repeat_heads(b, d, kc, T, d.D), vx = repeat_heads(b, d, vc, T, d.Dv);
  const Value q4 = to_heads(b, d, q, d.Hq, d.Sq, d.D);

  // Through P V.
  Value dp = at(3), dvc = dpv;
  if (!dy.empty()) {
    const Value dy4 = to_heads(b, d, dy, d.Hq, d.Sq, d.Dv);
    dp = add_opt(b, dp, matmul(b, dy4, transpose(b, vx, {0, 1, 3, 2})));
    dvc = add_opt(b, dvc, sum_heads(b, d, matmul(b, transpose(b, p, {0, 1, 3, 2}), dy4), T, d.Dv));
  }
  // Through the softmax: dS = P (dP - rowsum(dP P)).
  Value ds;
  if (!dp.empty()) {
    const Value pdp = b.mul(p, dp);
    ds = b.sub(pdp, b.mul(p, reduce_sum(b, pdp, {-1}, true)));
  }
  ds = add_opt(b, ds, at(2));
  // A float mask adds to the scores: its gradient is dS, summed over the
  // axes it broadcasts along (its last dim may be shorter than T).
  if (b.needs(3) && given(b, 3)) {
    const Shape ms = b.shape(b.input(3));
    Value g = ds.empty() ? b.zeros({d.B, d.Hq, d.Sq, T}, b.dtype(q)) : ds;
    if (ms.back() != T) g = slice(b, g, 3, 0, ms.back());
    b.set_sum_to(3, g);
  }
  // Through the softcap c tanh(s / c): the capped scores come from mode 1.
  Value draw = add_opt(b, ds, at(1));
  if (cap > 0 && !draw.empty()) {
    const Value t = b.mul(attention_again(b, 1)[2], num(b, 1.0 / cap, q));
    draw = b.mul(draw, b.sub(num(b, 1, q), b.mul(t, t)));
  }
  draw = add_opt(b, draw, at(0));

  Value dkc = dpk;
  if (!draw.empty()) {
    const Value dsc = b.mul(draw, num(b, scale, q));
    if (b.needs(0)) b.set(0, from_heads(b, d, matmul(b, dsc, kx), d.Hq, d.Sq, d.D));
    dkc = add_opt(b, dkc, sum_heads(b, d, matmul(b, transpose(b, dsc, {0, 1, 3, 2}), q4), T, d.D));
  } else if (b.needs(0)) {
    b.set(0, b.zeros(b.shape(q), b.dtype(q)));
  }
  // The present caches are past then current along axis 2.
  const auto split = [&](Value g, size_t cur, size_t past, int64_t W) {
    if (g.empty()) g = b.zeros({d.B, d.Hkv, T, W}, b.dtype(q));
    if (b.needs(cur)) b.set(cur, from_heads(b, d, slice(b, g, 2, d.P, T), d.Hkv, d.Skv, W));
    if (given(b, past) && b.needs(past)) b.set(past, slice(b, g, 2, 0, d.P));
  };
  split(dkc, 1, 4, d.D);
  split(dvc, 2, 5, d.Dv);
});

// ------------------------------------------------------------ SwiGLU
//
// Y = A s B with s = sigmoid(alpha A): dA = dY B s (1 + alpha A (1 - s)),
// dB = dY A s.
SINGA_GRADIENT("", "SwiGLU", [](GradBuilder& b) {
  const Value a = b.input(0), c = b.input(1), dy = b.output_grad(0);
  const double alpha = b.node().attr_float("alpha", 1.f);
  const Value s = b.emit("Sigmoid", {b.mul(a, num(b, alpha, a))});
  if (b.needs(0)) {
    const Value slope = b.add(num(b, 1, a), b.mul(b.mul(a, num(b, alpha, a)), b.sub(num(b, 1, a), s)));
    b.set(0, b.mul(b.mul(dy, c), b.mul(s, slope)));
  }
  if (b.needs(1)) b.set(1, b.mul(dy, b.mul(a, s)));
});

// ------------------------------------------------------------ RotaryEmbedding
//
// Each pair is rotated by its angle: X's gradient is dY rotated back, the
// same op with the sines negated. A cache entry (c, s) of a pair (x1, x2)
// gets dY1 x1 + dY2 x2 and dY2 x1 - dY1 x2, summed over the heads and over
// the (b, s) positions that read that cache row.
SINGA_GRADIENT("", "RotaryEmbedding", [](GradBuilder& b) {
  const auto& n = b.node();
  const Value x = b.input(0), cosc = b.input(1), sinc = b.input(2), dy = b.output_grad(0);
  const bool pos = given(b, 3);
  if (b.needs(0)) {
    Emit e;
    e.op_type = "RotaryEmbedding";
    e.opset = n.opset();
    e.inputs = {dy, cosc, b.neg(sinc)};
    if (pos) e.inputs.push_back(b.input(3));
    e.forward_attrs = true;
    b.set(0, b.emit(e)[0]);
  }
  if (!b.needs(1) && !b.needs(2)) return;
  const Shape xs = b.shape(x);
  const bool four = xs.size() == 4;
  const int64_t B = xs[0], S = four ? xs[2] : xs[1];
  const int64_t H = four ? xs[1] : n.attr_int("num_heads", 0);
  singa::sdk::check(H > 0, "gradient of RotaryEmbedding: a 3-D X needs attribute num_heads");
  const int64_t D = four ? xs[3] : xs[2] / H;
  const int64_t R = n.attr_int("rotary_embedding_dim", 0) == 0 ? D : n.attr_int("rotary_embedding_dim", 0);
  const int64_t half = R / 2;
  const bool inter = n.attr_int("interleaved", 0) == 1;
  // [B, S, H, 2, half] (halves) or [B, S, H, half, 2] (interleaved) and the
  // two members of each pair.
  const auto pairs = [&](const Value& v) {
    Value t = four ? transpose(b, v, {0, 2, 1, 3}) : b.reshape(v, {B, S, H, D});
    if (R != D) t = slice(b, t, 3, 0, R);
    t = b.reshape(t, inter ? Shape{B, S, H, half, 2} : Shape{B, S, H, 2, half});
    const int64_t axis = inter ? 4 : 3;
    return std::make_pair(slice(b, t, axis, 0, 1), slice(b, t, axis, 1, 2));
  };
  const auto [x1, x2] = pairs(x);
  const auto [g1, g2] = pairs(dy);
  // Summed over the heads to [B * S, half], then onto the cache's rows.
  const auto to_cache = [&](const Value& g, size_t input) {
    Value r = b.reshape(reduce_sum(b, g, {2}, false), {B * S, half});
    if (pos) {
      // A one-hot [P, B*S] of which positions read each row, times r.
      const int64_t rows = b.shape(b.input(input))[0];
      Ints iota(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) iota[size_t(i)] = i;
      const Value hit = b.emit("Equal", {b.reshape(iota.empty() ? b.int64s({}) : b.int64s(iota), {rows, 1}),
                                         b.reshape(b.input(3), {1, B * S})});
      r = matmul(b, b.emit("Cast", {hit}, {Attr("to", int64_t(b.dtype(x)))}), r);
    }
    b.set(input, b.reshape(r, b.shape(b.input(input))));
  };
  if (b.needs(1)) to_cache(b.add(b.mul(g1, x1), b.mul(g2, x2)), 1);
  if (b.needs(2)) to_cache(b.sub(b.mul(g2, x1), b.mul(g1, x2)), 2);
});

// ------------------------------------------------------------ CausalConvWithState
//
// The op is a depthwise Conv (group C, no padding) of padded =
// concat(past_state, input) with an optional SiLU, and present_state is
// padded's last k-1 positions: ConvGrad gives padded's, the weight's and the
// bias's gradients, present_state's gradient adds onto padded's tail, and
// padded's gradient splits into past_state's and input's.
SINGA_GRADIENT("", "CausalConvWithState", [](GradBuilder& b) {
  const Value x = b.input(0), w = b.input(1);
  const Shape xs = b.shape(x);
  const int64_t B = xs[0], C = xs[1], L = xs[2], K1 = b.shape(w)[2] - 1;
  const int32_t dt = b.dtype(x);
  const bool has_bias = given(b, 2), has_past = given(b, 3);
  Value padded = x;
  if (K1 > 0) padded = b.emit("Concat", {has_past ? b.input(3) : b.zeros({B, C, K1}, dt), x}, {Attr("axis", int64_t(2))});
  Value dz = b.output_grad(0);
  if (dz.empty()) dz = b.zeros(xs, dt);
  const std::string act = b.node().attr_string("activation", "none");
  if (act != "none") {
    // SiLU: d/dz z s(z) = s (1 + z (1 - s)).
    const Value z = b.emit("Conv", {padded, w, has_bias ? b.input(2) : Value()}, {Attr("group", C)});
    const Value s = b.emit("Sigmoid", {z});
    dz = b.mul(dz, b.mul(s, b.add(num(b, 1, z), b.mul(z, b.sub(num(b, 1, z), s)))));
  }
  Emit e;
  e.op_type = "ConvGrad";
  e.domain = singa::sdk::kGradDomain;
  e.inputs = {dz, padded, w};
  e.num_outputs = 3;
  const bool need_padded = b.needs(0) || (has_past && b.needs(3));
  e.wanted = {need_padded, b.needs(1), has_bias && b.needs(2)};
  e.attrs.emplace_back("group", C);
  const std::vector<Value> g = b.emit(e);
  if (!g[1].empty()) b.set(1, g[1]);
  if (!g[2].empty()) b.set(2, g[2]);
  if (!need_padded) return;
  Value dp = g[0];
  const Value dpresent = grad_of(b, 1);
  if (K1 > 0 && !dpresent.empty())
    dp = b.add(dp, b.emit("Concat", {b.zeros({B, C, L}, dt), dpresent}, {Attr("axis", int64_t(2))}));
  if (b.needs(0)) b.set(0, K1 > 0 ? slice(b, dp, 2, K1, K1 + L) : dp);
  if (has_past && b.needs(3)) b.set(3, slice(b, dp, 2, 0, K1));
});

}  // namespace
