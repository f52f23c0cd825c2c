#include "executor.hpp"
#include "graph_pass.hpp"
#include <singa/op_versions.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

namespace singa {

ExecNode::~ExecNode() {
  if (state && kernel && kernel->def.destroy) kernel->def.destroy(state);
}

namespace {

std::string versions_of(const std::vector<KernelEntry*>& ks) {
  std::set<std::string> seen;
  std::string out;
  for (auto* k : ks) {
    std::string s = onnx::opset_range_text(k->def.since_version, k->last_opset) + " on " + k->device;
    if (seen.insert(s).second) out += (out.empty() ? "" : ", ") + s;
  }
  return out;
}

std::string mask_names(uint64_t mask) {
  std::string out;
  for (int t = 1; t <= SINGA_ONNX_INT2; ++t)  // up to the newest element type (ABI 1.2)
    if (mask & SINGA_DTYPE_BIT(t)) out += (out.empty() ? "" : ",") + std::string(dtype_name(t));
  return out;
}

// The layouts kernel `k` declares besides plain (singa_layout_ext), as
// (index, layout) pairs with outputs at -1-k.
bool declares_layout(const KernelEntry& k, int32_t index, const std::string& layout) {
  for (const singa_extension* e = k.def.extensions; e; e = e->next) {
    if (e->type != SINGA_EXTENSION_LAYOUT) continue;
    auto* l = reinterpret_cast<const singa_layout_ext*>(e);
    if (!SINGA_EXTENSION_HAS_FIELD(l, singa_layout_ext, num_accepts) || !l->accepts) continue;
    for (size_t i = 0; i < l->num_accepts; ++i)
      if (l->accepts[i].index == index && l->accepts[i].layout && layout == l->accepts[i].layout) return true;
  }
  return false;
}

// The first input or output of `n` whose layout kernel `k` (null: the core's
// own op, which reads only plain values) does not declare, as "input 0
// 'x' in layout 'L'"; "" when every one is declared.
std::string undeclared_layout(const graph::Graph& g, const graph::Node& n, const KernelEntry* k) {
  auto check = [&](const std::vector<int>& ids, bool input) -> std::string {
    for (size_t i = 0; i < ids.size(); ++i) {
      const int v = ids[i];
      if (v < 0 || g.values[size_t(v)].layout.empty()) continue;
      const std::string& l = g.values[size_t(v)].layout;
      if (k && declares_layout(*k, input ? int32_t(i) : -1 - int32_t(i), l)) continue;
      return std::string(input ? "input " : "output ") + std::to_string(i) + " '" + g.values[size_t(v)].name +
             "' in layout '" + l + "'";
    }
    return "";
  };
  std::string bad = check(n.inputs, true);
  return bad.empty() ? check(n.outputs, false) : bad;
}

}  // namespace

Executor::Executor(graph::Graph graph, const ExecConfig& config)
    : g_(std::move(graph)), config_(config), device_(config.device), device_id_(config.device_id),
      cpu_(Runtime::instance().cpu()), max_bytes_(config.max_tensor_bytes) {
  bool fallback = config.fallback;
  exec_.resize(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    ExecNode& e = exec_[i];
    e.node = &g_.nodes[i];
    e.core = make_core_op(g_, *e.node, config_);
    if (e.core) {
      const std::string bad = undeclared_layout(g_, *e.node, nullptr);
      if (!bad.empty())
        throw Error(SINGA_INVALID_ARGUMENT, g_.source + ": " + e.node->label + ": the core runs this op on plain values only, not " + bad);
      e.device = cpu_;
      e.host_inputs.assign(e.node->inputs.size(), true);
      continue;
    }
    for (size_t j = 0; j < e.node->inputs.size(); ++j) {
      int v = e.node->inputs[j];
      if (v >= 0 && g_.values[size_t(v)].kind != graph::TypeKind::kTensor)
        throw Error(SINGA_INVALID_ARGUMENT, g_.source + ": " + e.node->label + ": input '" + g_.values[size_t(v)].name + "' is " +
                                                graph::type_string(g_.values[size_t(v)]) + ", but this op takes tensors");
    }
    auto info = std::make_unique<singa_node>();
    describe_node(*info, g_, *e.node);
    for (int v : e.node->inputs) info->input_layouts.push_back(v >= 0 ? g_.values[size_t(v)].layout : std::string());
    for (int v : e.node->outputs) info->output_layouts.push_back(v >= 0 ? g_.values[size_t(v)].layout : std::string());
    info->options = config_.options.get();
    e.info = std::move(info);
    select(e, fallback);
    e.host_inputs.assign(e.node->inputs.size(), false);
    if (e.kernel->def.flags & SINGA_KERNEL_HOST_INPUTS)
      for (size_t j = 0; j < e.host_inputs.size() && j < 64; ++j) e.host_inputs[j] = (e.kernel->def.cpu_inputs_mask >> j) & 1u;
  }
  if (device_ && device_->has_events()) streams_ = std::make_unique<StreamPool>(device_, device_id_);
  check_layouts_stay_on_device();
  for (const ExecNode& e : exec_) {
    if (e.core || e.device->host_addressable()) continue;
    for (size_t j = 0; j < e.node->inputs.size(); ++j) {
      int v = e.node->inputs[j];
      if (v < 0 || e.host_inputs[j] || !g_.values[size_t(v)].is_initializer) continue;
      auto key = std::make_pair(v, e.device);
      if (device_constants_.count(key)) continue;
      const Tensor& c = g_.values[size_t(v)].constant;
      device_constants_[key] = streams_ && e.device == device_ ? streams_->upload(c) : c.to(e.device, e.device_id);
    }
  }
  if (streams_) streams_->finish_uploads();
  // Each value is released right after its last reader (or its producer when
  // nobody reads it); graph outputs are kept.
  last_use_.assign(g_.values.size(), -1);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (int v : g_.nodes[i].inputs)
      if (v >= 0) last_use_[size_t(v)] = int(i);
    for (int v : g_.nodes[i].outputs)
      if (v >= 0 && last_use_[size_t(v)] < int(i)) last_use_[size_t(v)] = int(i);
  }
  for (size_t v = 0; v < g_.values.size(); ++v) {
    const auto& val = g_.values[v];
    if (last_use_[v] < 0 || val.is_output || val.is_initializer || val.is_outer) continue;
    exec_[size_t(last_use_[v])].release.push_back(int(v));
  }
  std::vector<bool> in_env(g_.values.size(), false);
  for (const ExecNode& e : exec_)
    if (e.core)
      for (int v : e.node->inputs)
        if (v >= 0) in_env[size_t(v)] = true;
  for (int v : g_.outputs) in_env[size_t(v)] = true;
  for (size_t v = 0; v < g_.values.size(); ++v)
    if (g_.values[v].is_initializer && (in_env[v] || g_.values[v].is_input)) env_constants_.push_back(int(v));
  if (config_.memory_plan && cpu_ && cpu_->host_addressable()) plan_memory_of_intermediates();
}

