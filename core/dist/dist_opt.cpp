// DistOpt: averages gradients over the ranks in buckets that start while
// backward is still running, then lets the wrapped optimizer update.
#include "buckets.hpp"
#include "half.hpp"
#include "nccl.hpp"

#include <singa/dist.hpp>
#include <singa/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>

namespace singa {
namespace dist {

namespace {
using Clock = std::chrono::steady_clock;

std::string describe(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape()); }

// Tensors by name as bytes (name, dtype, shape, data), to broadcast state.
void put(std::string& s, const void* p, size_t n) { s.append(static_cast<const char*>(p), n); }
std::string pack_tensors(const std::map<std::string, Tensor>& m) {
  std::string s;
  for (const auto& [name, t0] : m) {
    Tensor t = t0.to_host();
    const uint64_t nl = name.size(), nd = t.shape().size(), nb = t.nbytes();
    const int32_t dt = t.dtype();
    put(s, &nl, 8), put(s, name.data(), nl), put(s, &dt, 4), put(s, &nd, 8);
    put(s, t.shape().data(), nd * 8), put(s, &nb, 8), put(s, t.raw_data(), nb);
  }
  return s;
}
std::map<std::string, Tensor> unpack_tensors(const std::string& s) {
  std::map<std::string, Tensor> m;
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (at + n > s.size()) throw Error(SINGA_INTERNAL, "DistOpt: broadcast state is truncated");
    std::memcpy(p, s.data() + at, n);
    at += n;
  };
  while (at < s.size()) {
    uint64_t nl, nd, nb;
    int32_t dt;
    get(&nl, 8);
    std::string name(static_cast<size_t>(nl), 0);
    get(name.data(), nl), get(&dt, 4), get(&nd, 8);
    Shape shape(static_cast<size_t>(nd));
    get(shape.data(), nd * 8), get(&nb, 8);
    Tensor t(shape, dt);
    if (t.nbytes() != nb) throw Error(SINGA_INTERNAL, "DistOpt: broadcast state of '" + name + "' has the wrong size");
    get(t.raw_data(), nb);
    m[name] = t;
  }
  return m;
}
}  // namespace

struct DistOpt::Impl {
  optim::Optimizer& opt;
  std::shared_ptr<Communicator> comm;
  DistOptions o;
  struct Param {
    std::string name;
    Variable var;
    int64_t numel;
  };
  std::vector<Param> params;
  std::unordered_map<const void*, size_t> index;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<bool> present;
  std::vector<std::vector<float>> residual;  // per bucket, sparse modes
  size_t next_start = 0;
  bool in_backward = false;
  Mode mode = Mode::kFp32;
  double scale = 1;
  bool clipping = false;
  float clip = 100;
  int64_t step = 0, partial = 0;
  StepStats stats;
  std::unique_ptr<NcclComm> nccl;  // when every parameter lives on one CUDA device
  bool nccl_tried = false;

