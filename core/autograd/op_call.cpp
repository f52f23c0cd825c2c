#include "op_call.hpp"

#include "../host.hpp"
#include "../env_options.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace singa {
namespace autograd {

const char* const kGradDomain = "ai.singa.grad";
const char* const kFusedDomain = "ai.singa";

namespace {

// One created kernel instance. The node it was created from stays alive with
// it because kernels may keep pointers into it.
struct CachedKernel {
  const KernelEntry* kernel = nullptr;
  void* state = nullptr;
  Device* device = nullptr;
  ::onnx::NodeProto proto;
  singa_node info;
  std::string label;  // "op 'Conv' (opset 17)" for messages
};

singa_value_info info_of(const Tensor& t) {
  singa_value_info v{};
  v.struct_size = sizeof(v);
  v.onnx_dtype = t.dtype();
  // The rank is known but the dims are left open: one instance serves every
  // batch size, as a model with a symbolic batch dim would.
  v.ndim = int32_t(t.ndim());
  for (int i = 0; i < t.ndim() && i < SINGA_MAX_DIMS; ++i) v.dims[i] = -1;
  return v;
}

// The kernel-selection rule of the executor (version range, device, type
// constraints), restricted to the CPU and to the dtypes of the inputs.
// TODO(lead): share one selection function with core/executor.cpp.
const KernelEntry* select(const std::string& domain, const std::string& op, int64_t opset,
                          const std::vector<Tensor>& inputs, const std::string& label) {
  const auto& all = Runtime::instance().kernels(domain, op);
  if (all.empty())
    throw Error(SINGA_NOT_FOUND, label + ": no loaded plugin implements this op (see `singa plugins`)");
  std::string why = "no kernel for this opset on the cpu";
  for (auto* k : all) {
    if (k->device != "cpu" || opset < k->def.since_version || opset > k->last_opset) continue;
    bool ok = true;
    for (const auto& c : k->constraints) {
      if (c.index < 0 || size_t(c.index) >= inputs.size() || !inputs[size_t(c.index)].defined()) continue;
      int32_t t = inputs[size_t(c.index)].dtype();
      if (!(c.dtypes & SINGA_DTYPE_BIT(t))) {
        ok = false;
        why = std::string("no kernel for element type ") + c.name + "=" + dtype_name(t);
        break;
      }
    }
    if (ok) return k;
  }
  throw Error(SINGA_UNIMPLEMENTED, label + ": " + why);
}

class KernelCache {
 public:
  CachedKernel& get(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs) {
    std::string key = node.SerializeAsString();
    key += '|' + std::to_string(opset);
    for (const Tensor& t : inputs)
      key += t.defined() ? "|" + std::to_string(t.dtype()) + ":" + std::to_string(t.ndim()) : std::string("|-");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return *it->second;
    auto c = std::make_unique<CachedKernel>();
    c->proto = node;
    const std::string& dom = node.domain();
    c->label = "op '" + node.op_type() + "'" + (dom.empty() ? "" : " of domain '" + dom + "'") + " (opset " +
               std::to_string(opset) + ")";
    c->kernel = select(dom, node.op_type(), opset, inputs, c->label);
    c->device = Runtime::instance().device(c->kernel->device);
    singa_node& info = c->info;
    info.proto = &c->proto;
    info.opset = opset;
    for (const Tensor& t : inputs) {
      info.input_present.push_back(t.defined());
      info.inputs.push_back(t.defined() ? info_of(t) : singa_value_info{sizeof(singa_value_info), 0, -1, {}});
      info.constants.push_back(nullptr);
    }
    for (const auto& name : node.output()) {
      info.output_present.push_back(!name.empty());
      info.outputs.push_back(singa_value_info{sizeof(singa_value_info), 0, -1, {}});
    }
    throw_status(c->kernel->def.create(c->kernel->def.user, &c->info, &c->state), c->label);
    return *map_.emplace(std::move(key), std::move(c)).first->second;
  }

