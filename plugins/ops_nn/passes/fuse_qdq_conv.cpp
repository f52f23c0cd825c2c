// A Conv between DequantizeLinear'd 8-bit operands (the QDQ format that
// onnxruntime's quantize_static writes) becomes one ai.singa.cpu QdqConv
// (quant_conv.cpp), which convolves the 8-bit values on oneDNN's int8
// primitive (VNNI/AMX) and scales the int32 sums to float, instead of
// dequantizing both sides and running a float Conv:
//
//   DequantizeLinear(x8, sx, zx) -> Conv <- W      [<- B]   [-> Relu]
//
// x8 is u8 or s8 with a constant scalar scale and zero point. W is either
// DequantizeLinear of an 8-bit constant (scale per tensor or per output
// channel, any zero point) or, because the core folds that DequantizeLinear
// before the plugins' passes run, a float constant whose every output
// channel is exactly integer multiples of one scale (w == float(q * s),
// element by element, so the 8-bit copy loses nothing). B, when present, is
// a float constant; a Relu that alone reads the Conv is applied too, and
// then a QuantizeLinear (scalar constant scale and zero point) that alone
// reads the result, so the Conv writes 8-bit values. Any
// group count, stride, padding, dilation and kernel size of a 2-D Conv.
// Only on CPUs where oneDNN's int8 code accumulates exactly (VNNI or AMX):
// elsewhere the QdqConv kernel would take its slow exact path. The
// activation's DequantizeLinear goes when nothing else reads it.
//
// Runs first among the Conv passes, which would otherwise take the float Conv.
//
// fuse_qdq_elementwise (pass cpu.qdq_elementwise, next) then takes the 8-bit
// steps between such convolutions: QuantizeLinear(Relu?(DequantizeLinear(x)))
// and QuantizeLinear(Relu?(DequantizeLinear(a) + DequantizeLinear(b))), scalar
// constant scales and zero points, a and b of one known shape, become
// QdqRequantize and QdqAdd (qdq_conv_elementwise.cpp), which compute the same
// float steps block by block, bit for bit, without float tensors between.
// An Add of DequantizeLinear(a) and a float b of a's shape [+ Relu] left
// over (a residual sum read in float) becomes DqAdd the same way.
//
// use_qdq_channels_last (pass cpu.qdq_layout, next) keeps the 8-bit values
// that only these nodes write and read channels-last ("ai.singa.cpu.nhwc"),
// as oneDNN's int8 kernels read and write them, so the QdqConvs skip their
// NCHW <-> NHWC conversions; an elementwise node's inputs and output change
// together or not at all.
#include "fuse_passes.hpp"
#include "conv_match.hpp"

#include "../conv_integer_dnnl.hpp"
#include "../layouts.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

// Fewer input channels than this per group (and one group) stay float.
constexpr int64_t kMinChannels = 8;

bool eight_bit(int32_t t) { return t == SINGA_ONNX_UINT8 || t == SINGA_ONNX_INT8; }

// The scale and zero point of DequantizeLinear `dq` when both are constants
// of 1 value (or `per`, along axis `axis` of a rank-`rank` input, when per >
// 1), with float output and no block size. zp is absent when not given.
bool dq_params(const Graph& g, const GraphNode& dq, int64_t per, int64_t axis, int64_t rank, sdk::Tensor& scale,
               sdk::Tensor& zp) {
  if (!dq.valid() || !standard_op(dq, "DequantizeLinear") || dq.num_inputs() < 2 || dq.num_outputs() != 1 ||
      dq.attr_int("block_size", 0) != 0)
    return false;
  const int64_t out = dq.attr_int("output_dtype", 0);
  if (out != 0 && out != SINGA_ONNX_FLOAT) return false;
  scale = g.constant(dq.input_name(1));
  if (!scale.present() || scale.dtype() != SINGA_ONNX_FLOAT || scale.ndim() > 1) return false;
  if (scale.numel() != 1) {
    int64_t a = dq.attr_int("axis", 1);
    if (a < 0) a += rank;
    if (per <= 1 || scale.numel() != per || scale.ndim() != 1 || a != axis) return false;
  }
  const bool has_zp = dq.num_inputs() > 2 && !dq.input_name(2).empty();
  zp = has_zp ? g.constant(dq.input_name(2)) : sdk::Tensor();
  return !has_zp || (zp.present() && zp.numel() == scale.numel());
}

// W [M, K] as integers q (K per output channel) and a scale per channel.
struct IntWeights {
  std::vector<int64_t> shape;
  std::vector<int32_t> q;
  std::vector<float> scale;
};

