// The dynamic-quant Conv that onnxruntime's quantize_dynamic writes
// becomes one ai.singa.cpu QdqConv (quant_conv.cpp) writing float:
//
//   ConvInteger(x8, W8, zx?, zw?) -> Cast(float) -> Mul(., s) [-> Add(., B)] [-> Relu]
//
// x8 (usually DynamicQuantizeLinear's output) is u8 or s8 with a scalar
// zero point; W8 a 4-D u8 or s8 constant with a constant zero point per
// tensor or per output channel; s a float scalar known only at run time
// (the activation's scale times the weights'); B a constant of one value
// per output channel ([M, 1, 1] or [1, M, 1, 1]). QdqConv takes s as its
// x_scale and 1 as its w_scale, so it turns oneDNN's int32 sums into
// float(acc) * s + B [Relu] in one pass, bit for bit what the nodes compute
// (int8_dequant_tail.hpp), without the int32 and float tensors between.
// W8 - zw is stored as s8 (int8_weights.hpp) without a zero point wherever
// a channel fits, so oneDNN needs no offset for it.
#include "fuse_passes.hpp"
#include "qdq_match.hpp"

#include <int8_dequant_tail.hpp>
#include <int8_weights.hpp>

#include <vector>

namespace singa {
namespace nn {
namespace passes {
namespace {

// W8 - zw as integers per output channel, with scale 1.
bool weights_minus_zero_point(const sdk::Tensor& w, const sdk::Tensor& zw, int8::ChannelInts& out) {
  const int64_t M = w.dim(0), K = w.numel() / M;
  out.view = {M, K, K, 1};
  out.q.resize(size_t(w.numel()));
  out.scale.assign(size_t(M), 1.f);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t z = zw.present() ? zw.int_at(zw.numel() == 1 ? 0 : m) : 0;
    for (int64_t k = 0; k < K; ++k) out.q[size_t(m * K + k)] = int32_t(w.int_at(m * K + k) - z);
  }
  return true;
}

bool fuse(Graph& g, const GraphNode& ci) {
  if (!standard_op(ci, "ConvInteger") || ci.num_inputs() < 2 || ci.num_outputs() != 1) return false;
  const std::string x = ci.input_name(0);
  const std::string zx = ci.num_inputs() > 2 ? ci.input_name(2) : "", zw = ci.num_inputs() > 3 ? ci.input_name(3) : "";
  singa_value_info xi;
  if (!g.value_info(x, xi) || !eight_bit(xi.onnx_dtype) || xi.ndim != 4) return false;
  const sdk::Tensor w = g.constant(ci.input_name(1));
  if (!w.present() || !eight_bit(w.dtype()) || w.ndim() != 4 || w.dim(0) == 0 || w.numel() == 0) return false;
  const int64_t M = w.dim(0);
  if (!zx.empty() && !int8::scalar_value(g, zx, xi.onnx_dtype)) return false;
  sdk::Tensor zwt;
  if (!zw.empty()) {
    zwt = g.constant(zw);
    if (!zwt.present() || zwt.dtype() != w.dtype() || zwt.ndim() > 1 || (zwt.numel() != 1 && zwt.numel() != M))
      return false;
  }
  int8::DequantTail tail;
  if (!int8::match_dequant_tail(g, ci.output_name(0), 4, 1, M, true, tail)) return false;
  int8::ChannelInts ints;
  std::vector<std::string> wnames;
  const std::string hint = ci.name().empty() ? ci.output_name(0) : ci.name();
  if (!weights_minus_zero_point(w, zwt, ints) || !int8::add_s8_weights(g, hint, ints, w.shape(), false, wnames))
    return false;
  NewNode f(kCpuDomain, "QdqConv");
  f.name = ci.name();
  f.opset = 1;
  f.inputs = {x, tail.scale, zx, wnames[0], wnames[1], wnames[2], tail.bias};
  while (f.inputs.back().empty()) f.inputs.pop_back();
  f.attrs_from = ci.raw();
  if (tail.relu) f.attrs.push_back(sdk::Attr("activation", "Relu"));
  f.outputs = {tail.output};
  std::vector<GraphNode> gone{ci};
  gone.insert(gone.end(), tail.nodes.begin(), tail.nodes.end());
  g.replace(gone, {f});
  return true;
}

}  // namespace

int fuse_dynq_convs(Graph& g) {
  if (!g.has_kernel(kCpuDomain, "QdqConv", 1)) return 0;
  int fused = 0;
  for (GraphNode n : g.nodes())
    if (n.alive() && fuse(g, n)) ++fused;
  return fused;
}

}  // namespace passes
}  // namespace nn
}  // namespace singa
