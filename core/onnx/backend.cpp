// prepare() and Rep: the user-facing backend over graph + executor.
#include "rep_impl.hpp"
#include "../env_options.hpp"
#include "../graph_pass.hpp"
#include "../passes/passes.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <boost/filesystem.hpp>

#include <algorithm>
#include <iostream>

namespace singa {
namespace onnx {

Rep::Rep(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Rep::~Rep() = default;

const std::vector<ValueInfo>& Rep::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Rep::outputs() const { return impl_->outputs; }
const std::vector<NodePlacement>& Rep::placement() const { return impl_->placement; }
const std::string& Rep::source() const { return impl_->source; }
ShapeCacheInfo Rep::shape_cache() const { return impl_->shapes ? impl_->shapes->info() : ShapeCacheInfo{}; }
MemoryPlanInfo Rep::memory_plan() const {
  const MemoryPlan& p = impl_->exec->memory_plan();
  return MemoryPlanInfo{p.arena_bytes, p.planned_values, p.planned_bytes};
}
std::map<std::string, int64_t> Rep::opsets() const { return impl_->exec->graph().opsets; }

std::map<std::string, Tensor> Rep::parameters() const {
  std::map<std::string, Tensor> out;
  for (const auto& v : impl_->exec->graph().values)
    if (v.is_initializer) out[v.name] = v.constant;
  return out;
}

namespace {

ValueInfo value_info(const graph::Value& v) {
  ValueInfo info;
  info.name = v.name;
  info.kind = v.kind == graph::TypeKind::kSequence   ? ValueInfo::Kind::kSequence
              : v.kind == graph::TypeKind::kOptional ? ValueInfo::Kind::kOptional
                                                     : ValueInfo::Kind::kTensor;
  info.optional_of_sequence = v.optional_of_sequence;
  info.dtype = v.dtype;
  info.rank_known = v.rank_known;
  if (v.rank_known) {
    info.dims = v.dims;
    info.dim_names = v.dim_params;
  }
  return info;
}

// The node `name` of `g` (the order last_layers counts), as an index.
size_t node_named(const graph::Graph& g, const std::string& name, const std::string& src) {
  size_t found = g.nodes.size(), count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].proto.name() == name) {
      found = i;
      ++count;
    }
  if (count == 0)
    throw Error(SINGA_INVALID_ARGUMENT, src + ": last_node '" + name + "' names no node of the model (Rep::nodes() and `singa info --nodes` list them)");
  if (count > 1)
    throw Error(SINGA_INVALID_ARGUMENT, src + ": last_node '" + name + "' names " + std::to_string(count) +
                                            " nodes; use last_layers with the position `singa info --nodes` gives");
  return found;
}

std::pair<Device*, int32_t> resolve_device(const std::string& spec) {
  std::string name = spec;
  int32_t id = 0;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    name = spec.substr(0, colon);
    try {
      size_t used = 0;
      id = std::stoi(spec.substr(colon + 1), &used);
      if (used != spec.size() - colon - 1 || id < 0) throw std::invalid_argument("id");
    } catch (const std::exception&) {
      throw Error(SINGA_INVALID_ARGUMENT, "bad device '" + spec + "': expected NAME or NAME:ID, e.g. cuda:0");
    }
  }
  auto& rt = Runtime::instance();
  Device* d = rt.device(name);
  if (!d) {
    std::string avail;
    for (auto* x : rt.devices()) avail += (avail.empty() ? "" : ", ") + x->name();
    throw Error(SINGA_NOT_FOUND, "device '" + name + "' is not provided by any loaded plugin (available: " +
                                     (avail.empty() ? "none" : avail) + "; see `singa plugins`)");
  }
  std::string reason;
  int32_t count = d->count(&reason);
  if (count <= 0) throw Error(SINGA_UNAVAILABLE, "device '" + name + "' is unavailable: " + (reason.empty() ? "no device found" : reason));
  if (id >= count)
    throw Error(SINGA_NOT_FOUND, "device '" + spec + "': only " + std::to_string(count) + " " + name + " device(s) present");
  return {d, id};
}

}  // namespace

