// A MatMul (or Gemm) between a DequantizeLinear'd int8 activation and int8
// weights becomes one ai.singa.cpu QDQMatMul (qmatmul.hpp), which multiplies
// the 8-bit values on the VNNI kernel instead of dequantizing both sides to
// float first:
//
//   DequantizeLinear(A8, sa, za) -> MatMul <- B     [-> Add(., bias[N])]
//
// A8 is u8 or s8 of any rank with a scalar scale and zero point. B is 2-D
// and either DequantizeLinear of an 8-bit constant (per tensor, or per column:
// axis 1) (the host keeps it for passes at SINGA_PASS_PRIORITY_QUANTIZED and
// above) or, where a host or an exporter folded it already, a float constant
// whose columns are exactly integer
// multiples of one scale each (int8_lattice.hpp: checked element by
// element, so the int8 copy loses nothing; a float model's weights almost
// never pass). A Gemm (alpha 1, beta 1, transA 0, C a row of N) is matched
// the same way; its C and a MatMul's following Add of a constant row become
// the bias; a
// QuantizeLinear (scalar, u8 or s8) that alone reads the result moves into
// the node too, which then writes 8 bits; a DequantizeLinear with the same
// scale and zero point that alone reads those (and a bias row Add after it)
// moves in as well, and the node writes that float. The activation's
// DequantizeLinear goes when no other node reads it.
//
// Runs before the float MatMul passes (cpu.matmul_bias_rows would take the
// Add), so they see only the products left in float.
#include "matmul_passes.hpp"

#include "../qmatmul.hpp"

