// Scaled dot-product attention as one ai.singa.cpu Attention node
// (../attention.cpp):
//
//   MatMul(Q, K) [as a FusedMatMul with transB and alpha] -> [Add mask] ->
//   Softmax (last axis) -> MatMul(., V) -> Transpose -> Reshape
//
// where Q, K and V are [B, H, S, D] (or, batch 1, [H, S, D]) views
// (Reshape, Transpose, Split, Slice, Squeeze, Unsqueeze) of [B, S, W] or
// [S, B, W] tensors whose rows hold the H heads side by side, D columns
// each (a packed QKV projection: one tensor, three column offsets; or three
// separate ones), or are [B, H, S, D] tensors themselves (a KV cache's
// Concat). A scale may sit on the scores (Div/Mul, or the FusedMatMul's
// alpha) or on Q or K before the product (torch's MultiheadAttention); the
// mask is any float value that broadcasts to the scores. The node reads the
// heads where the projections wrote them and writes the context rows where
// the output projection reads them: the Transposes, the Split, the
// [B, H, S, S] scores and their Softmax pass never touch memory. Where the
// Reshape's shape is not the node's [B, S, H * D] (or [S, B, H * D]), a
// Reshape of the node's output to it follows (a view, no copy).
//
// Not ONNX's Attention-23: that op takes Q, K and V as whole [B, S, H * D]
// (or [B, H, S, D]) tensors, so a packed QKV projection read at three column
// offsets, the case that saves the Split, cannot be written with it.
//
// Runs after ops_math's cpu.matmul_scales (the 1/sqrt(D) as alpha) and
// cpu.transposed_b (K^T as transB); a K^T view that was not a plain
// last-axes Transpose is traced as well. The shapes must be known at
// prepare: a model with symbolic dims is fused in the plans specialized per
// input shape (docs/architecture.md), not in its general plan. Float only.
#include "fuse_attention.hpp"

#include <cpu_domain.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

using Dims = std::vector<int64_t>;

bool standard(const sdk::GraphNode& n, const char* op) {
  if (!n.valid()) return false;
  const std::string d = n.domain();
  return (d.empty() || d == "ai.onnx") && n.op_type() == op;
}