std::vector<NodeInfo> Rep::nodes() const {
  const graph::Graph& g = impl_->plain_graph ? *impl_->plain_graph : impl_->exec->graph();
  std::vector<NodeInfo> out;
  out.reserve(g.nodes.size());
  for (const auto& n : g.nodes) {
    NodeInfo info;
    info.name = n.proto.name();
    info.op_type = n.proto.op_type();
    info.domain = n.proto.domain();
    for (int v : n.outputs) info.outputs.push_back(v >= 0 ? value_info(g.values[size_t(v)]) : ValueInfo{});
    out.push_back(std::move(info));
  }
  return out;
}

std::shared_ptr<Rep> prepare(const ::onnx::ModelProto& model, const PrepareOptions& options, const std::string& source) {
  return prepare_at(model, options, source, "");
}

std::shared_ptr<Rep> prepare(::onnx::ModelProto&& model, const PrepareOptions& options, const std::string& source) {
  return prepare_at(std::move(model), options, source, "");
}

std::shared_ptr<Rep> prepare_at(const ::onnx::ModelProto& model, const PrepareOptions& options, const std::string& source,
                                const std::string& base_dir) {
  return prepare_at(::onnx::ModelProto(model), options, source, base_dir);
}

std::shared_ptr<Rep> prepare_at(::onnx::ModelProto&& model, const PrepareOptions& options, const std::string& source,
                                const std::string& base_dir) {
  auto& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  auto dev = resolve_device(options.device);
  if (options.threads > 0)
    if (Device* cpu = rt.cpu()) cpu->set_num_threads(options.threads);
  const auto named = std::make_shared<const std::map<std::string, std::string>>(with_env_options(options.options));
  graph::Graph g = graph::build(std::move(model), source, base_dir, options);
  for (const auto& w : g.warnings)
    if (std::getenv("SINGA_VERBOSE")) std::cerr << "singa: warning: " << source << ": " << w << "\n";
  std::shared_ptr<const graph::Graph> plain, before;
  if (options.optimize) {
    before = std::make_shared<const graph::Graph>(g);  // initializers are shared, not copied
    passes::PassStats stats;
    passes::PassOptions po{dev.first->name()};
    po.stats = &stats;
    po.keep_dequantize = true;  // for the quantized passes; run_graph_passes folds the rest
    passes::optimize(g, po);
    run_graph_passes(g, dev.first->name(), named.get(), &stats.plugin_passes);
    // (a pass that only set layouts counts too: the plain executor must not see them)
    if (stats.total() > 0 || std::any_of(g.values.begin(), g.values.end(), [](const graph::Value& v) { return !v.layout.empty(); }))
      plain = before;
  }
  auto impl = std::make_unique<Rep::Impl>();
  impl->source = source;
  impl->config = ExecConfig{dev.first, dev.second, options.fallback, options.max_tensor_bytes, options.memory_plan,
                            named};
  impl->plain_graph = std::move(plain);
  impl->exec = std::make_unique<Executor>(std::move(g), impl->config);
  impl->shapes = std::make_unique<ShapeCache>(std::move(before), impl->exec->graph(), impl->config, options.optimize);
  const auto& eg = impl->exec->graph();
  for (int v : eg.inputs) impl->inputs.push_back(value_info(eg.values[size_t(v)]));
  for (int v : eg.outputs) impl->outputs.push_back(value_info(eg.values[size_t(v)]));
  for (const auto& e : impl->exec->nodes()) {
    NodePlacement p;
    p.node = e.node->proto.name();
    p.op_type = e.node->proto.op_type();
    p.device = e.device->name() + (e.device_id ? ":" + std::to_string(e.device_id) : "");
    p.plugin = e.kernel ? e.kernel->plugin_name : "core";
    p.since_version = e.kernel ? e.kernel->def.since_version : int(e.node->opset);
    impl->placement.push_back(p);
  }
  return std::make_shared<Rep>(std::move(impl));
}

