// Scaled dot-product attention as one ai.singa.cpu Attention node
// (../attention.cpp):
//
//   MatMul(Q, K) [as a FusedMatMul with transB and alpha] -> Softmax (last
//   axis) -> MatMul(., V) -> Transpose(0, 2, 1, 3) -> Reshape [B, S, H * D]
//
// where Q, K and V are [B, H, S, D] views (Reshape, Transpose, Split,
// Squeeze, Unsqueeze) of [B, S, W] tensors whose rows hold the H heads side
// by side, D columns each: a packed QKV projection (one tensor, three column
// offsets) or three separate ones. The node reads the heads where the
// projections wrote them and writes the context rows where the output
// projection reads them: the Transposes, the Split, the [B, H, S, S] scores
// and their Softmax pass never touch memory.
//
// Not ONNX's Attention-23: that op takes Q, K and V as whole [B, S, H * D]
// (or [B, H, S, D]) tensors, so a packed QKV projection read at three column
// offsets, the case that saves the Split, cannot be written with it.
//
// Runs after ops_math's cpu.matmul_scales (the 1/sqrt(D) as alpha) and
// cpu.transposed_b (K^T as transB); a K^T view that was not a plain
// last-axes Transpose is traced as well. Static shapes, float, no mask (an
// Add before the Softmax leaves the pattern alone).
#include "fuse_attention.hpp"

#include <cpu_domain.hpp>

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
  std::vector<sdk::GraphNode> nodes;  // the view ops between the root and the value
};

Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// `v` seen with the dims `out` of the same element count (Reshape, Squeeze,
// Unsqueeze). Unit dims carry no stride; the others must either stay as they
// are (a Squeeze) or be contiguous among themselves (a real reshape).
bool reshape_view(View& v, const Dims& out) {
  Dims in_dims, in_strides, out_dims;
  for (size_t k = 0; k < v.dims.size(); ++k)
    if (v.dims[k] != 1) {
      in_dims.push_back(v.dims[k]);
      in_strides.push_back(v.strides[k]);
    }
  for (int64_t d : out)
    if (d != 1) out_dims.push_back(d);
  Dims strides(out.size(), 0);
  if (in_dims == out_dims) {
    for (size_t k = 0, j = 0; k < out.size(); ++k)
      if (out[k] != 1) strides[k] = in_strides[j++];
  } else {
    if (in_strides != contiguous_strides(in_dims)) return false;
    strides = contiguous_strides(out);
  }
  v.dims = out;
  v.strides = std::move(strides);
  return true;
}

// What `value` is as a view of a tensor no view op produced (its root).
bool trace_view(const sdk::Graph& g, const std::string& value, View& v, int depth = 0) {
  Dims dims;
  if (!static_float(g, value, dims)) return false;
  sdk::GraphNode n = g.producer(value);
  std::string op;
  for (const char* o : {"Transpose", "Split", "Squeeze", "Unsqueeze", "Reshape"})
    if (standard(n, o)) op = o;
  if (op.empty() || depth > 16 || n.num_inputs() < 1 || n.input_name(0).empty()) {
    v.root = value;
    v.dims = dims;
    v.strides = contiguous_strides(dims);
    v.offset = 0;
    return true;
  }
  if (!trace_view(g, n.input_name(0), v, depth + 1)) return false;
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
  return reshape_view(v, dims);  // Squeeze, Unsqueeze, Reshape
}

// A [B, H, S, D] view of a [B, S, W] root whose rows hold the heads side by
// side: the column offset of head 0, or -1.
int64_t head_columns(const sdk::Graph& g, const View& v) {
  Dims r;
  if (v.root.empty() || v.dims.size() != 4 || !static_float(g, v.root, r)) return -1;
  const int64_t B = v.dims[0], H = v.dims[1], S = v.dims[2], D = v.dims[3];
  if (r.size() != 3 || r[0] != B || r[1] != S) return -1;
  const int64_t W = r[2];
  const int64_t want[4] = {S * W, D, W, 1};
  for (size_t k = 0; k < 4; ++k)
    if (v.dims[k] != 1 && v.strides[k] != want[k]) return -1;
  if (v.offset < 0 || v.offset + H * D > W) return -1;
  return v.offset;
}

