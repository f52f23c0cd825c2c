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
// channel, any zero point; the host keeps it for passes at
// SINGA_PASS_PRIORITY_QUANTIZED and above) or, where a host or an exporter
// folded that DequantizeLinear, a float constant whose every output
// channel is exactly integer multiples of one scale (int8_lattice.hpp).
// B, when present, is a float constant; a Relu that alone reads the Conv is
// applied too, and then a QuantizeLinear (scalar constant scale and zero
// point) that alone reads the result, so the Conv writes 8-bit values. Any
// group count, stride, padding, dilation and kernel size of a 2-D Conv.
// Only on CPUs where oneDNN's int8 code accumulates exactly (VNNI or AMX):
// elsewhere the QdqConv kernel would take its slow exact path. The
// activation's DequantizeLinear goes when nothing else reads it.
//
// Runs first among the Conv passes, which would otherwise take the float
// Conv; fuse_qdq_elementwise.cpp and qdq_channels_last.cpp follow.
#include "fuse_passes.hpp"
#include "qdq_match.hpp"

#include "../conv_integer_dnnl.hpp"

#include <int8_weights.hpp>

#include <set>
#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

// W [M, ...] as integers (K per output channel) and a scale per channel.
struct ConvWeights {
  std::vector<int64_t> shape;
  int8::ChannelInts ints;
};

int8::ChannelView by_output_channel(const std::vector<int64_t>& shape, int64_t numel) {
  const int64_t M = shape[0], K = numel / M;
  return {M, K, K, 1};
}

bool weights_from_dq(const Graph& g, const GraphNode& dq, ConvWeights& w) {
  const sdk::Tensor b = g.constant(dq.input_name(0));
  if (!b.present() || !eight_bit(b.dtype()) || b.ndim() != 4 || b.dim(0) == 0) return false;
  const int64_t M = b.dim(0), K = b.numel() / M;
  sdk::Tensor scale, zp;
  if (!dq_params(g, dq, M, 0, 4, scale, zp) || (zp.present() && zp.dtype() != b.dtype())) return false;
  w.shape = b.shape();
  w.ints.view = by_output_channel(w.shape, b.numel());
  w.ints.q.resize(size_t(b.numel()));
  w.ints.scale.resize(size_t(M));
  int8::widen_8bit(b, w.ints.q.data());
  for (int64_t m = 0; m < M; ++m) {
    const float s = scale.data<float>()[scale.numel() == 1 ? 0 : m];
    if (!(s > 0.f) || !std::isfinite(s)) return false;
    w.ints.scale[size_t(m)] = s;
    const int32_t z = zp.present() ? int32_t(zp.int_at(zp.numel() == 1 ? 0 : m)) : 0;
    int32_t* q = w.ints.q.data() + m * K;
    if (z != 0)
      for (int64_t k = 0; k < K; ++k) q[k] -= z;
  }
  return true;
}

// The usual QDQ weights, s8 with no zero point or an all-zero one: the
// QdqConv reads the DequantizeLinear's constants as they are (names gets
// {values, scale, ""}), with no copy to recover and store.
bool direct_s8_weights(const Graph& g, const GraphNode& dq, std::vector<std::string>& names) {
  const sdk::Tensor b = g.constant(dq.input_name(0));
  if (!b.present() || b.dtype() != SINGA_ONNX_INT8 || b.ndim() != 4 || b.dim(0) == 0) return false;
  const int64_t M = b.dim(0);
  sdk::Tensor scale, zp;
  if (!dq_params(g, dq, M, 0, 4, scale, zp) || (zp.present() && zp.dtype() != b.dtype())) return false;
  for (int64_t i = 0; i < scale.numel(); ++i) {
    const float s = scale.data<float>()[i];
    if (!(s > 0.f) || !std::isfinite(s)) return false;
  }
  for (int64_t i = 0; zp.present() && i < zp.numel(); ++i)
    if (zp.data<int8_t>()[i] != 0) return false;
  names = {dq.input_name(0), dq.input_name(1), std::string()};
  return true;
}

bool weights_from_float(const sdk::Tensor& b, ConvWeights& w) {
  if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 4 || b.numel() == 0) return false;
  w.shape = b.shape();
  return int8::lattice_from_float(b.data<float>(), by_output_channel(w.shape, b.numel()), w.ints);
}

bool fuse(Graph& g, GraphNode conv, bool quantize_output) {
  if (!standard_op(conv, "Conv") || conv.num_inputs() < 2 || conv.num_outputs() != 1 || conv.output_name(0).empty())
    return false;
  GraphNode dqx = g.producer(conv.input_name(0));
  if (!activation_dq(g, dqx)) return false;
  // The weights: DequantizeLinear of an 8-bit constant, or a (folded) float one.
  ConvWeights w;
  std::vector<std::string> wnames;
  GraphNode dqw = g.producer(conv.input_name(1));
  const bool direct = dqw.valid() && direct_s8_weights(g, dqw, wnames);
  if (direct) w.shape = g.constant(dqw.input_name(0)).shape();
  const bool from_dq = direct || (dqw.valid() && weights_from_dq(g, dqw, w));
  if (!from_dq && !weights_from_float(g.constant(conv.input_name(1)), w)) return false;
  const bool has_b = conv.num_inputs() > 2 && !conv.input_name(2).empty();
  if (has_b) {
    const sdk::Tensor b = g.constant(conv.input_name(2));
    if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.numel() != w.shape[0]) return false;
  }
  // No zero point input when every channel fits s8 as it is: oneDNN then
  // writes the output itself (see qdq_channels_last.cpp).
  const std::string hint = conv.name().empty() ? conv.output_name(0) : conv.name();
  if (!direct && !int8::add_s8_weights(g, hint, w.ints, w.shape, false, wnames)) return false;

  NewNode f(kCpuDomain, "QdqConv");
  f.name = conv.name();
  f.opset = 1;
  const std::string xz = dqx.num_inputs() > 2 ? dqx.input_name(2) : std::string();
  f.inputs = {dqx.input_name(0), dqx.input_name(1), xz, wnames[0], wnames[1], wnames[2],
              has_b ? conv.input_name(2) : std::string()};
  while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
  f.attrs_from = conv.raw();
  std::vector<GraphNode> gone{conv};
  GraphNode relu = sole_relu(g, conv.output_name(0));
  if (relu.valid()) {
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

}  // namespace

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