bool weights_from_dq(const Graph& g, const GraphNode& dq, IntWeights& w) {
  const sdk::Tensor b = g.constant(dq.input_name(0));
  if (!b.present() || !eight_bit(b.dtype()) || b.ndim() != 4 || b.dim(0) == 0) return false;
  const int64_t M = b.dim(0), K = b.numel() / M;
  sdk::Tensor scale, zp;
  if (!dq_params(g, dq, M, 0, 4, scale, zp) || (zp.present() && zp.dtype() != b.dtype())) return false;
  w.shape = b.shape();
  w.q.resize(size_t(b.numel()));
  w.scale.resize(size_t(M));
  for (int64_t m = 0; m < M; ++m) {
    const float s = scale.data<float>()[scale.numel() == 1 ? 0 : m];
    if (!(s > 0.f) || !std::isfinite(s)) return false;
    w.scale[size_t(m)] = s;
    const int64_t z = zp.present() ? zp.int_at(zp.numel() == 1 ? 0 : m) : 0;
    for (int64_t k = 0; k < K; ++k) w.q[size_t(m * K + k)] = int32_t(b.int_at(m * K + k) - z);
  }
  return true;
}

// Whether w[k] == float(q[k] * s) for integers |q[k]| <= 255 (filled in).
bool on_lattice(const float* w, int64_t K, float s, int32_t* q) {
  if (!std::isnormal(s)) return false;
  for (int64_t k = 0; k < K; ++k) {
    const float r = std::nearbyint(w[k] / s);
    if (!(std::fabs(r) <= 255.f) || r * s != w[k]) return false;
    q[k] = int32_t(r);
  }
  return true;
}

// One output channel's K float weights as integer multiples of one scale.
// The smallest nonzero magnitude is d steps of the original scale for some
// d; least / d is that scale up to rounding, so it and its float neighbours
// are tried, each element having to reproduce exactly.
bool channel_lattice(const float* w, int64_t K, int32_t* q, float& scale) {
  float least = 0.f;
  for (int64_t k = 0; k < K; ++k) {
    const float v = std::fabs(w[k]);
    if (!std::isfinite(v)) return false;
    if (v > 0.f && (least == 0.f || v < least)) least = v;
  }
  if (least == 0.f) {
    scale = 1.f;
    std::fill(q, q + K, 0);
    return true;
  }
  for (int d = 1; d <= 255; ++d) {
    const float base = least / float(d);
    float lo = base, hi = base;
    for (int step = 0; step <= 2; ++step) {
      if (step > 0) lo = std::nextafter(lo, 0.f), hi = std::nextafter(hi, 2.f * hi);
      for (float s : {lo, hi}) {
        if (on_lattice(w, K, s, q)) {
          scale = s;
          return true;
        }
        if (step == 0) break;  // lo == hi
      }
    }
  }
  return false;
}

bool weights_from_float(const sdk::Tensor& b, IntWeights& w) {
  if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 4 || b.numel() == 0) return false;
  const int64_t M = b.dim(0), K = b.numel() / M;
  w.shape = b.shape();
  w.q.resize(size_t(b.numel()));
  w.scale.resize(size_t(M));
  for (int64_t m = 0; m < M; ++m)
    if (!channel_lattice(b.data<float>() + m * K, K, w.q.data() + m * K, w.scale[size_t(m)])) return false;
  return true;
}

DLTensor dl(void* data, std::vector<int64_t>& shape, DLDataType type) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape.size());
  t.dtype = type;
  t.shape = shape.data();
  return t;
}

// Stores W as s8 with a zero point per output channel that brings its range
// into [-128, 127] (0 where it already fits, so oneDNN needs no offsets) and
// adds W, its scales and zero points as constants. False when a channel
// spans more than 256 values.
bool add_weights(Graph& g, const std::string& hint, const IntWeights& w, std::vector<std::string>& names) {
  const int64_t M = w.shape[0], K = int64_t(w.q.size()) / M;
  std::vector<int8_t> stored(w.q.size()), zp(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const auto [lo, hi] = std::minmax_element(w.q.begin() + m * K, w.q.begin() + (m + 1) * K);
    const int32_t z = *hi > 127 ? 127 - *hi : (*lo < -128 ? -128 - *lo : 0);
    if (*lo + z < -128 || *hi + z > 127) return false;
    zp[size_t(m)] = int8_t(z);  // stored = q + z, so q = stored - zp
    for (int64_t k = 0; k < K; ++k) stored[size_t(m * K + k)] = int8_t(w.q[size_t(m * K + k)] + z);
  }
  std::vector<int64_t> wshape = w.shape, n{M};
  std::vector<float> scale = w.scale;
  names.push_back(g.add_constant(hint + "_q8", dl(stored.data(), wshape, {kDLInt, 8, 1})));
  names.push_back(g.add_constant(hint + "_scale", dl(scale.data(), n, {kDLFloat, 32, 1})));
  const bool any = std::any_of(zp.begin(), zp.end(), [](int8_t v) { return v != 0; });
  names.push_back(any ? g.add_constant(hint + "_zp", dl(zp.data(), n, {kDLInt, 8, 1})) : std::string());
  return true;
}