  Impl(optim::Optimizer& opt, std::shared_ptr<Communicator> c, DistOptions options)
      : opt(opt), comm(c ? std::move(c) : world()), o(options) {
    comm->set_timeout(o.timeout_seconds);
    std::vector<int64_t> numels;
    std::string mine;
    for (const auto& [name, v] : opt.params()) {
      mine += name + " " + describe(v.data()) + (v.requires_grad() ? "" : " frozen") + "\n";
      if (!v.requires_grad()) continue;
      if (v.dtype() != SINGA_ONNX_FLOAT)
        throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: parameter '" + name + "' is " + dtype_name(v.dtype()) +
                                                "; only float32 parameters are averaged across ranks");
      index[v.id()] = params.size();
      params.push_back({name, v, v.data().numel()});
      numels.push_back(v.data().numel());
    }
    check_same_everywhere(mine);
    buckets = make_buckets(numels, o.bucket_bytes, bucket_of);
    residual.resize(buckets.size());
  }

  // Every rank must hold the same parameters (names, shapes, types), or the
  // collectives would mix unrelated values.
  void check_same_everywhere(const std::string& mine) {
    auto all = comm->allgather_bytes(mine, "DistOpt: comparing the parameters of the ranks");
    for (size_t r = 1; r < all.size(); ++r) {
      if (all[r] == all[0]) continue;
      auto lines = [](const std::string& s) {
        std::vector<std::string> v;
        size_t at = 0;
        for (size_t nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1) v.push_back(s.substr(at, nl - at));
        return v;
      };
      auto a = lines(all[0]), b = lines(all[r]);
      std::string diff;
      for (size_t i = 0; i < std::max(a.size(), b.size()) && diff.empty(); ++i) {
        std::string x = i < a.size() ? a[i] : "(none)", y = i < b.size() ? b[i] : "(none)";
        if (x != y) diff = "rank 0 has '" + x + "', rank " + std::to_string(r) + " has '" + y + "'";
      }
      throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: the parameters of rank " + std::to_string(r) +
                                              " differ from rank 0's (" + std::to_string(b.size()) + " vs " +
                                              std::to_string(a.size()) + " parameters): " + diff);
    }
  }

  bool use_nccl() {
    if (!nccl_tried) {
      nccl_tried = true;
      bool all_cuda = !params.empty();
      int dev = -1;
      for (auto& p : params) {
        const Tensor& t = p.var.data();
        all_cuda = all_cuda && !t.on_host() && t.device_name().rfind("cuda", 0) == 0 && (dev < 0 || dev == t.device_id());
        dev = t.device_id();
      }
      if (all_cuda && have_nccl()) nccl = NcclComm::create(*comm, dev);
    }
    return nccl != nullptr;
  }

  // ---- one step
  void begin(Mode m, double weight) {
    mode = m;
    scale = weight;
    stats = StepStats{};
    next_start = 0;
    present.assign(params.size(), false);
    for (auto& b : buckets) b.ready = 0, b.started = false, b.ticket = -1, b.on_device = false;
  }

  void on_final(const Variable& v) {
    auto it = index.find(v.id());
    if (it == index.end()) return;
    Bucket& b = buckets[bucket_of[it->second]];
    if (++b.ready < b.params.size()) return;
    while (next_start < buckets.size() && buckets[next_start].ready >= buckets[next_start].params.size()) {
      start(next_start++);
      if (in_backward) ++stats.started_during_backward;
    }
    comm->progress();
  }

  // Packs bucket k's gradients and starts its all-reduce (dense modes) or
  // keeps them for the sparse exchange.
  void start(size_t k) {
    Bucket& b = buckets[k];
    b.started = true;
    ++stats.buckets;
    const bool nccl_path = mode == Mode::kFp32 && scale == 1 && use_nccl();
    if (nccl_path) {
      b.on_device = true;
      std::vector<std::pair<void*, int64_t>> bufs;
      for (size_t j = 0; j < b.params.size(); ++j) {
        Param& p = params[b.params[j]];
        Tensor g = p.var.grad();
        present[b.params[j]] = g.defined();
        // Eager backward leaves gradients in host memory; NCCL needs them on the parameter's GPU.
        g = (g.defined() ? (g.on_host() ? g : g.clone()) : Tensor::zeros(p.var.shape(), SINGA_ONNX_FLOAT)).to(p.var.data().device(), p.var.data().device_id());
        p.var.set_grad(g);
        bufs.push_back({g.raw_data(), p.numel});
      }
      nccl->allreduce_avg(bufs, "all-reduce of bucket " + std::to_string(k));
      stats.bytes_sent += b.count * 4;
      return;
    }
    b.f32.assign(size_t(b.count), 0.0f);
    const bool sparse = mode == Mode::kSparseTopK || mode == Mode::kSparseThreshold;
    // Dense modes average by summing gradient / N; sparse modes select on
    // this rank's own (weighted) gradient and divide after the exchange.
    const float s = float(sparse ? scale : scale / comm->size());
    for (size_t j = 0; j < b.params.size(); ++j) {
      Param& p = params[b.params[j]];
      Tensor g = p.var.grad();
      if (!g.defined()) continue;
      if (g.shape() != p.var.shape() || g.dtype() != SINGA_ONNX_FLOAT)
        throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: the gradient of '" + p.name + "' is " + describe(g) +
                                                ", its parameter " + describe(p.var.data()));
      g = g.to_host();
      present[b.params[j]] = true;
      const float* src = g.data<float>();
      float* dst = b.f32.data() + b.offsets[j];
      for (int64_t i = 0; i < p.numel; ++i) dst[i] = src[i] * s;
    }
    if (sparse) return;
    if (mode == Mode::kFp16) {
      b.f16.resize(size_t(b.count));
      if (clipping) {
        const float n = float(comm->size());
        for (float& x : b.f32) x = std::min(clip, std::max(-clip, x * n)) / n;
      }
      floats_to_halves(b.f32.data(), b.f16.data(), b.count);
      b.ticket = comm->start_allreduce(b.f16.data(), b.count, Elem::kFloat16);
      stats.bytes_sent += b.count * 2;
    } else {
      b.ticket = comm->start_allreduce(b.f32.data(), b.count, Elem::kFloat32);
      stats.bytes_sent += b.count * 4;
    }
  }

  // After backward: starts what is left, checks that every rank is at the
  // same step, waits, and hands the averaged gradients to the parameters.
  void finish() {
    auto t0 = Clock::now();
    while (next_start < buckets.size()) start(next_start++);
    // Which ranks had which gradients, and whether all are at the same step.
    std::string rec(8 + params.size(), '\0');
    std::memcpy(rec.data(), &step, 8);
    for (size_t i = 0; i < params.size(); ++i) rec[8 + i] = present[i] ? 1 : 0;
    std::string all(rec.size() * size_t(comm->size()), '\0');
    comm->allgather(rec.data(), rec.size(), all.data(), "DistOpt step " + std::to_string(step) + ": comparing steps");
    std::vector<bool> any(params.size(), false);
    for (int r = 0; r < comm->size(); ++r) {
      int64_t s;
      std::memcpy(&s, all.data() + size_t(r) * rec.size(), 8);
      if (s != step)
        throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: rank " + std::to_string(r) + " is at step " + std::to_string(s) +
                                                ", rank " + std::to_string(comm->rank()) + " at step " + std::to_string(step));
      for (size_t i = 0; i < params.size(); ++i) any[i] = any[i] || all[size_t(r) * rec.size() + 8 + i];
    }
    const bool sparse = mode == Mode::kSparseTopK || mode == Mode::kSparseThreshold;
    if (sparse) exchange_sparse();
    for (size_t k = 0; k < buckets.size(); ++k) {
      Bucket& b = buckets[k];
      if (b.ticket >= 0) comm->wait(b.ticket, "DistOpt step " + std::to_string(step) + ": all-reduce of gradient bucket " +
                                                  std::to_string(k) + " of " + std::to_string(buckets.size()));
      if (b.on_device) {  // not b.f32.empty(): a host-path step before this one left it filled
        for (size_t j = 0; j < b.params.size(); ++j)
          if (!any[b.params[j]]) params[b.params[j]].var.zero_grad();
        continue;
      }
      for (size_t j = 0; j < b.params.size(); ++j) {
        Param& p = params[b.params[j]];
        if (!any[b.params[j]]) {
          p.var.zero_grad();
          continue;
        }
        Tensor g(p.var.shape(), SINGA_ONNX_FLOAT);
        float* dst = g.data<float>();
        if (mode == Mode::kFp16)
          for (int64_t i = 0; i < p.numel; ++i) dst[i] = half_to_float(b.f16[size_t(b.offsets[j] + i)]);
        else
          std::memcpy(dst, b.f32.data() + b.offsets[j], size_t(p.numel) * 4);
        const Tensor& d = p.var.data();
        p.var.set_grad(d.on_host() ? g : g.to(d.device(), d.device_id()));
      }
    }
    if (nccl) nccl->wait("DistOpt step " + std::to_string(step) + ": NCCL all-reduce", comm->timeout());
    stats.wait_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // Sparse modes: every rank's selected (index, value) pairs, summed.
  void exchange_sparse() {
    const bool top_k = mode == Mode::kSparseTopK;
    std::vector<int32_t> idx;
    std::vector<float> val;
    int64_t base = 0;
    for (size_t k = 0; k < buckets.size(); ++k) {
      Bucket& b = buckets[k];
      auto& res = residual[k];
      if (corr && res.size() == b.f32.size())
        for (size_t i = 0; i < res.size(); ++i) b.f32[i] += res[i];
      select_sparse(b.f32, top_k, spars, base, idx, val);
      if (corr) res = b.f32;  // what was not sent waits for the next step
      base += b.count;
    }
    std::string mine(idx.size() * 8, '\0');
    for (size_t i = 0; i < idx.size(); ++i) {
      std::memcpy(&mine[i * 8], &idx[i], 4);
      std::memcpy(&mine[i * 8 + 4], &val[i], 4);
    }
    stats.bytes_sent += int64_t(mine.size());
    auto all = comm->allgather_bytes(mine, "DistOpt step " + std::to_string(step) + ": sparse gradient exchange");
    std::vector<float> dense(size_t(base), 0.0f);
    for (const auto& s : all)
      for (size_t i = 0; i + 8 <= s.size(); i += 8) {
        int32_t j;
        float x;
        std::memcpy(&j, &s[i], 4);
        std::memcpy(&x, &s[i + 4], 4);
        if (j < 0 || j >= base) throw Error(SINGA_INTERNAL, "DistOpt: sparse index out of range from another rank");
        dense[size_t(j)] += x;
      }
    const float inv = 1.0f / float(comm->size());
    base = 0;
    for (auto& b : buckets) {
      for (int64_t i = 0; i < b.count; ++i) b.f32[size_t(i)] = dense[size_t(base + i)] * inv;
      base += b.count;
    }
  }
  bool corr = true;
  float spars = 0.05f;

  void run(Mode m, const Variable& loss, double weight) {
    if (!(weight >= 0)) throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: the gradient weight must not be negative");
    begin(m, weight);
    in_backward = true;
    try {
      autograd::backward(loss, {}, [this](const Variable& v) { on_final(v); });
    } catch (...) {
      in_backward = false;
      throw;
    }
    in_backward = false;
    finish();
    opt.step();
    ++step;
  }

  // Averages the values of the parameters of bucket k (all when k < 0).
  void average_values(long k) {
    const float inv = 1.0f / float(comm->size());
    for (size_t q = 0; q < buckets.size(); ++q) {
      if (k >= 0 && q != size_t(k)) continue;
      Bucket& b = buckets[q];
      b.f32.assign(size_t(b.count), 0.0f);
      for (size_t j = 0; j < b.params.size(); ++j) {
        Tensor d = params[b.params[j]].var.data().to_host();
        const float* src = d.data<float>();
        for (int64_t i = 0; i < params[b.params[j]].numel; ++i) b.f32[size_t(b.offsets[j] + i)] = src[i] * inv;
      }
      comm->allreduce(b.f32.data(), b.count, Elem::kFloat32, "DistOpt: averaging the parameters of bucket " + std::to_string(q));
      stats.bytes_sent += b.count * 4;
      for (size_t j = 0; j < b.params.size(); ++j) {
        Param& p = params[b.params[j]];
        Tensor t(p.var.shape(), SINGA_ONNX_FLOAT);
        std::memcpy(t.raw_data(), b.f32.data() + b.offsets[j], size_t(p.numel) * 4);
        const Tensor& d = p.var.data();
        p.var.set_data(d.on_host() ? t : t.to(d.device(), d.device_id()));
      }
    }
  }
};