// The value's type is float and its shape fully known at prepare time.
bool static_float(const sdk::Graph& g, const std::string& value, Dims& dims) {
  singa_value_info info;
  if (value.empty() || !g.value_info(value, info) || info.onnx_dtype != SINGA_ONNX_FLOAT || info.ndim < 0) return false;
  dims.assign(info.dims, info.dims + info.ndim);
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

// The value's only reader, when it is not a graph output.
sdk::GraphNode sole_reader(const sdk::Graph& g, const std::string& value) {
  auto readers = g.consumers(value);
  if (value.empty() || g.is_output(value) || readers.size() != 1) return sdk::GraphNode(nullptr, g.raw());
  return readers[0];
}

// Element (i0, i1, ...) of the view is root[offset + sum(i_k * strides[k])].
struct View {
  std::string root;
  Dims dims, strides;
  int64_t offset = 0;
  float scale = 1.f;                  // a scalar Mul/Div traced through (Q's or K's only)
  std::vector<sdk::GraphNode> nodes;  // the nodes between the root and the value
};

Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// `v` seen with the dims `out` of the same element count (Reshape, Squeeze,
// Unsqueeze), without a copy: unit dims carry no stride, and each group of
// input dims that becomes a group of output dims (merged or split) must be
// contiguous among itself.
bool reshape_view(View& v, const Dims& out) {
  Dims in_dims, in_strides, out_dims;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (v.dims[k] == 0) return false;
    if (v.dims[k] != 1) in_dims.push_back(v.dims[k]), in_strides.push_back(v.strides[k]);
  }
  for (int64_t d : out) {
    if (d == 0) return false;
    if (d != 1) out_dims.push_back(d);
  }
  Dims out_strides(out_dims.size(), 0);
  size_t oi = 0, ni = 0;
  while (oi < in_dims.size() && ni < out_dims.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = in_dims[oi], np = out_dims[ni];
    while (op != np) {
      if (np < op) {
        if (nj == out_dims.size()) return false;
        np *= out_dims[nj++];
      } else {
        if (oj == in_dims.size()) return false;
        op *= in_dims[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (in_strides[k] != in_dims[k + 1] * in_strides[k + 1]) return false;
    out_strides[nj - 1] = in_strides[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) out_strides[k - 1] = out_strides[k] * out_dims[k];
    oi = oj, ni = nj;
  }
  if (oi != in_dims.size() || ni != out_dims.size()) return false;
  Dims strides(out.size(), 0);
  for (size_t k = 0, j = 0; k < out.size(); ++k)
    if (out[k] != 1) strides[k] = out_strides[j++];
  v.dims = out;
  v.strides = std::move(strides);
  return true;
}

// The constant int64 input `i` of `n` (empty `ok` = false when it is not one).
Dims const_ints(const sdk::Graph& g, const sdk::GraphNode& n, size_t i, bool& ok) {
  if (i >= n.num_inputs() || n.input_name(i).empty()) return {};
  const sdk::Tensor t = g.constant(n.input_name(i));
  if (!t.present() || t.dtype() != SINGA_ONNX_INT64 || t.ndim() > 1) {
    ok = false;
    return {};
  }
  return Dims(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

// A Slice of constant starts/ends/axes with steps of 1: moves the offset.
bool slice_view(const sdk::Graph& g, const sdk::GraphNode& n, View& v, const Dims& out) {
  bool ok = true;
  Dims starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts"), ends = n.attr_ints("ends"), axes = n.attr_ints("axes");
  } else {
    starts = const_ints(g, n, 1, ok), ends = const_ints(g, n, 2, ok), axes = const_ints(g, n, 3, ok);
    steps = const_ints(g, n, 4, ok);
  }
  if (!ok || starts.size() != ends.size() || starts.empty()) return false;
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size())) return false;
  const int64_t rank = int64_t(v.dims.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    if (!steps.empty() && steps[k] != 1) return false;
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank) return false;
    const int64_t d = v.dims[size_t(a)];
    int64_t b = starts[k] < 0 ? starts[k] + d : starts[k], e = ends[k] < 0 ? ends[k] + d : ends[k];
    b = std::min(std::max<int64_t>(b, 0), d), e = std::min(std::max<int64_t>(e, 0), d);
    if (e < b) return false;
    v.offset += b * v.strides[size_t(a)];
    v.dims[size_t(a)] = e - b;
  }
  return v.dims == out;
}

// A Mul or Div of `value` by a constant float scalar: the factor, or 0.
float scalar_factor(const sdk::Graph& g, const sdk::GraphNode& n, std::string& value) {
  const bool div = standard(n, "Div");
  if ((!div && !standard(n, "Mul")) || n.num_inputs() != 2 || n.num_outputs() != 1) return 0.f;
  for (size_t i = 0; i < 2; ++i) {
    if (div && i == 0) continue;  // c / x is no scale
    const sdk::Tensor c = g.constant(n.input_name(i));
    if (!c.present() || c.dtype() != SINGA_ONNX_FLOAT || c.numel() != 1 || g.constant(n.input_name(1 - i)).present())
      continue;
    const float f = c.data<float>()[0];
    if (!std::isfinite(f) || f == 0.f) return 0.f;
    value = n.input_name(1 - i);
    return div ? 1.f / f : f;
  }
  return 0.f;
}

// What `value` is as a view of a tensor no view op produced (its root);
// with `scaled`, through one scalar Mul or Div as well.
bool trace_view(const sdk::Graph& g, const std::string& value, View& v, bool scaled, int depth = 0) {
  Dims dims;
  if (!static_float(g, value, dims)) return false;
  sdk::GraphNode n = g.producer(value);
  std::string op;
  for (const char* o : {"Transpose", "Split", "Slice", "Squeeze", "Unsqueeze", "Reshape"})
    if (standard(n, o)) op = o;
  std::string from;
  const float f = scaled && depth <= 16 && n.valid() ? scalar_factor(g, n, from) : 0.f;
  if (f != 0.f) {
    Dims fd;
    if (!static_float(g, from, fd) || fd != dims || !trace_view(g, from, v, false, depth + 1)) return false;
    v.nodes.push_back(n);
    v.scale *= f;
    return true;
  }
  if (op.empty() || depth > 16 || n.num_inputs() < 1 || n.input_name(0).empty()) {
    v.root = value;
    v.dims = dims;
    v.strides = contiguous_strides(dims);
    v.offset = 0;
    return true;
  }
  if (!trace_view(g, n.input_name(0), v, scaled, depth + 1)) return false;
  v.nodes.push_back(n);
  if (op == "Transpose") {
    const Dims perm = n.attr_ints("perm");
    if (perm.size() != v.dims.size()) return false;
    View t = v;
    for (size_t k = 0; k < v.dims.size(); ++k) {
      if (perm[k] < 0 || size_t(perm[k]) >= v.dims.size()) return false;
      t.dims[k] = v.dims[size_t(perm[k])];
      t.strides[k] = v.strides[size_t(perm[k])];
    }
    if (t.dims != dims) return false;
    v = std::move(t);
    return true;
  }
  if (op == "Split") {
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += int64_t(v.dims.size());
    if (axis < 0 || size_t(axis) >= v.dims.size()) return false;
    // The outputs' static shapes give the sizes, whichever way they were
    // spelled (an input, an attribute, equal parts).
    int64_t start = 0;
    for (const std::string& out : n.output_names()) {
      Dims od;
      if (!static_float(g, out, od) || od.size() != v.dims.size()) return false;
      if (out == value) break;
      start += od[size_t(axis)];
    }
    v.offset += start * v.strides[size_t(axis)];
    v.dims[size_t(axis)] = dims[size_t(axis)];
    return v.dims == dims;
  }
  if (op == "Slice") return slice_view(g, n, v, dims);
  return reshape_view(v, dims);  // Squeeze, Unsqueeze, Reshape
}

// A [H, S, D] view (batch 1) as [1, H, S, D]; false for other ranks.
bool as_four_dims(View& v) {
  if (v.dims.size() == 3) {
    v.dims.insert(v.dims.begin(), 1);
    v.strides.insert(v.strides.begin(), 0);
  }
  return v.dims.size() == 4;
}

// How the kernel can read a [B, H, S, D] view's root (bits of a mask).
enum : int { kBatchFirst = 1, kSeqFirst = 2, kHeadsMajor = 4 };

// The strides match, unit dims aside.
bool strides_are(const View& v, const Dims& want) {
  for (size_t k = 0; k < 4; ++k)
    if (v.dims[k] != 1 && v.strides[k] != want[k]) return false;
  return true;
}

// The layouts of ../attention.cpp that read `v`: its root [B, S, W] or
// [S, B, W] with the heads side by side from column `offset`, or a whole
// [B, H, S, D] root.
int head_layouts(const sdk::Graph& g, const View& v, int64_t& offset) {
  Dims r;
  if (v.root.empty() || v.dims.size() != 4 || !static_float(g, v.root, r)) return 0;
  const int64_t B = v.dims[0], H = v.dims[1], S = v.dims[2], D = v.dims[3];
  offset = v.offset;
  if (r.size() == 4) return r == v.dims && v.offset == 0 && strides_are(v, contiguous_strides(r)) ? kHeadsMajor : 0;
  if (r.size() != 3) return 0;
  const int64_t W = r[2];
  if (v.offset < 0 || v.offset + H * D > W) return 0;
  int ways = 0;
  if (r[0] == B && r[1] == S && strides_are(v, {S * W, D, W, 1})) ways |= kBatchFirst;
  if (r[0] == S && r[1] == B && strides_are(v, {W, D, B * W, 1})) ways |= kSeqFirst;
  return ways;
}

// The scores' MatMul: a standard MatMul(Q, K^T), or ops_math's FusedMatMul
// with at most a scale and a transposed K (no bias, no epilogue).
bool scores_product(const sdk::GraphNode& n) {
  if (n.num_inputs() != 2 || n.num_outputs() != 1) return false;
  if (standard(n, "MatMul")) return true;
  return n.valid() && n.domain() == ops::kCpuDomain && n.op_type() == "FusedMatMul" && !n.has_attr("activation");
}

// The mask's dims, right-aligned, each 1 or the scores' own.
bool broadcasts_to(const Dims& mask, const Dims& scores) {
  if (mask.size() > scores.size()) return false;
  for (size_t k = 0; k < mask.size(); ++k) {
    const int64_t m = mask[mask.size() - 1 - k];
    if (m != 1 && m != scores[scores.size() - 1 - k]) return false;
  }
  return true;
}

// The output side: ctx [B, H, Sq, D] (or [H, Sq, D]) -> Transpose -> value
// whose memory holds the context rows in the order the kernel writes them:
// the non-unit axes of (B, Sq, H, D), or of (Sq, B, H, D) for seq-first.
int output_layouts(const Dims& ctx, const Dims& perm) {
  const size_t lift = 4 - ctx.size();
  if (ctx.size() < 3 || ctx.size() > 4 || perm.size() != ctx.size()) return 0;
  Dims order;  // the ctx axes in 4-D numbering, in memory order, units left out
  for (int64_t p : perm) {
    if (p < 0 || size_t(p) >= ctx.size()) return 0;
    if (ctx[size_t(p)] != 1) order.push_back(p + int64_t(lift));
  }
  const Dims dims4 = lift ? Dims{1, ctx[0], ctx[1], ctx[2]} : ctx;
  auto matches = [&](Dims want) {
    Dims w;
    for (int64_t a : want)
      if (dims4[size_t(a)] != 1) w.push_back(a);
    return w == order;
  };
  return (matches({0, 2, 1, 3}) ? kBatchFirst : 0) | (matches({2, 0, 1, 3}) ? kSeqFirst : 0);
}

// Adds to `gone` every view node whose outputs only nodes in `gone` read
// (to a fixed point): the view chains the Attention node makes unused.
void add_unused_views(const sdk::Graph& g, const std::vector<sdk::GraphNode>& views, std::vector<sdk::GraphNode>& gone) {
  std::set<const singa_node*> in;
  for (const auto& n : gone) in.insert(n.raw());
  for (bool grew = true; grew;) {
    grew = false;
    for (const sdk::GraphNode& n : views) {
      if (in.count(n.raw())) continue;
      bool unused = true;
      for (const std::string& out : n.output_names()) {
        if (out.empty()) continue;
        if (g.is_output(out)) unused = false;
        for (const sdk::GraphNode& r : g.consumers(out)) unused = unused && in.count(r.raw()) > 0;
      }
      if (!unused) continue;
      in.insert(n.raw());
      gone.push_back(n);
      grew = true;
    }
  }
}

// An int64 shape constant for a Reshape.
std::string shape_constant(sdk::Graph& g, const std::string& hint, Dims dims) {
  int64_t n = int64_t(dims.size());
  DLTensor t{};
  t.data = dims.data();
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = {kDLInt, 64, 1};
  t.shape = &n;
  return g.add_constant(hint, t);
}

// The value's dims, whatever its type, when all are known at prepare.
bool static_dims(const sdk::Graph& g, const std::string& value, Dims& dims) {
  singa_value_info info;
  if (value.empty() || !g.value_info(value, info) || info.ndim < 0) return false;
  dims.assign(info.dims, info.dims + info.ndim);
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

// numpy's broadcast of two shapes; false when they do not broadcast.
bool broadcast(const Dims& a, const Dims& b, Dims& out) {
  out.assign(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[out.size() - 1 - k] = x == 1 ? y : x;
  }
  return true;
}

// What lies between the scores' product and the Softmax: an Add of a float
// mask, a Where(cond, scores, fill) (a boolean mask, as HF's GPT-2 writes
// its causal one), or the Where then the Add.
struct MaskChain {
  explicit MaskChain(const sdk::Graph& g) : qk(nullptr, g.raw()), add(qk), where(qk) {}
  sdk::GraphNode qk, add, where;
  std::string added, cond, fill;
};

// `value` (the scores' shape `sd`, read only by the next node) is made by
// the product, or by a Where over it; fills `mc` from there.
bool find_where(const sdk::Graph& g, const std::string& value, const Dims& sd, MaskChain& mc) {
  Dims d;
  if (!sole_reader(g, value).valid() || !static_float(g, value, d) || d != sd) return false;
  sdk::GraphNode n = g.producer(value);
  if (scores_product(n)) {
    mc.qk = n;
    return true;
  }
  Dims cd, fd, md;
  if (!standard(n, "Where") || n.num_inputs() != 3 || n.input_name(1) == n.input_name(0) ||
      !static_dims(g, n.input_name(0), cd) || !static_float(g, n.input_name(2), fd) || !broadcast(cd, fd, md) ||
      !broadcasts_to(md, sd))
    return false;
  singa_value_info ci;
  if (!g.value_info(n.input_name(0), ci) || ci.onnx_dtype != SINGA_ONNX_BOOL) return false;
  Dims xd;
  sdk::GraphNode p = g.producer(n.input_name(1));
  if (!scores_product(p) || !sole_reader(g, n.input_name(1)).valid() || !static_float(g, n.input_name(1), xd) ||
      xd != sd)
    return false;
  mc.where = n, mc.qk = p, mc.cond = n.input_name(0), mc.fill = n.input_name(2);
  return true;
}

bool find_scores(const sdk::Graph& g, const std::string& logits, const Dims& sd, MaskChain& mc) {
  mc = MaskChain(g);
  sdk::GraphNode add = g.producer(logits);
  if (!standard(add, "Add")) {
    const sdk::GraphNode p = g.producer(logits);
    if (scores_product(p)) {
      mc.qk = p;
      return true;
    }
    return find_where(g, logits, sd, mc);
  }
  if (add.num_inputs() != 2 || add.input_name(0) == add.input_name(1)) return false;
  for (size_t i = 0; i < 2; ++i) {
    Dims md;
    if (!static_float(g, add.input_name(1 - i), md) || !broadcasts_to(md, sd)) continue;
    if (!find_where(g, add.input_name(i), sd, mc)) continue;
    if (mc.where.valid()) {  // the Where's mask and this one, added, must still fit the scores
      Dims cd, fd, wd, all;
      if (!static_dims(g, mc.cond, cd) || !static_dims(g, mc.fill, fd) || !broadcast(cd, fd, wd) ||
          !broadcast(wd, md, all) || !broadcasts_to(all, sd)) {
        mc = MaskChain(g);
        continue;
      }
    }
    mc.add = add, mc.added = add.input_name(1 - i);
    return true;
  }
  return false;
}

// A float scalar constant.
std::string scalar_constant(sdk::Graph& g, const std::string& hint, float v) {
  DLTensor t{};
  t.data = &v;
  t.device = {kDLCPU, 0};
  t.ndim = 0;
  t.dtype = {kDLFloat, 32, 1};
  return g.add_constant(hint, t);
}

// The additive mask the Attention node reads ("" for none): the Add's, or
// Where(cond, 0, fill) (+ the Add's), whose nodes go into `nodes` (they run
// on the mask's own small shape, not on the scores).
std::string mask_value(sdk::Graph& g, const MaskChain& mc, const std::string& logits,
                       std::vector<sdk::NewNode>& nodes) {
  if (!mc.where.valid()) return mc.added;
  sdk::NewNode w("", "Where");
  w.name = mc.where.name();
  w.inputs = {mc.cond, scalar_constant(g, logits + "/unmasked", 0.f), mc.fill};
  w.outputs = {logits + "/mask"};
  nodes.push_back(w);
  if (mc.added.empty()) return w.outputs[0];
  sdk::NewNode a("", "Add");
  a.name = mc.add.name();
  a.inputs = {w.outputs[0], mc.added};
  a.outputs = {logits + "/masks"};
  nodes.push_back(a);
  return a.outputs[0];
}

}  // namespace

int fuse_attention(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode sm : g.nodes()) {
    if (!sm.alive() || !standard(sm, "Softmax") || sm.num_inputs() != 1 || sm.num_outputs() != 1) continue;
    const std::string logits = sm.input_name(0), probs = sm.output_name(0);
    Dims sd;
    if (!static_float(g, logits, sd) || sd.size() < 3 || sd.size() > 4 || !sole_reader(g, logits).valid() ||
        probs.empty())
      continue;
    // The last axis, in either opset's spelling (before 13, axis 1 flattens).
    const int64_t ax = sm.attr_int("axis", sm.opset() >= 13 ? -1 : 1);
    if (ax != -1 && ax != int64_t(sd.size()) - 1) continue;
    MaskChain mc(g);
    if (!find_scores(g, logits, sd, mc)) continue;
    sdk::GraphNode qk = mc.qk;
    sdk::GraphNode pv = sole_reader(g, probs);
    if (!standard(pv, "MatMul") || pv.num_inputs() != 2 || pv.input_name(0) != probs) continue;
    sdk::GraphNode tr = sole_reader(g, pv.output_name(0));
    if (!standard(tr, "Transpose")) continue;
    sdk::GraphNode rs = sole_reader(g, tr.output_name(0));
    if (!standard(rs, "Reshape") || rs.num_outputs() != 1 || rs.output_name(0).empty()) continue;
    View q, k, v;
    if (!trace_view(g, qk.input_name(0), q, true) || !trace_view(g, qk.input_name(1), k, true) ||
        !trace_view(g, pv.input_name(1), v, false) || !as_four_dims(q) || !as_four_dims(k) || !as_four_dims(v))
      continue;
    if (qk.attr_int("transB", 0) != 1) {  // K^T as a view: K is it with the last two axes swapped
      std::swap(k.dims[2], k.dims[3]);
      std::swap(k.strides[2], k.strides[3]);
    }
    int64_t qo = 0, ko = 0, vo = 0;
    const int qw = head_layouts(g, q, qo), kw = head_layouts(g, k, ko), vw = head_layouts(g, v, vo);
    const int64_t B = q.dims[0], H = q.dims[1], Sq = q.dims[2], D = q.dims[3], Sk = k.dims[2];
    if (k.dims != Dims{B, H, Sk, D} || v.dims != Dims{B, H, Sk, D}) continue;
    if (sd != (sd.size() == 4 ? Dims{B, H, Sq, Sk} : Dims{B * H, Sq, Sk})) continue;
    Dims cd, yd;
    if (!static_float(g, pv.output_name(0), cd) || !static_float(g, rs.output_name(0), yd)) continue;
    // One of [B, S, W] or [S, B, W] for every 3-D root and for Y.
    int ways = output_layouts(cd, tr.attr_ints("perm"));
    for (int w : {qw, kw, vw})
      if (w != kHeadsMajor) ways &= w;
    if (!ways) continue;
    const bool seq_first = !(ways & kBatchFirst);
    const Dims natural = seq_first ? Dims{Sq, B, H * D} : Dims{B, Sq, H * D};

    std::vector<sdk::NewNode> with_masks;  // the nodes that make a Where's mask additive
    sdk::NewNode node(ops::kCpuDomain, "Attention");
    node.name = (sm.name().empty() ? logits : sm.name()) + "/Attention";
    node.opset = 1;
    node.inputs = {q.root, k.root, v.root};
    const std::string mask = mask_value(g, mc, logits, with_masks);
    if (!mask.empty()) node.inputs.push_back(mask);
    const std::string y = rs.output_name(0);
    node.outputs = {yd == natural ? y : y + "/attention"};
    node.attrs = {sdk::Attr("num_heads", H),
                  sdk::Attr("head_size", D),
                  sdk::Attr("scale", qk.attr_float("alpha", 1.f) * q.scale * k.scale),
                  sdk::Attr("q_offset", qo),
                  sdk::Attr("k_offset", ko),
                  sdk::Attr("v_offset", vo)};
    if (seq_first) node.attrs.push_back(sdk::Attr("seq_first", int64_t(1)));
    with_masks.push_back(node);
    std::vector<sdk::NewNode> with = with_masks;
    if (yd != natural) {  // the same memory in the Reshape's shape
      sdk::NewNode view("", "Reshape");
      view.name = rs.name();
      view.inputs = {node.outputs[0], shape_constant(g, y + "/shape", yd)};
      view.outputs = {y};
      with.push_back(view);
    }
    std::vector<sdk::GraphNode> gone{qk, sm, pv, tr, rs};
    for (const sdk::GraphNode& n : {mc.add, mc.where})
      if (n.valid()) gone.push_back(n);
    std::vector<sdk::GraphNode> views = q.nodes;
    views.insert(views.end(), k.nodes.begin(), k.nodes.end());
    views.insert(views.end(), v.nodes.begin(), v.nodes.end());
    add_unused_views(g, views, gone);
    g.replace(gone, with);
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