// The activation side: DequantizeLinear of an 8-bit value with constant
// scalar scale and zero point.
bool activation_dq(const Graph& g, const GraphNode& dq) {
  sdk::Tensor scale, zp;
  singa_value_info x;
  if (!dq_params(g, dq, 1, 0, 0, scale, zp) || !g.value_info(dq.input_name(0), x) || !eight_bit(x.onnx_dtype))
    return false;
  const float s = scale.data<float>()[0];
  return s > 0.f && std::isfinite(s) && (!zp.present() || zp.dtype() == x.onnx_dtype);
}

// A QuantizeLinear to u8 or s8 with a constant scalar scale and zero point.
bool output_q(const Graph& g, const GraphNode& q) {
  if (!q.valid() || !standard_op(q, "QuantizeLinear") || q.num_inputs() < 2 || q.num_outputs() != 1 ||
      q.output_name(0).empty() || q.attr_int("block_size", 0) != 0)
    return false;
  const sdk::Tensor scale = g.constant(q.input_name(1));
  if (!scale.present() || scale.dtype() != SINGA_ONNX_FLOAT || scale.numel() != 1 || scale.ndim() > 1) return false;
  const float s = scale.data<float>()[0];
  if (!(s > 0.f) || !std::isfinite(s)) return false;
  const int64_t out = q.attr_int("output_dtype", 0);
  if (q.num_inputs() < 3 || q.input_name(2).empty()) return out == 0 || out == SINGA_ONNX_UINT8;
  const sdk::Tensor zp = g.constant(q.input_name(2));
  return zp.present() && zp.numel() == 1 && zp.ndim() <= 1 && eight_bit(zp.dtype()) && (out == 0 || out == zp.dtype());
}

bool fuse(Graph& g, GraphNode conv, bool quantize_output) {
  if (!standard_op(conv, "Conv") || conv.num_inputs() < 2 || conv.num_outputs() != 1 || conv.output_name(0).empty())
    return false;
  GraphNode dqx = g.producer(conv.input_name(0));
  if (!activation_dq(g, dqx)) return false;
  // The weights: a (folded) float constant, or DequantizeLinear of an 8-bit one.
  IntWeights w;
  GraphNode dqw = g.producer(conv.input_name(1));
  const bool from_dq = dqw.valid() && weights_from_dq(g, dqw, w);
  if (!from_dq && !weights_from_float(g.constant(conv.input_name(1)), w)) return false;
  // An image stem (3 input channels): oneDNN's int8 code has no good
  // blocking for so few channels (ResNet-50's 7x7 stem took 5x longer than
  // in float), so it stays a float Conv.
  if (w.shape[1] < kMinChannels && conv.attr_int("group", 1) == 1) return false;
  const bool has_b = conv.num_inputs() > 2 && !conv.input_name(2).empty();
  if (has_b) {
    const sdk::Tensor b = g.constant(conv.input_name(2));
    if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.numel() != w.shape[0]) return false;
  }
  std::vector<std::string> wnames;
  if (!add_weights(g, conv.name().empty() ? conv.output_name(0) : conv.name(), w, wnames)) return false;

  NewNode f(kCpuDomain, "QdqConv");
  f.name = conv.name();
  f.opset = 1;
  const std::string xz = dqx.num_inputs() > 2 ? dqx.input_name(2) : std::string();
  f.inputs = {dqx.input_name(0), dqx.input_name(1), xz, wnames[0], wnames[1], wnames[2],
              has_b ? conv.input_name(2) : std::string()};
  while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
  f.attrs_from = conv.raw();
  std::vector<GraphNode> gone{conv};
  GraphNode relu = sole_reader(g, conv.output_name(0));
  if (relu.valid() && standard_op(relu, "Relu") && relu.num_outputs() == 1 && !relu.output_name(0).empty()) {
    f.attrs.push_back(sdk::Attr("activation", "Relu"));
    f.outputs = {relu.output_name(0)};
    gone.push_back(relu);
  } else {
    f.outputs = {conv.output_name(0)};
  }
  GraphNode q = sole_reader(g, f.outputs[0]);
  if (quantize_output && output_q(g, q)) {
    while (f.inputs.size() < 7) f.inputs.push_back(std::string());
    f.inputs.push_back(q.input_name(1));
    if (q.num_inputs() > 2 && !q.input_name(2).empty()) f.inputs.push_back(q.input_name(2));
    f.outputs = {q.output_name(0)};
    gone.push_back(q);
  }
  if (sole_reader(g, dqx.output_name(0)) == conv) gone.insert(gone.begin(), dqx);
  if (from_dq && sole_reader(g, dqw.output_name(0)) == conv) gone.insert(gone.begin(), dqw);
  g.replace(gone, {f});
  return true;
}