namespace {

// Bytes of a tensor value whose shape and type shape inference fixed; 0 otherwise.
size_t static_bytes(const graph::Value& v) {
  // String tensors own their texts outside the buffer: never in the arena.
  if (v.kind != graph::TypeKind::kTensor || !v.rank_known || v.dtype == SINGA_ONNX_STRING || dtype_bits(v.dtype) == 0) return 0;
  int64_t n = 1;
  for (int64_t d : v.dims) {
    if (d <= 0) return 0;
    if (n > (int64_t(1) << 40) / d) return 0;
    n *= d;
  }
  return dtype_nbytes(v.dtype, n);
}

}  // namespace

// Intermediates produced by CPU kernels go to the arena. Left out: what the
// caller sees (graph inputs and outputs, initializers, values of an enclosing
// graph) and what a core op reads (control flow may hand its inputs on as
// outputs, so their memory may outlive the plan). An in-place output joins
// its input's chain: it may live in that memory after the input's last use.
void Executor::plan_memory_of_intermediates() {
  const size_t nv = g_.values.size();
  std::vector<bool> read_by_core(nv, false);
  for (const ExecNode& e : exec_)
    if (e.core)
      for (int v : e.node->inputs)
        if (v >= 0) read_by_core[size_t(v)] = true;
  auto intermediate = [&](int v) {
    const graph::Value& val = g_.values[size_t(v)];
    return !val.is_output && !val.is_initializer && !val.is_input && !val.is_outer;
  };
  std::vector<PlanValue> values(nv);
  for (size_t v = 0; v < nv; ++v) {
    const graph::Value& val = g_.values[v];
    if (val.producer < 0) continue;
    const ExecNode& e = exec_[size_t(val.producer)];
    PlanValue& p = values[v];
    p.first = val.producer;
    p.last = last_use_[v];
    p.bytes = static_bytes(val);
    p.eligible = !e.core && e.device == cpu_ && intermediate(int(v)) && !read_by_core[v];
    const graph::Node& n = *e.node;
    if (!e.core && (e.kernel->def.flags & SINGA_KERNEL_MAY_INPLACE) && n.outputs[0] == int(v) && !n.inputs.empty()) {
      int v0 = n.inputs[0];
      if (v0 >= 0 && last_use_[size_t(v0)] == val.producer && intermediate(v0) &&
          std::count(n.inputs.begin(), n.inputs.end(), v0) == 1)
        p.takes_over = v0;
    }
  }
  plan_concat_inputs_in_place(values);
  plan_ = plan_memory(values);
  for (size_t i = 0; i < exec_.size(); ++i) {
    ExecNode& e = exec_[i];
    bool any = false;
    std::vector<std::pair<int64_t, size_t>> out;
    for (int v : e.node->outputs) {
      out.emplace_back(v >= 0 ? plan_.offset[size_t(v)] : -1, v >= 0 ? plan_.bytes[size_t(v)] : 0);
      any = any || out.back().first >= 0;
    }
    if (any) e.planned = std::move(out);
  }
}