DistOpt::DistOpt(optim::Optimizer& opt, std::shared_ptr<Communicator> comm, DistOptions options)
    : impl_(std::make_unique<Impl>(opt, std::move(comm), options)) {}
DistOpt::~DistOpt() = default;

int DistOpt::rank() const { return impl_->comm->rank(); }
int DistOpt::world_size() const { return impl_->comm->size(); }
int DistOpt::local_rank() const { return impl_->comm->local_rank(); }
Communicator& DistOpt::communicator() { return *impl_->comm; }
optim::Optimizer& DistOpt::optimizer() { return impl_->opt; }
const StepStats& DistOpt::last_step() const { return impl_->stats; }

void DistOpt::backward_and_update(const Variable& loss, double weight) { impl_->run(Mode::kFp32, loss, weight); }

void DistOpt::backward_and_update_half(const Variable& loss, bool clipping, float clip_value, double weight) {
  if (clipping && !(clip_value > 0)) throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: clip_value must be positive");
  impl_->clipping = clipping;
  impl_->clip = clip_value;
  impl_->run(Mode::kFp16, loss, weight);
}

void DistOpt::backward_and_partial_update(const Variable& loss) {
  Impl& m = *impl_;
  m.begin(Mode::kPartial, 1);
  autograd::backward(loss);
  m.opt.step();  // every rank updates with its own gradient
  if (!m.buckets.empty()) {
    m.average_values(long(m.partial % int64_t(m.buckets.size())));
    ++m.partial;
    m.stats.buckets = 1;
  }
  ++m.step;
}

