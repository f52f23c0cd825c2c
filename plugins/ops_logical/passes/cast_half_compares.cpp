// cpu.cast_half_compares: a comparison of float16 values, one or both written
// by a Cast(float32 -> float16), becomes "ai.singa" CastHalfCompare of the
// Casts' float32 inputs (cast_half_compare.cpp rounds them to half in
// registers, so the results are the same bits). A Cast that only this
// comparison reads goes with it; one that others read stays for them.
#include "passes.hpp"

#include <value_dtype.hpp>

#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace logical {
namespace {

bool standard(const sdk::GraphNode& n) {
  const std::string d = n.domain();
  return d.empty() || d == "ai.onnx";
}

bool compare_op(const sdk::GraphNode& n) {
  const std::string op = n.op_type();
  return standard(n) && (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                         op == "GreaterOrEqual");
}

// The Cast(float32 -> float16) writing `v`, or an invalid node.
sdk::GraphNode cast_to_half(const sdk::Graph& g, const std::string& v) {
  sdk::GraphNode c = g.producer(v);
  if (!c.valid() || !standard(c) || c.op_type() != "Cast" || c.num_inputs() != 1 || c.num_outputs() != 1 ||
      c.attr_int("to", 0) != SINGA_ONNX_FLOAT16 || value_dtype(g, c.input_name(0)) != SINGA_ONNX_FLOAT)
    return sdk::GraphNode(nullptr, nullptr);
  return c;
}

}  // namespace

int fuse_cast_half_compares(sdk::Graph& g) {
  if (!g.has_kernel("ai.singa", "CastHalfCompare", 1, "cpu")) return 0;
  int fused = 0;
  for (sdk::GraphNode n : g.nodes()) {
    // Opset 7 on: numpy broadcasting, which the fused kernel implements.
    if (!n.alive() || !compare_op(n) || n.opset() < 7 || n.num_inputs() != 2 || n.num_outputs() != 1) continue;
    std::vector<std::string> ins = n.input_names();
    if (value_dtype(g, ins[0]) != SINGA_ONNX_FLOAT16 || value_dtype(g, ins[1]) != SINGA_ONNX_FLOAT16) continue;
    std::vector<sdk::GraphNode> gone{n};
    bool any = false;
    for (std::string& in : ins) {
      const sdk::GraphNode c = cast_to_half(g, in);
      if (!c.valid()) continue;
      const std::string half = in;
      in = c.input_name(0);
      any = true;
      bool listed = false;
      for (const sdk::GraphNode& x : gone) listed |= x == c;
      if (!listed && !g.is_output(half) && g.consumers(half).size() == 1) gone.push_back(c);
    }
    if (!any) continue;
    sdk::NewNode f("ai.singa", "CastHalfCompare");
    f.name = n.name();
    f.opset = 1;
    f.inputs = ins;
    f.outputs = {n.output_name(0)};
    f.attrs.push_back(sdk::Attr("op", n.op_type()));
    g.replace(gone, {f});
    ++fused;
  }
  return fused;
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