// The scalar scale and zero point inputs of DequantizeLinear `dq` (zero point "" when absent).
std::vector<std::string> dq_inputs(const GraphNode& dq) {
  return {dq.input_name(0), dq.input_name(1), dq.num_inputs() > 2 ? dq.input_name(2) : std::string()};
}

// Q(Act(DQ(x))) or Q(Act(DQ(a) + DQ(b))) ending at QuantizeLinear `q`.
bool fuse_elementwise(Graph& g, GraphNode q) {
  if (!output_q(g, q)) return false;
  GraphNode src = g.producer(q.input_name(0));
  if (!src.valid() || !(sole_reader(g, q.input_name(0)) == q)) return false;
  GraphNode relu(nullptr, g.raw());
  if (standard_op(src, "Relu") && src.num_outputs() == 1) {
    relu = src;
    src = g.producer(relu.input_name(0));
    if (!src.valid() || !(sole_reader(g, relu.input_name(0)) == relu)) return false;
  }
  const std::vector<std::string> yq{q.input_name(1), q.num_inputs() > 2 ? q.input_name(2) : std::string()};
  std::vector<GraphNode> gone;
  NewNode f(kCpuDomain, "");
  if (activation_dq(g, src)) {
    f.op_type = "QdqRequantize";
    f.inputs = dq_inputs(src);
    gone.push_back(src);
  } else if (standard_op(src, "Add") && src.num_inputs() == 2 && src.num_outputs() == 1) {
    GraphNode da = g.producer(src.input_name(0)), db = g.producer(src.input_name(1));
    if (!activation_dq(g, da) || !activation_dq(g, db)) return false;
    const std::vector<int64_t> sa = shape_of(g, src.input_name(0)), sb = shape_of(g, src.input_name(1));
    if (sa.empty() || sa != sb || std::any_of(sa.begin(), sa.end(), [](int64_t d) { return d < 0; })) return false;
    f.op_type = "QdqAdd";
    f.inputs = dq_inputs(da);
    for (const std::string& v : dq_inputs(db)) f.inputs.push_back(v);
    for (GraphNode d : {da, db})
      if (sole_reader(g, d.output_name(0)) == src) gone.push_back(d);
    gone.push_back(src);
  } else {
    return false;
  }
  f.inputs.insert(f.inputs.end(), yq.begin(), yq.end());
  while (f.inputs.back().empty()) f.inputs.pop_back();
  f.name = q.name();
  f.opset = 1;
  f.outputs = {q.output_name(0)};
  if (relu.valid()) {
    f.attrs.push_back(sdk::Attr("activation", "Relu"));
    gone.push_back(relu);
  }
  gone.push_back(q);
  if (!g.has_kernel(kCpuDomain, f.op_type, 1)) return false;
  g.replace(gone, {f});
  return true;
}

// A QdqConv whose output oneDNN writes itself: no weight zero point input
// (add_weights leaves it out when every channel fits int8 as it is).
bool direct_qdq_conv(const GraphNode& n) {
  return cpu_op(n, "QdqConv") && (n.num_inputs() <= 5 || n.input_name(5).empty());
}

// The inputs of an 8-bit node that carry data (not scales or zero points).
std::vector<size_t> data_inputs(const GraphNode& n) {
  if (cpu_op(n, "QdqAdd")) return {0, 3};
  if (cpu_op(n, "QdqRequantize") || direct_qdq_conv(n)) return {0};
  return {};
}