std::shared_ptr<Rep> prepare(const std::string& path, const PrepareOptions& options) {
  return prepare_at(load_model(path), options, path, boost::filesystem::path(path).parent_path().string());
}

std::shared_ptr<Rep> prepare_bytes(const std::string& bytes, const PrepareOptions& options) {
  return prepare(parse_model(bytes, "<bytes>"), options, "<bytes>");
}

NamedTensors Rep::run(const std::map<std::string, Tensor>& inputs, const RunOptions& options) const {
  std::vector<Tensor> ordered(impl_->inputs.size());
  size_t used = 0;
  for (size_t i = 0; i < impl_->inputs.size(); ++i) {
    auto it = inputs.find(impl_->inputs[i].name);
    if (it != inputs.end()) {
      ordered[i] = it->second;
      ++used;
    }
  }
  if (used != inputs.size()) {
    for (const auto& kv : inputs) {
      bool known = false;
      for (const auto& in : impl_->inputs) known = known || in.name == kv.first;
      if (!known) throw Error(SINGA_INVALID_ARGUMENT, impl_->source + ": the model has no input named '" + kv.first + "'");
    }
  }
  return run(ordered, options);
}

NamedTensors Rep::run(const std::vector<Tensor>& inputs, const RunOptions& options) const {
  NamedValues values = run_values(std::vector<Value>(inputs.begin(), inputs.end()), options);
  NamedTensors out;
  for (auto& [name, v] : values) {
    if (!v.is_tensor())
      throw Error(SINGA_INVALID_ARGUMENT, impl_->source + ": output '" + name + "' is " + v.describe() +
                                              "; use Rep::run_values for models with sequence or optional outputs");
    out.emplace_back(name, v.tensor());
  }
  return out;
}

