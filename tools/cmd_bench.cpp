// `singa bench MODEL`: prepares a model once, runs it on random inputs and
// reports latency (median/min/mean over the timed iterations), the prepare
// time and the process's peak resident memory.
#include "cli.hpp"
#include "json.hpp"

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <random>

namespace singa {
namespace cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// ru_maxrss is in KiB on Linux.
double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

int parse_positive(const po::variables_map& vm, const char* name, int dflt, int min) {
  int v = vm.count(name) ? vm[name].as<int>() : dflt;
  if (v < min) throw UsageError(std::string("bench: --") + name + " must be >= " + std::to_string(min) + ", got " + std::to_string(v));
  return v;
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> dims;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) throw UsageError("--dim expects NAME=VALUE, got '" + item + "'");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || v < 1) throw UsageError("--dim " + name + ": '" + value + "' is not a size >= 1");
    dims[name] = v;
  }
  return dims;
}

// The batch size binds the leading symbolic dimension of every input; other
// symbolic dimensions come from --dim (1 when not given).
Shape input_shape(const onnx::ValueInfo& vi, int64_t batch, const std::map<std::string, int64_t>& dims) {
  if (!vi.rank_known) throw UsageError("bench: the model does not declare the shape of input '" + vi.name + "'");
  Shape s;
  for (size_t i = 0; i < vi.dims.size(); ++i) {
    if (vi.dims[i] >= 0) {
      s.push_back(vi.dims[i]);
      continue;
    }
    const std::string sym = i < vi.dim_names.size() ? vi.dim_names[i] : "";
    auto it = dims.find(sym);
    s.push_back(it != dims.end() ? it->second : i == 0 ? batch : 1);
  }
  return s;
}

// Floats uniform in [0,1); integers small and non-negative so index-like
// inputs (token ids, Gather indices) stay in range.
Tensor random_input(const onnx::ValueInfo& vi, const Shape& shape, std::mt19937_64& rng) {
  Tensor t(shape, vi.dtype);
  const int64_t n = t.numel();
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 3);
  switch (vi.dtype) {
    case SINGA_ONNX_FLOAT: for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = unit(rng); break;
    case SINGA_ONNX_DOUBLE: for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = unit(rng); break;
    case SINGA_ONNX_INT64: for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = small(rng); break;
    case SINGA_ONNX_INT32: for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = small(rng); break;
    case SINGA_ONNX_BOOL: for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = small(rng) & 1; break;
    default:
      throw Error(SINGA_INVALID_ARGUMENT, "bench: input '" + vi.name + "' has element type " + dtype_name(vi.dtype) +
                                              "; bench makes random float, double, int32, int64 and bool inputs only");
  }
  return t;
}

// Per-op-type and per-node time over `runs` profiled runs, heaviest first.
struct Profile {
  struct Row {
    std::string name, op_type, device;
    double ms = 0;  // per run
    int nodes = 0;
  };
  std::vector<Row> by_op, by_node;
  double total_ms = 0;  // per run, sum of the nodes
};

Profile profile_runs(const onnx::Rep& rep, const std::vector<Tensor>& inputs, int runs) {
  std::map<std::string, Profile::Row> ops;
  std::vector<Profile::Row> nodes;
  onnx::RunOptions ro;
  std::vector<onnx::NodeTiming> t;
  ro.profile = &t;
  for (int r = 0; r < runs; ++r) {
    t.clear();
    rep.run(inputs, ro);
    if (nodes.empty())
      for (const auto& n : t) nodes.push_back({n.node, n.op_type, n.device, 0, 1});
    for (size_t i = 0; i < t.size() && i < nodes.size(); ++i) nodes[i].ms += t[i].ms / runs;
  }
  Profile p;
  for (const auto& n : nodes) {
    auto& o = ops[n.op_type];
    o.op_type = n.op_type;
    o.ms += n.ms;
    o.nodes += 1;
    p.total_ms += n.ms;
  }
  for (auto& [k, o] : ops) p.by_op.push_back(o);
  auto heavier = [](const Profile::Row& a, const Profile::Row& b) { return a.ms > b.ms; };
  std::sort(p.by_op.begin(), p.by_op.end(), heavier);
  p.by_node = nodes;
  std::stable_sort(p.by_node.begin(), p.by_node.end(), heavier);
  return p;
}

