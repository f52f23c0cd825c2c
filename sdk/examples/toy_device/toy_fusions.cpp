// toy_fusions.cpp - the toy device's graph pass: which node groups it claims
// and what it rewrites them into.
//
// The pass sees the graph after the core's device-neutral passes, so a
// MatMul followed by an Add of a constant bias arrives as one Gemm: claiming
// Gemm -> Relu covers the MatMul + Add + Relu of a dense layer.
#include "toy_fusions.hpp"

#include "toy_kernels.hpp"

#include <string>

namespace toy {

namespace {

using singa::sdk::Graph;
using singa::sdk::GraphNode;
using singa::sdk::Shape;

bool standard(const GraphNode& n, const char* op) {
  const std::string d = n.domain();
  return (d.empty() || d == "ai.onnx") && n.op_type() == op;
}

// The float32 shape of `value` when the prepare knows all of it.
bool static_float_shape(const Graph& g, const std::string& value, Shape& out) {
  singa_value_info v;
  if (value.empty() || !g.value_info(value, v) || v.onnx_dtype != SINGA_ONNX_FLOAT || v.ndim < 0) return false;
  out.assign(v.dims, v.dims + v.ndim);
  for (int64_t d : out)
    if (d < 0) return false;
  return true;
}

// The Relu that is the only reader of `producer`'s single output, when that
// output is not also read from outside the graph; invalid otherwise. The
// intermediate value disappears in the fused op, so nobody else may need it.
GraphNode sole_relu(const Graph& g, const GraphNode& producer) {
  GraphNode none(nullptr, g.raw());
  if (producer.num_outputs() != 1) return none;
  const std::string y = producer.output_name(0);
  if (y.empty() || g.is_output(y)) return none;
  const auto readers = g.consumers(y);
  if (readers.size() != 1 || !standard(readers[0], "Relu")) return none;
  return readers[0];
}

// Gemm -> Relu, when the toy's GemmRelu kernel takes the Gemm as it is.
bool claim_gemm_relu(Graph& g, const GraphNode& gemm) {
  if (!standard(gemm, "Gemm") || gemm.opset() < 7) return false;  // Gemm-6 has a `broadcast` switch
  GraphNode relu = sole_relu(g, gemm);
  if (!relu.valid()) return false;
  Shape a, b, c;
  if (!static_float_shape(g, gemm.input_name(0), a) || !static_float_shape(g, gemm.input_name(1), b)) return false;
  if (!dense_declines(a, b).empty()) return false;
  if (gemm.num_inputs() > 2 && !gemm.input_name(2).empty() && !static_float_shape(g, gemm.input_name(2), c)) return false;
  singa::sdk::NewNode fused(kDomain, "GemmRelu");
  fused.inputs = gemm.input_names();
  fused.outputs = {relu.output_name(0)};
  fused.attrs_from = gemm.raw();  // alpha, beta, transA, transB carry over
  g.replace({gemm, relu}, {fused});
  return true;
}

// Add -> Relu, when the toy's AddRelu kernel takes the Add's shapes.
bool claim_add_relu(Graph& g, const GraphNode& add) {
  if (!standard(add, "Add") || add.num_inputs() != 2) return false;
  GraphNode relu = sole_relu(g, add);
  if (!relu.valid()) return false;
  Shape a, b;
  if (!static_float_shape(g, add.input_name(0), a) || !static_float_shape(g, add.input_name(1), b)) return false;
  if (!add_declines(a, b).empty()) return false;
  singa::sdk::NewNode fused(kDomain, "AddRelu");
  fused.inputs = add.input_names();
  fused.outputs = {relu.output_name(0)};
  g.replace({add, relu}, {fused});
  return true;
}

}  // namespace

int fuse(Graph& g) {
  int rewrites = 0;
  for (const GraphNode& n : g.nodes()) {
    // nodes() is a snapshot: a Relu folded into an earlier group is gone.
    if (!n.alive()) continue;
    if (claim_gemm_relu(g, n) || claim_add_relu(g, n)) ++rewrites;
  }
  return rewrites;
}

}  // namespace toy