 private:
  std::mutex mu_;
  // Instances live as long as the process: the plugins that own their code
  // may be unloaded before static destructors would run.
  std::unordered_map<std::string, std::unique_ptr<CachedKernel>> map_;
};

KernelCache& cache() {
  static KernelCache* c = new KernelCache();
  return *c;
}

// Option core.op_profile=1 (read at the first eager op): time spent per op (inside the kernel, and in call_op
// around it), printed to stderr at exit. Off, it costs one branch per call.
class Profile {
 public:
  static Profile* get() {
    static Profile* p = [] {
      if (!runtime_flag("core.op_profile", false)) return static_cast<Profile*>(nullptr);
      Profile* p = new Profile();
      std::atexit([] { get()->print(); });
      return p;
    }();
    return p;
  }
  void add(const std::string& label, double total, double kernel) {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[label];
    e.calls += 1, e.total += total, e.kernel += kernel;
  }

 private:
  struct Entry {
    int64_t calls = 0;
    double total = 0, kernel = 0;
  };
  void print() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<std::string, Entry>> v(entries_.begin(), entries_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
    double all = 0;
    for (auto& [l, e] : v) all += e.total;
    std::fprintf(stderr, "%-60s %8s %10s %10s %6s\n", "op", "calls", "total ms", "kernel ms", "%");
    for (auto& [l, e] : v)
      std::fprintf(stderr, "%-60s %8lld %10.2f %10.2f %6.1f\n", l.c_str(), (long long)e.calls, e.total * 1e3,
                   e.kernel * 1e3, all > 0 ? 100 * e.total / all : 0.0);
    std::fprintf(stderr, "%-60s %8s %10.2f\n", "all eager ops", "", all * 1e3);
  }
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A kernel call on the instance's device with `inputs` (copied to the host
// when elsewhere) and room for `num_outputs` outputs.
void prepare_call(const CachedKernel& c, const std::vector<Tensor>& inputs, size_t num_outputs, KernelCall& call) {
  call.node_name = &c.proto.name();
  call.device = c.device;
  call.pool = c.device && c.device->has_parallel_for() ? c.device : nullptr;
  call.max_tensor_bytes = size_t(16) << 30;
  call.inputs.resize(inputs.size());
  call.input_views.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    call.inputs[i] = inputs[i].on_host() ? inputs[i] : inputs[i].to_host();
    call.input_views[i] = call.inputs[i].dl();
  }
  call.outputs.resize(num_outputs);
  call.output_views.resize(num_outputs);
}

CachedKernel& cached(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs) {
  Runtime& rt = Runtime::instance();
  if (!rt.loaded()) rt.load();
  return cache().get(node, opset, inputs);
}

}  // namespace

KernelInstance kernel_for(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs) {
  CachedKernel& c = cached(node, opset, inputs);
  return KernelInstance{c.kernel, c.state, &c.label};
}

std::vector<Tensor> call_backward(const KernelInstance& instance, const std::vector<Tensor>& inputs,
                                  size_t num_outputs) {
  const singa_gradient_def* g = instance.kernel->def.gradient;
  if (!g || !SINGA_HAS_FIELD(g, singa_gradient_def, backward) || !g->backward)
    throw Error(SINGA_INTERNAL, *instance.label + ": the kernel has no backward kernel");
  CachedKernel c;
  c.device = Runtime::instance().device(instance.kernel->device);
  singa_kernel_context ctx;
  prepare_call(c, inputs, num_outputs, ctx.call);
  throw_status(g->backward(instance.state, &ctx), *instance.label + " backward kernel");
  return std::move(ctx.call.outputs);
}

std::vector<Tensor> call_op(const ::onnx::NodeProto& node, int64_t opset, const std::vector<Tensor>& inputs) {
  Profile* prof = Profile::get();
  const Clock::time_point t0 = prof ? Clock::now() : Clock::time_point();
  CachedKernel& c = cached(node, opset, inputs);
  singa_kernel_context ctx;
  KernelCall& call = ctx.call;
  prepare_call(c, inputs, size_t(node.output_size()), call);
  const Clock::time_point t1 = prof ? Clock::now() : Clock::time_point();
  throw_status(c.kernel->def.compute(c.state, &ctx), c.label);
  const double kernel = prof ? since(t1) : 0.0;
  for (int k = 0; k < node.output_size(); ++k)
    if (!node.output(k).empty() && !call.outputs[size_t(k)].defined())
      throw Error(SINGA_INTERNAL, c.label + ": the kernel produced no output " + std::to_string(k));
  if (prof) prof->add(c.label, since(t0), kernel);
  return std::move(call.outputs);
}

}  // namespace autograd
}  // namespace singa