// A Concat whose inputs are whole blocks of its output (every dim before the
// axis is 1) gets each input placed where it goes in the output, so that the
// producers write it there and the Concat (plugins/ops_tensor/concat_split.cpp)
// finds nothing to move: SqueezeNet's eight Concats copied 0.1 ms per run.
// Concats are visited last first, and one whose inputs already lie side by
// side in a later Concat's output is itself placed there: DenseNet's layer k
// concatenates the features of layers 0..k-1, a prefix of layer k+1's
// Concat, so a dense block's Concats and features all live in the block's
// last output and none of its 58 Concats copies (they moved 3.6 ms of
// 100 per run). Inputs read elsewhere too stay where they are as long as no
// reader writes over them (takes them over) and the container outlives
// every reader (memory_plan.cpp). Parts are eligible, take nothing over, are
// taken over by nothing and sit at 64-byte offsets. Values in a layout other
// than plain are not placed: a blocked input's offset in the output can differ
// from its plain byte offset (docs/abi.md, "Layouts").
void Executor::plan_concat_inputs_in_place(std::vector<PlanValue>& values) const {
  std::vector<bool> taken_over(values.size(), false);
  for (const PlanValue& p : values)
    if (p.takes_over >= 0) taken_over[size_t(p.takes_over)] = true;
  auto movable = [&](int v) {
    const PlanValue& p = values[size_t(v)];
    return p.eligible && p.bytes > 0 && p.takes_over < 0 && !taken_over[size_t(v)];
  };
  for (auto it = exec_.rbegin(); it != exec_.rend(); ++it) {
    const ExecNode& e = *it;
    const graph::Node& n = *e.node;
    if (e.core || e.device != cpu_ || n.proto.op_type() != "Concat" || !(n.proto.domain().empty() ||
        n.proto.domain() == "ai.onnx") || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty())
      continue;
    const int y = n.outputs[0];
    const graph::Value& out = g_.values[size_t(y)];
    if (!movable(y) || !out.rank_known || !out.layout.empty()) continue;
    int64_t axis = 1;  // Concat-1's default; later opsets require the attribute
    for (const auto& a : n.proto.attribute())
      if (a.name() == "axis") axis = a.i();
    if (axis < 0) axis += int64_t(out.dims.size());
    if (axis < 0 || axis >= int64_t(out.dims.size())) continue;
    bool ok = true;
    for (int64_t d = 0; d < axis; ++d) ok = ok && out.dims[size_t(d)] == 1;
    // Each input's offset in the output; a value read twice keeps its memory.
    std::vector<std::pair<int, size_t>> parts;
    size_t offset = 0;
    for (size_t k = 0; ok && k < n.inputs.size(); ++k) {
      const int v = n.inputs[k];
      ok = v >= 0 && values[size_t(v)].bytes > 0 && g_.values[size_t(v)].layout.empty();
      if (!ok) break;
      if (std::count(n.inputs.begin(), n.inputs.end(), v) == 1) parts.emplace_back(v, offset);
      offset += values[size_t(v)].bytes;
    }
    if (!ok || offset != values[size_t(y)].bytes) continue;
    // Where the output goes: inside its own container if it has one; else
    // where a later Concat's output already holds all of its inputs side by
    // side (in this order, each once); else it is a container itself.
    int root = y;
    size_t base = 0;
    if (values[size_t(y)].part_of >= 0) {
      root = values[size_t(y)].part_of;
      base = values[size_t(y)].part_offset;
    } else if (parts.size() == n.inputs.size()) {
      const PlanValue& p0 = values[size_t(parts[0].first)];
      bool joins = p0.part_of >= 0 && p0.part_offset % MemoryPlan::kAlignment == 0;
      for (const auto& [v, at] : parts) {
        const PlanValue& p = values[size_t(v)];
        joins = joins && p.part_of == p0.part_of && p.part_offset == p0.part_offset + at;
      }
      if (joins) {
        root = p0.part_of;
        base = p0.part_offset;
        values[size_t(y)].part_of = root;
        values[size_t(y)].part_offset = base;
        continue;  // its inputs are where it reads them already
      }
    }
    for (const auto& [v, at] : parts) {
      PlanValue& p = values[size_t(v)];
      if (p.part_of >= 0 || !movable(v) || (base + at) % MemoryPlan::kAlignment != 0) continue;
      p.part_of = root;
      p.part_offset = base + at;
    }
  }
}