// The scores' MatMul: a standard MatMul(Q, K^T), or ops_math's FusedMatMul
// with at most a scale and a transposed K (no bias, no epilogue).
bool scores_product(const sdk::GraphNode& n) {
  if (n.num_inputs() != 2 || n.num_outputs() != 1) return false;
  if (standard(n, "MatMul")) return true;
  return n.valid() && n.domain() == ops::kCpuDomain && n.op_type() == "FusedMatMul" && !n.has_attr("activation");
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

}  // namespace

int fuse_attention(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode sm : g.nodes()) {
    if (!sm.alive() || !standard(sm, "Softmax") || sm.num_inputs() != 1 || sm.num_outputs() != 1) continue;
    const std::string scores = sm.input_name(0), probs = sm.output_name(0);
    Dims sd;
    if (!static_float(g, scores, sd) || sd.size() != 4 || !sole_reader(g, scores).valid() || probs.empty()) continue;
    // The last axis, in either opset's spelling (before 13, axis 1 flattens).
    const int64_t ax = sm.attr_int("axis", sm.opset() >= 13 ? -1 : 1);
    if (ax != -1 && ax != 3) continue;
    sdk::GraphNode qk = g.producer(scores);
    if (!scores_product(qk)) continue;
    sdk::GraphNode pv = sole_reader(g, probs);
    if (!standard(pv, "MatMul") || pv.num_inputs() != 2 || pv.input_name(0) != probs) continue;
    sdk::GraphNode tr = sole_reader(g, pv.output_name(0));
    if (!standard(tr, "Transpose") || tr.attr_ints("perm") != Dims{0, 2, 1, 3}) continue;
    sdk::GraphNode rs = sole_reader(g, tr.output_name(0));
    if (!standard(rs, "Reshape") || rs.num_outputs() != 1 || rs.output_name(0).empty()) continue;
    View q, k, v;
    if (!trace_view(g, qk.input_name(0), q) || !trace_view(g, qk.input_name(1), k) ||
        !trace_view(g, pv.input_name(1), v))
      continue;
    if (qk.attr_int("transB", 0) != 1) {  // K^T as a view: K is it with the last two axes swapped
      if (k.dims.size() != 4) continue;
      std::swap(k.dims[2], k.dims[3]);
      std::swap(k.strides[2], k.strides[3]);
    }
    const int64_t qo = head_columns(g, q), ko = head_columns(g, k), vo = head_columns(g, v);
    if (qo < 0 || ko < 0 || vo < 0) continue;
    const int64_t B = q.dims[0], H = q.dims[1], Sq = q.dims[2], D = q.dims[3], Sk = k.dims[2];
    if (k.dims != Dims{B, H, Sk, D} || v.dims != Dims{B, H, Sk, D} || sd != Dims{B, H, Sq, Sk}) continue;
    Dims yd;
    if (!static_float(g, rs.output_name(0), yd) || yd != Dims{B, Sq, H * D}) continue;

    sdk::NewNode node(ops::kCpuDomain, "Attention");
    node.name = (sm.name().empty() ? scores : sm.name()) + "/Attention";
    node.opset = 1;
    node.inputs = {q.root, k.root, v.root};
    node.outputs = {rs.output_name(0)};
    node.attrs = {sdk::Attr("num_heads", H),          sdk::Attr("head_size", D),
                  sdk::Attr("scale", qk.attr_float("alpha", 1.f)), sdk::Attr("q_offset", qo),
                  sdk::Attr("k_offset", ko),          sdk::Attr("v_offset", vo)};
    std::vector<sdk::GraphNode> gone{qk, sm, pv, tr, rs};
    std::vector<sdk::GraphNode> views = q.nodes;
    views.insert(views.end(), k.nodes.begin(), k.nodes.end());
    views.insert(views.end(), v.nodes.begin(), v.nodes.end());
    add_unused_views(g, views, gone);
    g.replace(gone, {node});
    ++fused;
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
