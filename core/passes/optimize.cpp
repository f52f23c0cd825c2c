// The pass pipeline and optimized_model(), which shows its result as ONNX.
#include "graph_edit.hpp"
#include "passes.hpp"
#include "../env_options.hpp"
#include "../graph_pass.hpp"

#include <singa/optimize.hpp>

namespace singa {
namespace passes {

namespace {

// Whether a fusion may make the standard op `op` of `opset`: the target
// device has a kernel for it, and a graph to be written back as a model
// imports that opset already.
bool can_make(const graph::Graph& g, const PassOptions& o, const char* op, int64_t opset) {
  if (o.within_model_opset) {
    auto it = g.opsets.find("");
    if (it == g.opsets.end() || it->second < opset) return false;
  }
  return kernel_registered("", op, opset, o.device);
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
  if (o.fuse_matmul_add) s.matmul_add += fuse_matmul_add(g);
  if (o.fuse_layer_norm && can_make(g, o, "LayerNormalization", kLayerNormOpset)) s.layer_norms += fuse_layer_norm(g);
  if (o.fuse_gelu && can_make(g, o, "Gelu", kGeluOpset)) s.gelus += fuse_gelu(g);
  // The device's own fusions and layouts are its plugins' graph passes
  // (for the CPU: plugins/ops_math/passes, plugins/ops_nn/passes), which
  // prepare runs after these.
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
  po.within_model_opset = true;
  po.keep_dequantize = true;
  const std::map<std::string, std::string> named = with_env_options(options.options);
  if (options.optimize) {
    passes::optimize(g, po);
    run_graph_passes(g, po.device, &named, nullptr);
  }
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
  // ONNX has no place for a value's layout (singa_layout_ext): the model's
  // metadata lists those not plain, as "singa.layout:VALUE", for `singa
  // info`. A model loaded again runs them plain.
  for (const auto& v : g.values)
    if (!v.layout.empty()) {
      auto* m = out.add_metadata_props();
      m->set_key("singa.layout:" + v.name);
      m->set_value(v.layout);
    }
  // IR < 4 lists initializers as graph inputs; keep only those still present.
  auto* inputs = gp->mutable_input();
  for (int i = inputs->size() - 1; i >= 0; --i)
    if (!g.index.count(inputs->Get(i).name())) inputs->DeleteSubrange(i, 1);
  return out;
}

}  // namespace onnx
}  // namespace singa