#include <cpu_domain.hpp>
#include <int8_weights.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace singa {
namespace ops {
namespace math {
namespace {

bool eight_bit(int32_t t) { return t == SINGA_ONNX_UINT8 || t == SINGA_ONNX_INT8; }

// B [K, N] as integers times a scale per column (int8_lattice.hpp).
struct IntWeights {
  int64_t K = 0, N = 0;
  int8::ChannelInts ints;
};

int8::ChannelView by_column(int64_t K, int64_t N) { return {N, K, 1, N}; }

// The scale and zero point inputs of DequantizeLinear `dq` when both are
// constants of `count` values (1, or also `per` when per > 1) and the node
// has no block size. zp is empty when absent.
bool dq_params(const sdk::Graph& g, const sdk::GraphNode& dq, int64_t per, sdk::Tensor& scale, sdk::Tensor& zp) {
  if (!standard_op(dq, "DequantizeLinear") || dq.num_inputs() < 2 || dq.num_outputs() != 1 ||
      dq.attr_int("block_size", 0) != 0)
    return false;
  scale = g.constant(dq.input_name(1));
  if (!scale.present() || scale.dtype() != SINGA_ONNX_FLOAT || scale.ndim() > 1) return false;
  if (scale.numel() != 1 && (per <= 1 || scale.numel() != per)) return false;
  zp = dq.num_inputs() > 2 && !dq.input_name(2).empty() ? g.constant(dq.input_name(2)) : sdk::Tensor();
  if (dq.num_inputs() > 2 && !dq.input_name(2).empty() && (!zp.present() || zp.shape() != scale.shape()))
    return false;
  return true;
}

// B [K, N] (stored [N, K] when trans) from DequantizeLinear of an 8-bit constant.
bool weights_from_dq(const sdk::Graph& g, const sdk::GraphNode& dq, bool trans, IntWeights& w) {
  if (!dq.valid()) return false;
  const sdk::Tensor b = g.constant(dq.input_name(0));
  if (!b.present() || !eight_bit(b.dtype()) || b.ndim() != 2) return false;
  const int64_t K = b.dim(trans ? 1 : 0), N = b.dim(trans ? 0 : 1);
  sdk::Tensor scale, zp;
  if (!dq_params(g, dq, N, scale, zp)) return false;
  if (scale.numel() > 1) {
    int64_t axis = dq.attr_int("axis", 1);
    if (axis < 0) axis += 2;
    if (axis != (trans ? 0 : 1)) return false;
  }
  if (zp.present() && zp.dtype() != b.dtype()) return false;
  w.K = K, w.N = N;
  w.ints.view = by_column(K, N);
  w.ints.q.resize(size_t(K * N));
  w.ints.scale.resize(size_t(N));
  std::vector<int32_t> z(size_t(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    w.ints.scale[size_t(n)] = scale.data<float>()[scale.numel() == 1 ? 0 : n];
    if (zp.present()) z[size_t(n)] = int32_t(zp.int_at(zp.numel() == 1 ? 0 : n));
  }
  std::vector<int32_t> stored;
  int32_t* q = w.ints.q.data();
  if (trans) stored.resize(size_t(K * N));
  int8::widen_8bit(b, trans ? stored.data() : q);
  for (int64_t k = 0; k < K; ++k) {
    int32_t* row = q + k * N;
    if (trans)
      for (int64_t n = 0; n < N; ++n) row[n] = stored[size_t(n * K + k)] - z[size_t(n)];
    else
      for (int64_t n = 0; n < N; ++n) row[n] -= z[size_t(n)];
  }
  return true;
}

// B [K, N] (stored [N, K] when trans) from a folded float constant.
bool weights_from_float(const sdk::Tensor& b, bool trans, IntWeights& w) {
  if (!b.present() || b.dtype() != SINGA_ONNX_FLOAT || b.ndim() != 2) return false;
  const int64_t K = b.dim(trans ? 1 : 0), N = b.dim(trans ? 0 : 1);
  if (K == 0 || N == 0) return false;
  std::vector<float> t;
  const float* data = b.data<float>();
  if (trans) {  // to [K, N]
    t.resize(size_t(K * N));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) t[size_t(k * N + n)] = data[n * K + k];
    data = t.data();
  }
  w.K = K, w.N = N;
  return int8::lattice_from_float(data, by_column(K, N), w.ints);
}

// A constant float C of N values shaped [N] or [1, ..., 1, N] (rank <= rank).
bool bias_row(const sdk::Tensor& c, int64_t N, int64_t rank) {
  if (!c.present() || c.dtype() != SINGA_ONNX_FLOAT || c.numel() != N || c.ndim() < 1 || c.ndim() > rank) return false;
  return c.shape().back() == N;
}

// The activation side: DequantizeLinear of an 8-bit value with scalar scale
// and zero point (constants).
bool activation_dq(const sdk::Graph& g, const sdk::GraphNode& dq) {
  sdk::Tensor scale, zp;
  singa_value_info x;
  if (!dq.valid() || !dq_params(g, dq, 1, scale, zp) || !g.value_info(dq.input_name(0), x) || !eight_bit(x.onnx_dtype))
    return false;
  return !zp.present() || zp.dtype() == x.onnx_dtype;
}

// A QuantizeLinear to u8 or s8 with a scalar scale and zero point (constants).
bool output_q(const sdk::Graph& g, const sdk::GraphNode& q) {
  if (!standard_op(q, "QuantizeLinear") || q.num_inputs() != 3 || q.num_outputs() != 1 || q.output_name(0).empty() ||
      q.attr_int("block_size", 0) != 0 || q.has_attr("output_dtype"))
    return false;
  const sdk::Tensor s = g.constant(q.input_name(1)), z = g.constant(q.input_name(2));
  return s.present() && s.dtype() == SINGA_ONNX_FLOAT && s.numel() == 1 && z.present() && z.numel() == 1 &&
         eight_bit(z.dtype());
}

// A DequantizeLinear of `q`'s output alone with q's scale and zero point
// (equal constants): the pair is a fake quantization the node can finish in
// float.
bool same_dq(const sdk::Graph& g, const sdk::GraphNode& q, const sdk::GraphNode& dq) {
  sdk::Tensor scale, zp;
  if (!dq.valid() || !dq_params(g, dq, 1, scale, zp) || !zp.present() || dq.output_name(0).empty() ||
      dq.input_name(0) != q.output_name(0))
    return false;
  const sdk::Tensor qs = g.constant(q.input_name(1)), qz = g.constant(q.input_name(2));
  return scale.data<float>()[0] == qs.data<float>()[0] && zp.dtype() == qz.dtype() && zp.int_at(0) == qz.int_at(0);
}

int fuse(sdk::Graph& g, sdk::GraphNode mm) {
  const bool gemm = standard_op(mm, "Gemm");
  if (!gemm && (!standard_op(mm, "MatMul") || mm.num_inputs() != 2)) return 0;
  if (mm.num_outputs() != 1 || mm.output_name(0).empty() || mm.num_inputs() < 2) return 0;
  bool trans = false;
  if (gemm && (mm.attr_float("alpha", 1.f) != 1.f || mm.attr_int("transA", 0) != 0 ||
               (mm.num_inputs() > 2 && !mm.input_name(2).empty() && mm.attr_float("beta", 1.f) != 1.f)))
    return 0;
  if (gemm) trans = mm.attr_int("transB", 0) != 0;
  sdk::GraphNode dqa = g.producer(mm.input_name(0));
  if (!activation_dq(g, dqa)) return 0;
  singa_value_info ai;
  if (!g.value_info(dqa.input_name(0), ai) || ai.ndim < 1 || (gemm && ai.ndim != 2)) return 0;

  IntWeights w;
  sdk::GraphNode dqb = g.producer(mm.input_name(1));
  const bool from_dq = weights_from_dq(g, dqb, trans, w);
  if (!from_dq && !weights_from_float(g.constant(mm.input_name(1)), trans, w)) return 0;
  if (ai.dims[ai.ndim - 1] >= 0 && ai.dims[ai.ndim - 1] != w.K) return 0;

  std::vector<sdk::GraphNode> group{mm};
  std::string bias, out = mm.output_name(0);
  if (gemm && mm.num_inputs() > 2 && !mm.input_name(2).empty()) {
    if (!bias_row(g.constant(mm.input_name(2)), w.N, 2)) return 0;
    bias = mm.input_name(2);
  } else if (!gemm) {
    sdk::GraphNode add = sole_reader(g, out);
    if (standard_op(add, "Add") && add.num_inputs() == 2 && add.num_outputs() == 1 && !add.output_name(0).empty() &&
        add.input_name(0) != add.input_name(1)) {
      const std::string c = add.input_name(add.input_name(0) == out ? 1 : 0);
      if (bias_row(g.constant(c), w.N, std::max<int32_t>(ai.ndim, 1))) {
        bias = c;
        out = add.output_name(0);
        group.push_back(add);
      }
    }
  }
  // A QuantizeLinear that alone reads the product: the node writes 8 bits.
  std::string y_scale, y_zero;
  sdk::GraphNode q = sole_reader(g, out);
  std::string y_bias;
  bool dequantize = false;
  if (output_q(g, q)) {
    y_scale = q.input_name(1), y_zero = q.input_name(2);
    out = q.output_name(0);
    group.push_back(q);
    // Q -> DQ [-> Add(bias row)]: the node writes the dequantized float
    // (plus the bias) instead of 8 bits for a separate DequantizeLinear.
    sdk::GraphNode dq = sole_reader(g, out);  // none when out is a graph output
    if (same_dq(g, q, dq)) {
      dequantize = true;
      out = dq.output_name(0);
      group.push_back(dq);
      sdk::GraphNode add = sole_reader(g, out);
      if (standard_op(add, "Add") && add.num_inputs() == 2 && add.num_outputs() == 1 && !add.output_name(0).empty() &&
          add.input_name(0) != add.input_name(1)) {
        const std::string c = add.input_name(add.input_name(0) == out ? 1 : 0);
        if (bias_row(g.constant(c), w.N, std::max<int32_t>(ai.ndim, 1))) {
          y_bias = c;
          out = add.output_name(0);
          group.push_back(add);
        }
      }
    }
  }
  std::vector<std::string> b_names;
  if (!int8::add_s8_weights(g, mm.name().empty() ? out : mm.name(), w.ints, {w.K, w.N}, true, b_names)) return 0;
  if (from_dq && !g.is_output(dqb.output_name(0)) && g.consumers(dqb.output_name(0)).size() == 1) group.push_back(dqb);

  sdk::NewNode f(kCpuDomain, kQdqMatMulOp);
  f.name = mm.name();
  f.opset = 1;
  const std::string za = dqa.num_inputs() > 2 ? dqa.input_name(2) : "";
  f.inputs = {dqa.input_name(0), dqa.input_name(1), za, b_names[0], b_names[1], b_names[2], bias};
  if (!y_scale.empty()) f.inputs.insert(f.inputs.end(), {y_scale, y_zero});
  if (dequantize) {
    f.inputs.push_back(y_bias);
    f.attrs.push_back(sdk::Attr("dequantize_output", int64_t(1)));
  }
  f.outputs = {out};
  const std::string a_value = dqa.output_name(0);
  g.replace(group, {f});
  // The activation's DequantizeLinear, once nothing reads it.
  if (!g.is_output(a_value) && g.consumers(a_value).empty()) g.replace({dqa}, {});
  return 1;
}

}  // namespace

int fuse_qdq_matmuls(sdk::Graph& g) {
  int fused = 0;
  for (sdk::GraphNode n : g.nodes())
    if (n.alive()) fused += fuse(g, n);
  return fused;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