void DistOpt::backward_and_sparse_update(const Variable& loss, bool top_k, float spars, bool corr, double weight) {
  if (top_k ? !(spars > 0 && spars <= 1) : !(spars >= 0))
    throw Error(SINGA_INVALID_ARGUMENT, top_k ? "DistOpt: sparseTopK needs 0 < spars <= 1 (the share of values sent)"
                                              : "DistOpt: sparseThreshold needs spars >= 0 (the smallest |gradient| sent)");
  impl_->spars = spars;
  impl_->corr = corr;
  impl_->run(top_k ? Mode::kSparseTopK : Mode::kSparseThreshold, loss, weight);
}

void DistOpt::train_step(Mode mode, const Variable& loss, float spars, double weight) {
  switch (mode) {
    case Mode::kFp32: return backward_and_update(loss, weight);
    case Mode::kFp16: return backward_and_update_half(loss, false, 100, weight);
    case Mode::kPartial: return backward_and_partial_update(loss);
    case Mode::kSparseTopK: return backward_and_sparse_update(loss, true, spars, true, weight);
    case Mode::kSparseThreshold: return backward_and_sparse_update(loss, false, spars, true, weight);
  }
}

void DistOpt::broadcast_state(const NamedVariables& extra, int root) {
  Impl& m = *impl_;
  std::map<std::string, Tensor> tensors;
  for (const auto& [n, v] : m.opt.params()) tensors["param/" + n] = v.data();
  for (const auto& [n, v] : extra) tensors["extra/" + n] = v.data();
  std::string bytes;
  for (const auto& [n, t] : m.opt.state()) tensors["opt/" + n] = t;
  if (m.comm->rank() == root) bytes = pack_tensors(tensors);
  bytes = m.comm->broadcast_bytes(bytes, root, "DistOpt: broadcasting the state of rank " + std::to_string(root));
  if (m.comm->rank() == root) return;
  auto got = unpack_tensors(bytes);
  auto assign = [&](const NamedVariables& vars, const std::string& kind) {
    for (auto [n, v] : vars) {
      auto it = got.find(kind + n);
      if (it == got.end() || it->second.shape() != v.shape() || it->second.dtype() != v.dtype())
        throw Error(SINGA_INVALID_ARGUMENT, "DistOpt: rank " + std::to_string(root) + " has no " + kind + n + " like " +
                                                describe(v.data()));
      const Tensor& d = v.data();
      v.set_data(d.on_host() ? it->second : it->second.to(d.device(), d.device_id()));
    }
  };
  assign(m.opt.params(), "param/");
  assign(extra, "extra/");
  std::map<std::string, Tensor> st;
  for (const auto& [n, t] : got)
    if (n.rfind("opt/", 0) == 0) st[n.substr(4)] = t;
  m.opt.load_state(st);
}

void DistOpt::average_parameters() { impl_->average_values(-1); }

std::vector<double> DistOpt::sum(std::vector<double> values) {
  if (!values.empty()) impl_->comm->allreduce(values.data(), int64_t(values.size()), Elem::kFloat64, "DistOpt: summing metrics");
  return values;
}

}  // namespace dist
}  // namespace singa