// Act(DequantizeLinear(a) + b) with b float of the same known shape: DqAdd.
bool fuse_dq_add(Graph& g, GraphNode add) {
  if (!standard_op(add, "Add") || add.num_inputs() != 2 || add.num_outputs() != 1 || add.output_name(0).empty() ||
      add.input_name(0) == add.input_name(1))
    return false;
  for (size_t k : {0, 1}) {
    GraphNode dq = g.producer(add.input_name(k));
    const std::string b = add.input_name(1 - k);
    if (!activation_dq(g, dq) || !(sole_reader(g, dq.output_name(0)) == add) || !float_value(g, b)) continue;
    const std::vector<int64_t> sa = shape_of(g, add.input_name(k)), sb = shape_of(g, b);
    if (sa.empty() || sa != sb || std::any_of(sa.begin(), sa.end(), [](int64_t d) { return d < 0; })) continue;
    NewNode f(kCpuDomain, "DqAdd");
    f.name = add.name();
    f.opset = 1;
    f.inputs = dq_inputs(dq);
    f.inputs.push_back(b);
    f.outputs = {add.output_name(0)};
    std::vector<GraphNode> gone{dq, add};
    GraphNode relu = sole_reader(g, add.output_name(0));
    if (relu.valid() && standard_op(relu, "Relu") && relu.num_outputs() == 1 && !relu.output_name(0).empty()) {
      f.attrs.push_back(sdk::Attr("activation", "Relu"));
      f.outputs = {relu.output_name(0)};
      gone.push_back(relu);
    }
    if (!g.has_kernel(kCpuDomain, "DqAdd", 1)) return false;
    g.replace(gone, {f});
    return true;
  }
  return false;
}

}  // namespace

int use_qdq_channels_last(Graph& g) {
  const std::vector<GraphNode> nodes = g.nodes();
  std::map<std::string, bool> last;
  auto is_last = [&](const std::string& v) {
    auto it = last.find(v);
    return it != last.end() && it->second;
  };
  for (const GraphNode& n : nodes) {
    if (!n.alive() || data_inputs(n).empty() || n.num_outputs() != 1 || n.output_name(0).empty()) continue;
    const std::string y = n.output_name(0);
    const auto readers = g.consumers(y);
    bool ok = !g.is_output(y) && !readers.empty() && known_4d(g, y);
    for (const GraphNode& r : readers) {
      const std::vector<size_t> d = data_inputs(r);
      ok = ok && !d.empty();
      for (size_t k = 0; k < r.num_inputs() && ok; ++k)
        ok = r.input_name(k) != y || std::find(d.begin(), d.end(), k) != d.end();
    }
    last[y] = ok;
  }
  // The elementwise nodes keep one layout from inputs to output, to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (const GraphNode& n : nodes) {
      if (!n.alive() || !(cpu_op(n, "QdqAdd") || cpu_op(n, "QdqRequantize"))) continue;
      bool all = is_last(n.output_name(0));
      for (size_t k : data_inputs(n)) all = all && is_last(n.input_name(k));
      if (all) continue;
      for (const std::string& v : {n.output_name(0), n.input_name(0), n.input_name(cpu_op(n, "QdqAdd") ? 3 : 0)})
        if (is_last(v)) last[v] = false, changed = true;
    }
  }
  int marked = 0;
  for (const auto& [v, on] : last)
    if (on) {
      g.set_layout(v, kChannelsLastLayout);
      ++marked;
    }
  return marked;
}

int fuse_qdq_elementwise(Graph& g) {
  int fused = 0;
  for (GraphNode n : g.nodes())
    if (n.alive() && standard_op(n, "QuantizeLinear") && fuse_elementwise(g, n)) ++fused;
  // The residual sums left in float.
  for (GraphNode n : g.nodes())
    if (n.alive() && fuse_dq_add(g, n)) ++fused;
  return fused;
}

int fuse_qdq_convs(Graph& g) {
  if (!dnnl_int8_exact() || g.option("cpu.int8_dnnl", "1") == "0" || !g.has_kernel(kCpuDomain, "QdqConv", 1))
    return 0;
  // cpu.qdq_conv_quantize=0 leaves a following QuantizeLinear out of the fusion.
  const bool quantize_output = g.option("cpu.qdq_conv_quantize", "1") != "0";
  int fused = 0;
  std::set<const singa_node*> dqs;  // activation DequantizeLinears some fused Conv read
  for (GraphNode n : g.nodes()) {
    if (!n.alive()) continue;
    GraphNode dq = standard_op(n, "Conv") && n.num_inputs() > 0 ? g.producer(n.input_name(0)) : GraphNode(nullptr, g.raw());
    if (fuse(g, n, quantize_output)) {
      ++fused;
      if (dq.valid() && dq.alive()) dqs.insert(dq.raw());
    }
  }
  // A DequantizeLinear that fed only fused Convs (more than one) reads on for nothing.
  for (GraphNode n : g.nodes()) {
    if (!n.alive() || !dqs.count(n.raw())) continue;
    if (g.consumers(n.output_name(0)).empty() && !g.is_output(n.output_name(0))) g.replace({n}, {});
  }
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