// A value in a layout other than plain is read where it was written: the
// copy between devices (the fallback's) moves plain tensors only, and the
// caller gets plain graph outputs.
void Executor::check_layouts_stay_on_device() const {
  for (const ExecNode& e : exec_) {
    if (e.core) continue;
    for (size_t j = 0; j < e.node->inputs.size(); ++j) {
      const int v = e.node->inputs[j];
      if (v < 0 || g_.values[size_t(v)].layout.empty()) continue;
      const graph::Value& val = g_.values[size_t(v)];
      const ExecNode* p = val.producer >= 0 ? &exec_[size_t(val.producer)] : nullptr;
      const bool host_copy = e.host_inputs[j] && !e.device->host_addressable();
      if (!p || p->device != e.device || p->device_id != e.device_id || host_copy)
        throw Error(SINGA_INVALID_ARGUMENT, g_.source + ": " + e.node->label + ": value '" + val.name + "' in layout '" +
                                                val.layout + "' would be copied from " +
                                                (p ? p->device->name() + ":" + std::to_string(p->device_id) : std::string("outside the graph")) +
                                                " to " + (host_copy ? std::string("the host") : e.device->name() + ":" + std::to_string(e.device_id)) +
                                                "; only plain values cross devices");
    }
  }
  for (int v : g_.outputs)
    if (!g_.values[size_t(v)].layout.empty())
      throw Error(SINGA_INVALID_ARGUMENT, g_.source + ": graph output '" + g_.values[size_t(v)].name + "' is in layout '" +
                                              g_.values[size_t(v)].layout + "'; outputs are plain");
}