void print_profile(const Profile& p, size_t top_nodes, std::ostream& os) {
  auto pct = [&](double ms) { return p.total_ms > 0 ? 100.0 * ms / p.total_ms : 0.0; };
  char line[256];
  os << "profile:    " << p.total_ms << " ms per run in nodes (each node timed, its device synchronized)\n";
  std::snprintf(line, sizeof line, "  %-28s %6s %10s %7s\n", "op type", "nodes", "ms/run", "share");
  os << line;
  for (const auto& o : p.by_op) {
    std::snprintf(line, sizeof line, "  %-28s %6d %10.3f %6.1f%%\n", o.op_type.c_str(), o.nodes, o.ms, pct(o.ms));
    os << line;
  }
  os << "  heaviest nodes:\n";
  for (size_t i = 0; i < p.by_node.size() && i < top_nodes; ++i) {
    const auto& n = p.by_node[i];
    std::snprintf(line, sizeof line, "  %-52s %-12s %8.3f %6.1f%%\n", (n.name.empty() ? "(unnamed)" : n.name).c_str(), n.op_type.c_str(),
                  n.ms, pct(n.ms));
    os << line;
  }
}

std::string profile_json(const Profile& p) {
  std::vector<std::string> ops;
  for (const auto& o : p.by_op) {
    JsonObject j;
    j.str("op_type", o.op_type).integer("nodes", o.nodes).num("ms", o.ms);
    ops.push_back(j.dump());
  }
  std::vector<std::string> nodes;
  for (const auto& n : p.by_node) {
    JsonObject j;
    j.str("node", n.name).str("op_type", n.op_type).str("device", n.device).num("ms", n.ms);
    nodes.push_back(j.dump());
  }
  JsonObject j;
  j.num("total_ms", p.total_ms).raw("by_op", json_array(ops)).raw("nodes", json_array(nodes));
  return j.dump();
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  CommandSpec spec{"bench", "MODEL [--threads N] [--iters K] [--warmup W] [--batch B] [--dim NAME=V] [--profile[=N]] [--json]",
                   "Times a model on random inputs: prepares it once (timed), runs W untimed warm-up iterations,\n"
                   "then K timed ones, and prints the median, min and mean latency, the prepare time and the\n"
                   "process's peak resident memory (getrusage). The leading symbolic dimension of each input is\n"
                   "bound to B; other symbolic dimensions take --dim values (1 when not given). --profile then\n"
                   "runs K more times timing every node (not counted in the latency) and prints where the time\n"
                   "goes, by op type and by node."};
  po::options_description own("Options");
  own.add_options()("iters", po::value<int>(), "timed iterations (default 20)")(
      "warmup", po::value<int>(), "untimed iterations first (default 3)")("batch", po::value<int>(), "batch size (default 1)")(
      "dim", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE for a symbolic dimension (repeatable)")(
      "no-optimize", "skip the graph passes (constant folding, fusions)")(
      "no-memory-plan", "allocate every intermediate on its own instead of in the planned arena")(
      "profile", po::value<int>()->implicit_value(15), "also time each node over K more runs; show the N heaviest nodes (default 15)")(
      "json", "print one JSON line");
  Parsed p = parse_command(spec, args, own, "model");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  if (!p.vm.count("model")) throw UsageError("bench: a MODEL file is required");
  auto models = p.vm["model"].as<std::vector<std::string>>();
  if (models.size() != 1) throw UsageError("bench: give exactly one MODEL file");
  const std::string path = models[0];
  const int iters = parse_positive(p.vm, "iters", 20, 1);
  const int warmup = parse_positive(p.vm, "warmup", 3, 0);
  const int batch = parse_positive(p.vm, "batch", 1, 1);
  std::map<std::string, int64_t> dims;
  if (p.vm.count("dim")) dims = parse_dims(p.vm["dim"].as<std::vector<std::string>>());
  const bool json = p.vm.count("json") > 0;

  load_runtime(p.global);
  onnx::PrepareOptions popts;
  apply_prepare_options(p.global, popts);
  popts.optimize = p.vm.count("no-optimize") == 0;
  popts.memory_plan = p.vm.count("no-memory-plan") == 0;
  const double rss_before = peak_rss_mib();
  auto t0 = Clock::now();
  ::onnx::ModelProto model = onnx::load_model(path);
  // Binding the symbolic dims at prepare time lets the passes fold shape
  // arithmetic and the kernels plan for the real shapes.
  for (const auto& in : model.graph().input()) {
    if (!in.type().has_tensor_type()) continue;
    const auto& shape = in.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d) {
      const std::string& sym = shape.dim(d).dim_param();
      if (sym.empty() || popts.dims.count(sym)) continue;
      auto it = dims.find(sym);
      if (it != dims.end()) popts.dims[sym] = it->second;
      else if (d == 0) popts.dims[sym] = batch;
    }
  }
  auto rep = onnx::prepare_at(std::move(model), popts, path, std::filesystem::path(path).parent_path().string());
  const double prepare_ms = ms_since(t0);

  std::mt19937_64 rng(42);
  std::vector<Tensor> inputs;
  std::string shapes;
  for (const auto& vi : rep->inputs()) {
    Shape s = input_shape(vi, batch, dims);
    inputs.push_back(random_input(vi, s, rng));
    shapes += (shapes.empty() ? "" : ", ") + vi.name + shape_to_string(s);
  }
  for (int i = 0; i < warmup; ++i) rep->run(inputs);
  std::vector<double> times;
  times.reserve(size_t(iters));
  for (int i = 0; i < iters; ++i) {
    auto t = Clock::now();
    rep->run(inputs);
    times.push_back(ms_since(t));
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const double mean = std::accumulate(times.begin(), times.end(), 0.0) / double(n);
  const double rss = peak_rss_mib();
  const singa::onnx::MemoryPlanInfo plan = rep->memory_plan();
  const singa::onnx::ShapeCacheInfo shapes_cache = rep->shape_cache();  // symbolic dims left unbound
  constexpr double kMiB = 1024.0 * 1024.0;
  const int top_nodes = p.vm.count("profile") ? std::max(0, p.vm["profile"].as<int>()) : -1;
  Profile prof;
  if (top_nodes >= 0) prof = profile_runs(*rep, inputs, iters);

  if (json) {
    JsonObject o;
    o.str("model", path).str("device", p.global.device).integer("threads", p.global.threads).integer("batch", batch);
    o.integer("iters", iters).integer("warmup", warmup).str("inputs", shapes);
    o.num("median_ms", median).num("min_ms", sorted.front()).num("mean_ms", mean).num("prepare_ms", prepare_ms);
    o.num("peak_rss_mib", rss).num("rss_before_prepare_mib", rss_before).boolean("optimized", popts.optimize);
    o.num("arena_mib", double(plan.arena_bytes) / kMiB).integer("planned_values", int64_t(plan.planned_values));
    o.num("planned_mib", double(plan.planned_bytes) / kMiB);
    o.integer("shape_plans", int64_t(shapes_cache.entries)).integer("shape_plan_hits", int64_t(shapes_cache.hits));
    o.integer("shape_plan_misses", int64_t(shapes_cache.misses));
    if (top_nodes >= 0) o.raw("profile", profile_json(prof));
    std::cout << o.dump() << "\n";
    return kExitOk;
  }
  std::cout << "model:      " << path << "\n"
            << "inputs:     " << shapes << "\n"
            << "device:     " << p.global.device << " (threads " << (p.global.threads > 0 ? std::to_string(p.global.threads) : "auto")
            << ")\n"
            << "prepare:    " << prepare_ms << " ms" << (popts.optimize ? "" : " (passes off)") << "\n"
            << "latency:    median " << median << " ms, min " << sorted.front() << " ms, mean " << mean << " ms (" << iters
            << " iterations after " << warmup << " warm-up)\n"
            << "throughput: " << 1000.0 * batch / median << " samples/s\n"
            << "peak RSS:   " << rss << " MiB (" << rss_before << " MiB before prepare)\n"
            << "memory:     " << plan.planned_values << " intermediates planned into a " << double(plan.arena_bytes) / kMiB
            << " MiB arena (" << double(plan.planned_bytes) / kMiB << " MiB as separate buffers)\n";
  if (shapes_cache.capacity > 0)
    std::cout << "shapes:     " << shapes_cache.entries << " plan(s) specialized per input shape (of " << shapes_cache.capacity
              << " kept), " << shapes_cache.hits << " hits, " << shapes_cache.misses << " misses\n";
  if (top_nodes >= 0) print_profile(prof, size_t(top_nodes), std::cout);
  return kExitOk;
}

namespace {
const CommandRegistrar kBench("bench", cmd_bench, "times a model on random inputs (latency, prepare time, peak memory)");
}

}  // namespace cli
}  // namespace singa
