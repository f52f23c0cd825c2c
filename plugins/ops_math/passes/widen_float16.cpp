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
// kernels. First, a Cast of float32 to half read only by a reduction becomes
// a reduction of the float32 input with the same result (reduce_before_cast).
#include "matmul_passes.hpp"
#include "../math_common.hpp"

#include <value_dtype.hpp>

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

// Ops that only move elements: in half they move half as many bytes, and
// widening one whose input is not yet float32 would add a Cast of the whole
// input before it and one after it, so they too stay in half then.
bool moves_in_half(const std::string& op) {
  static const std::set<std::string> ops = {"Concat",  "DepthToSpace", "Expand",    "Flatten", "Gather",
                                            "Identity", "Reshape",     "Slice",     "SpaceToDepth", "Split",
                                            "Squeeze",  "Tile",        "Transpose", "Unsqueeze"};
  return ops.count(op) != 0;
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
    if (!n.output_name(k).empty() && value_dtype(g, n.output_name(k)) != SINGA_ONNX_FLOAT16) return false;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (n.input_name(i).empty() || own_type(n.op_type(), i)) continue;
    const int32_t t = value_dtype(g, n.input_name(i));
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

// The reductions that reduce_before_cast moves in front of a Cast to float16:
// ReduceMax / ReduceMin stay themselves (rounding to half is monotonic, so the
// largest rounded value is the rounded largest value; NaN stays NaN), the
// sums become the "ai.singa" CastHalfReduce* kernels of ops_reduce, which
// round each float32 element to half in registers and then sum exactly as
// the float16 kernel sums the Cast's output. "" for other ops.
std::string reduce_of_half(const std::string& op) {
  if (op == "ReduceMax" || op == "ReduceMin") return op;
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceSumSquare" || op == "ReduceL1" || op == "ReduceL2")
    return "CastHalfReduce" + op.substr(6);
  return "";
}

// Cast(float32 -> float16) read only by one reduction (reduce_of_half)
// becomes the reduction of the float32 input: neither the rounded input nor
// its half copy is written, only the (small) result. The results are those
// of the original graph; of a max/min of zeros, only the sign of the zero
// may differ (-0 and +0 compare equal, so which one a fold keeps is
// arbitrary in both forms).
int reduce_before_cast(sdk::Graph& g) {
  int moved = 0;
  for (sdk::GraphNode c : g.nodes()) {
    if (!c.alive() || !standard_op(c, "Cast") || c.num_inputs() != 1 || c.num_outputs() != 1) continue;
    const std::string in = c.input_name(0), mid = c.output_name(0);
    if (c.attr_int("to", 0) != SINGA_ONNX_FLOAT16 || value_dtype(g, in) != SINGA_ONNX_FLOAT || g.is_output(mid)) continue;
    const std::vector<sdk::GraphNode> readers = g.consumers(mid);
    if (readers.size() != 1) continue;
    const sdk::GraphNode r = readers[0];
    const std::string op = r.op_type(), to = reduce_of_half(op);
    if (to.empty() || !standard_op(r, op.c_str()) || r.num_outputs() != 1 || r.input_name(0) != mid ||
        value_dtype(g, r.output_name(0)) != SINGA_ONNX_FLOAT16)
      continue;
    const std::string out = r.output_name(0);
    if (to == op) {
      if (!g.has_kernel("", op, r.opset(), "cpu") || (r.num_inputs() > 1 && r.input_name(1) == mid)) continue;
      sdk::NewNode f("", op);
      f.name = r.name();
      f.opset = r.opset();
      f.attrs_from = r.raw();
      f.inputs = r.input_names();
      f.inputs[0] = in;
      f.outputs = {out + "__reduced_f32"};
      g.replace({c, r}, {f, cast(out + "__reduced_f32", out, SINGA_ONNX_FLOAT16, out + "__reduced_to_f16")});
      ++moved;
      continue;
    }
    if (!g.has_kernel("ai.singa", to, 1, "cpu")) continue;
    // The kernel takes the attribute form: axes from input 1 (ReduceSum from
    // opset 13, the others from 18) must be a constant.
    const bool axes_input = r.opset() >= (op == "ReduceSum" ? 13 : 18);
    std::vector<int64_t> axes = r.attr_ints("axes");
    if (axes_input) {
      axes.clear();
      if (r.num_inputs() > 1 && !r.input_name(1).empty()) {
        const sdk::Tensor a = g.constant(r.input_name(1));
        if (!a.present() || a.dtype() != SINGA_ONNX_INT64) continue;
        axes = a.to_int_vector();
      }
      if (axes.empty() && r.attr_int("noop_with_empty_axes", 0) != 0) continue;
    }
    sdk::NewNode f("ai.singa", to);
    f.name = r.name();
    f.opset = 1;
    f.inputs = {in};
    f.outputs = {out};
    f.attrs.push_back(sdk::Attr("keepdims", r.attr_int("keepdims", 1)));
    if (!axes.empty()) f.attrs.push_back(sdk::Attr("axes", axes));
    g.replace({c, r}, {f});
    ++moved;
  }
  return moved;
}

}  // namespace

int widen_float16(sdk::Graph& g) {
  if (!g.has_kernel("", "Cast", 13, "cpu")) return 0;
  const int moved = reduce_before_cast(g);
  std::map<std::string, std::string> wide;  // float16 value -> its float32 twin
  std::set<std::string> back;               // half values now written by a Cast back from their twin
  int widened = 0;
  for (sdk::GraphNode n : g.nodes()) {
    if (!n.alive() || !wants_widening(g, n)) continue;
    if (reduces_in_half(n.op_type()) && !wide.count(n.input_name(0)) && !g.constant(n.input_name(0)).present()) continue;
    if (stays_in_half(n, wide)) continue;
    if (moves_in_half(n.op_type())) {
      bool any_wide = false;
      for (const std::string& in : n.input_names())
        any_wide |= !in.empty() && value_dtype(g, in) == SINGA_ONNX_FLOAT16 && (wide.count(in) || g.constant(in).present());
      if (!any_wide) continue;
    }
    std::vector<sdk::NewNode> with;
    sdk::NewNode f("", n.op_type());
    f.name = n.name();
    f.opset = n.opset();
    f.attrs_from = n.raw();
    f.inputs = n.input_names();
    for (std::string& in : f.inputs) {
      if (in.empty() || value_dtype(g, in) != SINGA_ONNX_FLOAT16) continue;
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
  return widened + moved;
}

}  // namespace math
}  // namespace ops
}  // namespace singa