void Executor::select(ExecNode& e, bool fallback) {
  const auto& n = *e.node;
  const auto& rt = Runtime::instance();
  const std::string& dom = n.proto.domain();
  const auto& all = rt.kernels(dom, n.proto.op_type());
  std::string where = g_.source + ": " + n.label;
  if (all.empty())
    throw Error(SINGA_NOT_FOUND, where + ": no loaded plugin implements op '" + n.proto.op_type() + "'" +
                                     (dom.empty() ? "" : " of domain '" + dom + "'") + " (see `singa plugins`)");
  // A model newer than the table of op versions may use a version of this op
  // that no kernel here was written for: refuse it by name.
  const std::string ndom = normalize_domain(dom);
  const int newest = onnx::newest_known_opset(ndom);
  if (newest > 0 && n.opset > newest) {
    const std::vector<int>* known = onnx::op_versions(ndom, n.proto.op_type());
    throw Error(SINGA_UNIMPLEMENTED, where + ": the model imports opset " + std::to_string(n.opset) + " of domain '" +
                                         (ndom.empty() ? "ai.onnx" : ndom) + "', newer than supported (this singa knows up to opset " +
                                         std::to_string(newest) + (known ? "; " + n.proto.op_type() + " has versions " + onnx::versions_text(*known) : "") + ")");
  }
  std::vector<KernelEntry*> by_version;
  for (auto* k : all)
    if (k->def.since_version <= n.opset && n.opset <= k->last_opset) by_version.push_back(k);
  if (by_version.empty())
  {
    const int v = onnx::op_version_at(ndom, n.proto.op_type(), n.opset);
    throw Error(SINGA_UNIMPLEMENTED, where + ": the model uses opset " + std::to_string(n.opset) + " of domain '" +
                                         (dom.empty() ? "ai.onnx" : dom) + "'" +
                                         (v > 0 ? " (" + n.proto.op_type() + "-" + std::to_string(v) + ")" : std::string()) +
                                         "; kernels exist for opsets " + versions_of(all));
  }
  std::vector<Device*> order{device_};
  if (fallback && cpu_ && device_ != cpu_) order.push_back(cpu_);
  std::string type_error, declined, layout_error;
  for (Device* d : order) {
    for (auto* k : by_version) {
      if (k->device != d->name()) continue;
      bool ok = true;
      for (const auto& c : k->constraints) {
        int v = -1;
        if (c.index >= 0 && size_t(c.index) < n.inputs.size()) v = n.inputs[size_t(c.index)];
        if (c.index < 0 && size_t(-1 - c.index) < n.outputs.size()) v = n.outputs[size_t(-1 - c.index)];
        if (v < 0) continue;
        int32_t t = g_.values[size_t(v)].dtype;
        if (t != 0 && !(c.dtypes & SINGA_DTYPE_BIT(t))) {
          ok = false;
          type_error = std::string(c.name) + "=" + dtype_name(t) + " ('" + g_.values[size_t(v)].name + "'); the " + d->name() +
                       " kernel accepts " + mask_names(c.dtypes);
          break;
        }
      }
      if (!ok) continue;
      // A kernel that does not declare a layout one of the node's values is
      // in would misread it: it is passed over like a type mismatch.
      const std::string bad_layout = undeclared_layout(g_, n, k);
      if (!bad_layout.empty()) {
        layout_error = bad_layout + ", which the " + d->name() + " kernel (" +
                       (k->plugin_name.empty() ? k->plugin_path : k->plugin_name) + ") does not declare";
        continue;
      }
      // A kernel may decline the node at create (UNIMPLEMENTED: an attribute
      // value or shape it does not handle); the next candidate, then the
      // fallback device, is tried. Any other error is the node's error.
      e.info->attrs_read.clear();
      e.info->attrs_mistyped.clear();
      void* state = nullptr;
      singa_status* st = k->def.create(k->def.user, e.info.get(), &state);
      if (st && st->code == SINGA_UNIMPLEMENTED) {
        declined += "; " + (k->plugin_name.empty() ? k->plugin_path : k->plugin_name) + " on " + d->name() + " declined: " +
                    take_status_message(st);
        continue;
      }
      throw_status(st, where);
      e.kernel = k;
      e.state = state;
      e.device = d;
      e.device_id = d == device_ ? device_id_ : 0;
      check_attribute_reads(*e.info, where);
      return;
    }
  }
  if (!layout_error.empty() && declined.empty())
    throw Error(SINGA_UNIMPLEMENTED, where + ": no kernel for " + layout_error + " (singa_layout_ext)");
  if (!declined.empty()) throw Error(SINGA_UNIMPLEMENTED, where + ": every kernel declined the node" + declined);
  if (!type_error.empty()) throw Error(SINGA_UNIMPLEMENTED, where + ": no kernel for element type " + type_error);
  throw Error(SINGA_UNIMPLEMENTED, where + ": no kernel on device '" + device_->name() + "'" +
                                       (fallback ? " or the cpu" : " (fallback disabled)") + " for opset " + std::to_string(n.opset) +
                                       "; kernels exist for " + versions_of(all));
}