NamedValues Rep::run_values(const std::vector<Value>& inputs, const RunOptions& options) const {
  const bool cut = options.last_layers != 0 || !options.last_node.empty();
  const std::string& src = impl_->source;
  if (inputs.size() > impl_->inputs.size())
    throw Error(SINGA_INVALID_ARGUMENT, src + ": " + std::to_string(inputs.size()) + " inputs given, the model takes " +
                                            std::to_string(impl_->inputs.size()));
  // Check every input before any kernel runs; symbolic dims must agree.
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < impl_->inputs.size(); ++i) {
    const ValueInfo& vi = impl_->inputs[i];
    if (vi.kind == ValueInfo::Kind::kOptional) {
      if (i >= inputs.size() || inputs[i].is_none()) continue;
      if (inputs[i].is_sequence() != vi.optional_of_sequence)
        throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' is " + inputs[i].describe() + ", the model expects an optional " +
                                                (vi.optional_of_sequence ? "sequence" : "tensor"));
      continue;
    }
    if (i >= inputs.size() || inputs[i].is_none())
      throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' is missing");
    if (vi.kind == ValueInfo::Kind::kSequence) {
      if (!inputs[i].is_sequence())
        throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' is " + inputs[i].describe() + ", the model expects a sequence");
      for (const auto& t : inputs[i].items())
        if (vi.dtype != 0 && t.dtype() != vi.dtype)
          throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' holds a tensor(" + dtype_name(t.dtype()) +
                                                  "), the model expects a sequence of tensor(" + dtype_name(vi.dtype) + ")");
      continue;
    }
    if (!inputs[i].is_tensor())
      throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' is " + inputs[i].describe() + ", the model expects a tensor");
    const Tensor& t = inputs[i].tensor();
    if (vi.dtype != 0 && t.dtype() != vi.dtype)
      throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' has element type " + dtype_name(t.dtype()) +
                                              ", the model expects " + dtype_name(vi.dtype));
    if (!vi.rank_known) continue;
    if (t.ndim() != int(vi.dims.size()))
      throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' has shape " + shape_to_string(t.shape()) +
                                              ", the model expects rank " + std::to_string(vi.dims.size()) + " " + shape_to_string(vi.dims));
    for (size_t d = 0; d < vi.dims.size(); ++d) {
      int64_t got = t.shape()[d];
      if (vi.dims[d] >= 0 && got != vi.dims[d])
        throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' has shape " + shape_to_string(t.shape()) +
                                                ", the model expects " + shape_to_string(vi.dims) + " (dimension " + std::to_string(d) + ")");
      const std::string& sym = vi.dim_names[d];
      if (vi.dims[d] < 0 && !sym.empty()) {
        auto it = bound.find(sym);
        if (it != bound.end() && it->second != got)
          throw Error(SINGA_INVALID_ARGUMENT, src + ": input '" + vi.name + "' binds dimension '" + sym + "' to " + std::to_string(got) +
                                                  " but another input bound it to " + std::to_string(it->second));
        bound[sym] = got;
      }
    }
  }
  // A cut or every intermediate names the model's own nodes: the general
  // plan. Otherwise the plan specialized for these shapes, once there is one.
  std::shared_ptr<const Executor> special;
  if (!cut && !options.all_outputs && impl_->shapes) special = impl_->shapes->find(inputs);
  const Executor& exec = special ? *special : (cut || options.all_outputs) ? impl_->plain() : *impl_->exec;
  const auto& g = exec.graph();
  size_t total = exec.nodes().size();
  if (options.last_layers > 0 && size_t(options.last_layers) != total)
    throw Error(SINGA_INVALID_ARGUMENT, src + ": last_layers must be <= 0 (stop |k| nodes before the end)");
  size_t stop = total;
  if (!options.last_node.empty()) {
    if (options.last_layers != 0)
      throw Error(SINGA_INVALID_ARGUMENT, src + ": give last_layers or last_node, not both");
    stop = node_named(g, options.last_node, src) + 1;
  } else if (options.last_layers < 0) {
    if (size_t(-options.last_layers) >= total)
      throw Error(SINGA_INVALID_ARGUMENT, src + ": last_layers " + std::to_string(options.last_layers) + " leaves no node to run (the graph has " +
                                              std::to_string(total) + ")");
    stop = total - size_t(-options.last_layers);
  }
  std::vector<std::pair<size_t, double>> timings;
  std::vector<Value> env = exec.run(inputs, stop, options.all_outputs, options.profile ? &timings : nullptr);
  for (const auto& [i, ms] : timings) {
    const ExecNode& e = exec.nodes()[i];
    options.profile->push_back({e.node->proto.name(), e.node->proto.op_type(), e.device ? e.device->name() : "cpu", ms});
  }
  NamedValues out;
  auto emit = [&](int v) {
    if (v < 0) return;
    const Value& val = env[size_t(v)];
    const std::string& name = g.values[size_t(v)].name;
    if (val.is_tensor()) {
      out.emplace_back(name, val.tensor().to_host());
    } else if (val.is_sequence()) {
      std::vector<Value> items;
      for (const auto& e : val.elements()) items.push_back(e.is_tensor() ? Value(e.tensor().to_host()) : e);
      out.emplace_back(name, Value::sequence_of(std::move(items), val.elem_dtype()));
    } else if (g.values[size_t(v)].kind == graph::TypeKind::kOptional) {
      out.emplace_back(name, Value());  // an empty optional is a result too
    }
  };
  if (options.all_outputs) {
    for (size_t i = 0; i < stop; ++i)
      for (int v : g.nodes[i].outputs) emit(v);
    for (int v : g.outputs)
      if (g.values[size_t(v)].producer < 0) emit(v);  // inputs/initializers wired straight out
  } else if (stop == total) {
    for (int v : g.outputs) emit(v);
  } else {
    for (int v : g.nodes[stop - 1].outputs) emit(v);
  }
  return out;
}

}  // namespace onnx
}  // namespace singa
