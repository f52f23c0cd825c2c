// Runs float16 graphs (what float16 converters write: every weight and
// activation in half precision) in float32 on the CPU, as ONNX Runtime's CPU
// provider does: x86 has no half arithmetic, so each half kernel widened its
// inputs and narrowed its outputs on every node of every run. Here the
// weights are widened once, at prepare, and a connected region of half nodes
// becomes float32 nodes with one Cast where a half value enters the region
// (a graph input, a node left in half) and one where a value leaves it (a
// graph output, a reader left in half). Results are the float32 computation's
// rounded once at the region's edge, so they are at least as close to exact as
// the node-by-node half ones; `pass.cpu.float16_as_float32=0` keeps the half
// kernels.
#include "matmul_passes.hpp"

#include <map>
#include <set>
#include <vector>

namespace singa {
namespace ops {
namespace math {
namespace {

// Ops whose every float input and output share one element type T, with no
// attribute naming an element type: running them in float32 changes nothing
// but the rounding. (Cast, CastLike, the Random* ops, ConstantOfShape, the
// quantization ops and the like are left alone.)
const std::set<std::string>& widenable() {
  static const std::set<std::string> ops = {
      "Abs", "Add", "AveragePool", "BatchNormalization", "Ceil", "Celu", "Clip", "Concat", "Conv",
      "ConvTranspose", "CumSum", "DepthToSpace", "Div", "Einsum", "Elu", "Erf", "Exp", "Expand", "Flatten", "Floor",
      "Gather", "Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "GroupNormalization", "Hardmax", "HardSigmoid",
      "HardSwish", "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax",
      "LpNormalization", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mish", "Mul", "Neg", "Pad", "Pow", "PRelu",
      "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
      "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize", "Round", "Selu",
      "Sigmoid", "Sign", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub",
      "Sum", "Tanh", "Tile", "Transpose", "Unsqueeze", "Upsample", "Where"};
  return ops;
}

// Reductions whose float16 kernels convert a block at a time and run on the
// float32 ones (ops_reduce/reduce.cpp). Widening one whose input is not yet
// float32 would add a Cast of the whole input for a small output, so they
// stay in half then.
bool reduces_in_half(const std::string& op) {
  static const std::set<std::string> ops = {"ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean",
                                            "ReduceMin", "ReduceSum", "ReduceSumSquare"};
  return ops.count(op) != 0;
}

int32_t dtype_of(const sdk::Graph& g, const std::string& v) {
  singa_value_info info;
  return !v.empty() && g.value_info(v, info) ? info.onnx_dtype : 0;
}

// Inputs whose type is not T: Resize's roi and scales, Upsample's scales,
// Pow's exponent. They may be float32 beside half data (and are widened when
// they are half).
bool own_type(const std::string& op, size_t i) {
  return (op == "Resize" && i >= 1) || (op == "Upsample" && i == 1) || (op == "Pow" && i == 1);
}

// A node to run in float32: a standard op of the list whose outputs are all
// float16 and whose other float inputs are too, and which the CPU runs.
bool wants_widening(const sdk::Graph& g, const sdk::GraphNode& n) {
  if (!n.valid() || !standard_op(n, n.op_type().c_str()) || !widenable().count(n.op_type())) return false;
  for (size_t k = 0; k < n.num_outputs(); ++k)
    if (!n.output_name(k).empty() && dtype_of(g, n.output_name(k)) != SINGA_ONNX_FLOAT16) return false;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (n.input_name(i).empty() || own_type(n.op_type(), i)) continue;
    const int32_t t = dtype_of(g, n.input_name(i));
    if (t == 0) return false;  // unknown: it might be half and stay unconverted
    if (t == SINGA_ONNX_FLOAT || t == SINGA_ONNX_DOUBLE || t == SINGA_ONNX_BFLOAT16)
      return false;  // mixed precision: the exporter meant it
  }
  return n.num_outputs() > 0 && g.has_kernel("", n.op_type(), n.opset(), "cpu");
}

// The float32 copy of a float16 constant.
std::string widened_constant(sdk::Graph& g, const std::string& name, const sdk::Tensor& c) {
  std::vector<float> wide(size_t(c.numel()));
  const sdk::half* p = c.data<sdk::half>();
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = float(p[i]);
  std::vector<int64_t> shape = c.shape();
  DLTensor t{};
  t.data = wide.data();
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  return g.add_constant(name + "_f32", t);
}

sdk::NewNode cast(const std::string& from, const std::string& to, int64_t dtype, const std::string& name) {
  sdk::NewNode c("", "Cast");
  c.name = name;
  c.opset = 13;
  c.inputs = {from};
  c.outputs = {to};
  c.attrs.push_back(sdk::Attr("to", dtype));
  return c;
}

}  // namespace

int widen_float16(sdk::Graph& g) {
  if (!g.has_kernel("", "Cast", 13, "cpu")) return 0;
  std::map<std::string, std::string> wide;  // float16 value -> its float32 twin
  std::set<std::string> back;               // half values now written by a Cast back from their twin
  int widened = 0;
  for (sdk::GraphNode n : g.nodes()) {
    if (!n.alive() || !wants_widening(g, n)) continue;
    if (reduces_in_half(n.op_type()) && !wide.count(n.input_name(0)) && !g.constant(n.input_name(0)).present()) continue;
    std::vector<sdk::NewNode> with;
    sdk::NewNode f("", n.op_type());
    f.name = n.name();
    f.opset = n.opset();
    f.attrs_from = n.raw();
    f.inputs = n.input_names();
    for (std::string& in : f.inputs) {
      if (in.empty() || dtype_of(g, in) != SINGA_ONNX_FLOAT16) continue;
      auto it = wide.find(in);
      if (it == wide.end()) {
        const sdk::Tensor c = g.constant(in);
        const std::string twin = c.present() ? widened_constant(g, in, c) : in + "__f32";
        if (!c.present()) with.push_back(cast(in, twin, SINGA_ONNX_FLOAT, in + "__to_f32"));
        it = wide.emplace(in, twin).first;
      }
      in = it->second;
    }
    for (const std::string& out : n.output_names()) {
      f.outputs.push_back(out.empty() ? "" : out + "__f32");
      if (!out.empty()) wide[out] = out + "__f32";
    }
    with.push_back(f);
    // Readers keep the half value until they are widened themselves; the
    // Casts back that nothing reads in the end are removed below.
    for (const std::string& out : n.output_names())
      if (!out.empty()) {
        with.push_back(cast(out + "__f32", out, SINGA_ONNX_FLOAT16, out + "__to_f16"));
        back.insert(out);
      }
    g.replace({n}, with);
    ++widened;
  }
  // The Casts back to half whose value nothing reads any more (every reader
  // now reads the float32 twin), unless the graph returns it.
  for (sdk::GraphNode n : g.nodes()) {
    if (!n.alive() || !standard_op(n, "Cast") || n.num_outputs() != 1) continue;
    const std::string out = n.output_name(0);
    if (!back.count(out) || g.is_output(out) || !g.consumers(out).empty()) continue;
    g.replace({n}, {});
  }
  return widened;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