std::vector<Value> Executor::run(const std::vector<Value>& inputs, size_t stop, bool keep_all,
                                 std::vector<std::pair<size_t, double>>* timings) const {
  std::vector<Value> env(g_.values.size());
  if (keep_all) {
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].is_initializer) env[v] = g_.values[v].constant;
  } else {
    for (int v : env_constants_) env[size_t(v)] = g_.values[size_t(v)].constant;
  }
  for (size_t i = 0; i < g_.inputs.size() && i < inputs.size(); ++i) env[size_t(g_.inputs[i])] = inputs[i];
  for (size_t i = 0; i < g_.outer.size() && g_.inputs.size() + i < inputs.size(); ++i)
    if (g_.outer[i] >= 0) env[size_t(g_.outer[i])] = inputs[g_.inputs.size() + i];

  stop = std::min(stop, exec_.size());
  // One arena per run, so that runs from several threads do not share it; the
  // CPU device's block cache hands the same block back run after run.
  std::shared_ptr<Storage> arena;
  if (!keep_all && plan_.arena_bytes > 0) arena = Tensor(Shape{int64_t(plan_.arena_bytes)}, SINGA_ONNX_UINT8, cpu_).storage();
  // This run's stream on the device (when it has events); without one every
  // copy is synchronous and nothing below waits.
  RunStream rs(streams_.get());
  for (size_t i = 0; i < stop; ++i) {
    const ExecNode& e = exec_[i];
    const auto t0 = timings ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (e.core) {
      rs.sync();  // core ops read their inputs on the host
      run_core(e, env);
    } else {
      run_kernel(e, i, env, keep_all, arena, rs);
    }
    if (timings) {
      if (void* stream = rs.stream_for(e.device, e.device_id)) e.device->synchronize(e.device_id, stream);
      else if (e.device) e.device->synchronize(e.device_id);
      timings->emplace_back(i, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!keep_all)
      for (int v : e.release) {
        if (env[size_t(v)].is_tensor()) rs.keep(env[size_t(v)].tensor());
        env[size_t(v)] = Value();
      }
    rs.trim();
  }
  rs.finish();  // what the run returns is complete
  return env;
}

std::vector<Value> Executor::run_outputs(const std::vector<Value>& inputs) const {
  std::vector<Value> env = run(inputs, exec_.size(), false);
  std::vector<Value> out;
  out.reserve(g_.outputs.size());
  for (int v : g_.outputs) out.push_back(env[size_t(v)]);
  return out;
}

void Executor::run_core(const ExecNode& e, std::vector<Value>& env) const {
  const graph::Node& n = *e.node;
  std::string where = g_.source + ": " + n.label;
  CoreCall call{n, where, {}, {}, max_bytes_};
  call.inputs.resize(n.inputs.size(), nullptr);
  for (size_t j = 0; j < n.inputs.size(); ++j)
    if (n.inputs[j] >= 0) call.inputs[j] = &env[size_t(n.inputs[j])];
  call.outputs.resize(n.outputs.size());
  e.core->run(call);
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) env[size_t(n.outputs[k])] = std::move(call.outputs[k]);
}

namespace {

// A kernel call's argument vectors, reused from call to call on each thread:
// fresh ones cost four allocations per node, a good part of what a small
// shape op (Gather of one dim, Unsqueeze, Concat of four int64s) costs.
class PooledContext {
 public:
  PooledContext() {
    auto& free = pool();
    if (free.empty()) {
      ctx_ = std::make_unique<singa_kernel_context>();
    } else {
      ctx_ = std::move(free.back());
      free.pop_back();
    }
  }
  ~PooledContext() {
    // Every field back to its default, the vectors empty but keeping their
    // capacity; nothing of this call's tensors stays alive.
    KernelCall& c = ctx_->call;
    c.inputs.clear();
    c.input_views.clear();
    c.outputs.clear();
    c.output_views.clear();
    c.workspaces.clear();
    auto inputs = std::move(c.inputs);
    auto input_views = std::move(c.input_views);
    auto outputs = std::move(c.outputs);
    auto output_views = std::move(c.output_views);
    auto workspaces = std::move(c.workspaces);
    c = KernelCall();
    c.inputs = std::move(inputs);
    c.input_views = std::move(input_views);
    c.outputs = std::move(outputs);
    c.output_views = std::move(output_views);
    c.workspaces = std::move(workspaces);
    auto& free = pool();
    if (free.size() < 8) free.push_back(std::move(ctx_));  // nested calls need one each
  }
  PooledContext(const PooledContext&) = delete;
  PooledContext& operator=(const PooledContext&) = delete;
  singa_kernel_context& get() { return *ctx_; }

 private:
  static std::vector<std::unique_ptr<singa_kernel_context>>& pool() {
    thread_local std::vector<std::unique_ptr<singa_kernel_context>> free;
    return free;
  }
  std::unique_ptr<singa_kernel_context> ctx_;
};

}  // namespace

