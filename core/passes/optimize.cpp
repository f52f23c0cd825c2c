// The pass pipeline and optimized_model(), which shows its result as ONNX.
#include "graph_edit.hpp"
#include "passes.hpp"

#include <singa/optimize.hpp>

#include <cstdlib>

namespace singa {
namespace passes {

namespace {

// A layout pass's switch: the variable set to 0 turns it off (to time and
// check against).
bool switched_off(const char* name) {
  const char* v = std::getenv(name);
  return v && *v == '0';
}

}  // namespace

void optimize(graph::Graph& g, const PassOptions& o) {
  PassStats local;
  PassStats& s = o.stats ? *o.stats : local;
  relink(g);
  // Folding first turns exporter shape arithmetic into constants that the
  // fusions below need (Clip bounds, Reshape targets); dead nodes after it.
  // Folded shape arithmetic (a Reshape target, with symbolic dims bound) tells
  // inference what it could not know before, and that in turn lets the next
  // layer's shape arithmetic fold: one round per layer of a transformer at
  // most. The fusions and the memory plan below need the shapes.
  if (o.fold_constants) {
    for (int round = 0; round < 64; ++round) {
      const int folded = fold_constants(g, o, &s.folded_shapes);
      s.folded_constants += folded;
      const int refined = folded > 0 ? graph::refine_shapes(g) : 0;
      s.refined_shapes += refined;
      if (refined == 0) break;
    }
  }
  if (o.remove_dead) s.removed_dead += remove_dead_nodes(g);
  if (o.fuse_conv_bn) s.conv_bn += fuse_conv_batchnorm(g);
  if (o.fuse_matmul_add) s.matmul_add += fuse_matmul_add(g, o.device == "cpu");
  if (o.fuse_matmul_scales && o.device == "cpu") s.matmul_scales += fuse_matmul_scales(g);
  if (o.fuse_transposed_b && o.device == "cpu") s.transposed_b += fuse_transpose_matmuls(g);
  if (o.fuse_attention && o.device == "cpu") s.attentions += fuse_attention(g);
  if (o.fuse_activations && o.device == "cpu") s.activations += fuse_activations(g);
  if (o.fuse_layer_norm && o.device == "cpu") s.layer_norms += fuse_layer_norm(g);
  if (o.fuse_gelu && o.device == "cpu") s.gelus += fuse_gelu(g);
  if (o.fuse_matmul_epilogues && o.device == "cpu") s.matmul_epilogues += fuse_matmul_epilogues(g);
  if (o.fuse_inverted_residuals && o.device == "cpu") s.inverted_residuals += fuse_inverted_residuals(g);
  if (o.fuse_conv_pools && o.device == "cpu") s.conv_pools += fuse_conv_pools(g);
  if (o.fuse_conv_means && o.device == "cpu") s.conv_means += fuse_conv_means(g);
  if (o.fuse_conv_mean_gemms && o.device == "cpu") s.conv_mean_gemms += fuse_conv_mean_gemms(g);
  if (o.fuse_conv_adds && o.device == "cpu") {
    s.conv_adds += fuse_conv_adds(g);
    // The activation after the Add (ResNet's Relu) goes into the ConvAdd.
    if (o.fuse_activations) s.activations += fuse_activations(g);
  }
  // SINGA_BLOCKED_LAYOUT=0 keeps NCHW everywhere.
  if (o.blocked_layout && o.device == "cpu" && !switched_off("SINGA_BLOCKED_LAYOUT"))
    s.blocked_values += use_blocked_layout(g);
  // SINGA_CHANNELS_LAST=0 keeps NCHW between the inverted residual blocks.
  if (o.channels_last_layout && o.device == "cpu" && !switched_off("SINGA_CHANNELS_LAST"))
    s.channels_last_values += use_channels_last(g);
}

}  // namespace passes

namespace onnx {

::onnx::ModelProto optimized_model(const ::onnx::ModelProto& model, const PrepareOptions& options, const std::string& source,
                                   const std::string& base_dir) {
  auto& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  graph::Graph g = graph::build(model, source, base_dir, options);
  passes::PassOptions po;
  po.device = options.device.substr(0, options.device.find(':'));
  if (options.optimize) passes::optimize(g, po);
  ::onnx::ModelProto out = model;
  auto* gp = out.mutable_graph();
  gp->clear_node();
  gp->clear_initializer();
  gp->clear_value_info();
  for (const auto& n : g.nodes) *gp->add_node() = n.proto;
  // Fused nodes of singa's own domains (ai.singa, opset 1) need it imported
  // for the model to load again.
  for (const auto& n : g.nodes) {
    const std::string& d = n.proto.domain();
    if (d.empty() || d == "ai.onnx") continue;
    bool imported = false;
    for (const auto& op : out.opset_import()) imported = imported || op.domain() == d;
    if (imported) continue;
    auto* op = out.add_opset_import();
    op->set_domain(d);
    op->set_version(n.opset);
  }
  for (const auto& v : g.values)
    if (v.is_initializer && !v.is_input) *gp->add_initializer() = to_proto(v.constant, v.name);
  // IR < 4 lists initializers as graph inputs; keep only those still present.
  auto* inputs = gp->mutable_input();
  for (int i = inputs->size() - 1; i >= 0; --i)
    if (!g.index.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
  return out;
}

}  // namespace onnx
}  // namespace singa