void Executor::run_kernel(const ExecNode& e, size_t i, std::vector<Value>& env, bool keep_all,
                          const std::shared_ptr<Storage>& arena, RunStream& rs) const {
  const graph::Node& n = *e.node;
  PooledContext pooled;
  singa_kernel_context& ctx = pooled.get();
  KernelCall& call = ctx.call;
  // Work queued on the stream may still read or write this call's device
  // tensors after compute returns: they live until the stream is past it.
  struct KeepOnExit {
    RunStream& rs;
    KernelCall& c;
    ~KeepOnExit() {
      for (const auto* list : {&c.inputs, &c.outputs, &c.workspaces})
        for (const Tensor& t : *list) rs.keep(t);
    }
  } keep_on_exit{rs, call};
  call.stream = rs.stream_for(e.device, e.device_id);
  call.node_name = &n.proto.name();
  call.device = e.device;
  call.device_id = e.device_id;
  call.pool = e.device->has_parallel_for() ? e.device : nullptr;
  call.max_tensor_bytes = max_bytes_;
  if (arena && !e.planned.empty()) {
    call.arena = &arena;
    call.planned = &e.planned;
  }
  call.inputs.resize(n.inputs.size());
  for (size_t j = 0; j < n.inputs.size(); ++j) {
    int v = n.inputs[j];
    if (v < 0) continue;
    const graph::Value& gv = g_.values[size_t(v)];
    const Value& val = env[size_t(v)];
    // Initializers that no input overrides are read in place (env_constants_).
    const bool constant = gv.is_initializer && !gv.is_input;
    if (!constant && !val.is_tensor())
      throw Error(val.is_none() && gv.kind == graph::TypeKind::kTensor ? SINGA_INTERNAL : SINGA_INVALID_ARGUMENT,
                  g_.source + ": " + n.label + ": input '" + gv.name + "' is " +
                      (val.is_none() ? std::string("not available") : val.describe() + ", but this op takes tensors"));
    const Tensor& t = constant ? gv.constant : val.tensor();
    bool host = e.host_inputs[j] || e.device->host_addressable();
    auto cached = host ? device_constants_.end() : device_constants_.find({v, e.device});
    call.inputs[j] = host ? rs.to_host(t) : cached != device_constants_.end() ? cached->second : rs.to_device(t, e.device, e.device_id);
  }
  // In place: input 0 dies here and nobody else holds it.
  int v0 = n.inputs.empty() ? -1 : n.inputs[0];
  if ((e.kernel->def.flags & SINGA_KERNEL_MAY_INPLACE) && v0 >= 0 && !keep_all && last_use_[size_t(v0)] == int(i) &&
      !g_.values[size_t(v0)].is_output && !g_.values[size_t(v0)].is_initializer && !g_.values[size_t(v0)].is_input &&
      !g_.values[size_t(v0)].is_outer && std::count(n.inputs.begin(), n.inputs.end(), v0) == 1 &&
      call.inputs[0].storage().use_count() <= 3) {  // env, call, this temporary
    env[size_t(v0)] = Value();
    call.inplace_allowed = true;
  }
  call.input_views.resize(call.inputs.size());
  for (size_t j = 0; j < call.inputs.size(); ++j)
    if (call.inputs[j].defined()) call.input_views[j] = call.inputs[j].dl();
  call.outputs.resize(n.outputs.size());
  call.output_views.resize(n.outputs.size());
  if (call.stream) rs.queued();
  singa_status* st = e.kernel->def.compute(e.state, &ctx);
  if (st) throw_status(st, g_.source + ": " + n.label);  // the message is built only on failure
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    int v = n.outputs[k];
    if (v < 0) continue;
    if (!call.outputs[k].defined()) {
      if (g_.values[size_t(v)].is_output || !g_.values[size_t(v)].consumers.empty())
        throw Error(SINGA_INTERNAL, g_.source + ": " + n.label + ": the kernel produced no output " + std::to_string(k) + " ('" +
                                        g_.values[size_t(v)].name + "')");
      continue;
    }
    if (call.outputs[k].dtype() == SINGA_ONNX_STRING) call.outputs[k].own_strings();
    env[size_t(v)] = std::move(call.outputs[k]);
  }
}

}  // namespace singa
