// Times one model at several values of a symbolic dimension, as a program
// that prepares once and then feeds inputs of changing shape does (singa
// bench binds every symbolic dimension at prepare instead). Prints one JSON
// line per (mode, value).
//
//   dyn_bench MODEL --dim seq --values 1,8,128 [--threads N] [--iters K]
//             [--warmup W] [--mode dynamic|bound] [--option KEY=VALUE ...]
//
// dynamic: one prepare with the dimension left symbolic, then every value in
//          turn (the shape cache, core.shape_cache, specializes per shape).
// bound:   one prepare per value with the dimension bound (PrepareOptions::dims),
//          the best case a specialization can reach.
// Other symbolic dims are 1. Inputs are random as in `singa bench`: floats in
// [0, 1), integers in 0..3.
#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace singa;
namespace so = singa::onnx;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::vector<Tensor> make_inputs(const so::Rep& rep, const std::string& dim, int64_t value) {
  std::mt19937_64 rng(42);
  std::vector<Tensor> out;
  for (const auto& vi : rep.inputs()) {
    Shape s;
    for (size_t i = 0; i < vi.dims.size(); ++i) s.push_back(vi.dims[i] >= 0 ? vi.dims[i] : vi.dim_names[i] == dim ? value : 1);
    Tensor t(s, vi.dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (vi.dtype == SINGA_ONNX_FLOAT) t.data<float>()[i] = float(rng() % 1000) / 1000.f;
      else if (vi.dtype == SINGA_ONNX_INT64) t.data<int64_t>()[i] = int64_t(rng() % 4);
      else throw Error(SINGA_INVALID_ARGUMENT, "dyn_bench: input '" + vi.name + "': only float and int64 inputs");
    }
    out.push_back(t);
  }
  return out;
}

void time_runs(const so::Rep& rep, const std::vector<Tensor>& in, int warmup, int iters, const std::string& head) {
  for (int i = 0; i < warmup; ++i) rep.run(in);
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto t0 = Clock::now();
    rep.run(in);
    t.push_back(ms_since(t0));
  }
  std::sort(t.begin(), t.end());
  const double median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  const so::ShapeCacheInfo c = rep.shape_cache();
  std::printf("{%s, \"median_ms\": %.4f, \"min_ms\": %.4f, \"cache_entries\": %zu, \"cache_hits\": %zu, \"cache_misses\": %zu}\n",
              head.c_str(), median, t.front(), c.entries, c.hits, c.misses);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, dim = "seq", mode = "dynamic";
  std::vector<int64_t> values{1, 8, 128};
  int threads = 1, iters = 200, warmup = 5;
  so::PrepareOptions base;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(SINGA_INVALID_ARGUMENT, a + " needs a value");
      return argv[++i];
    };
    if (a == "--dim") dim = next();
    else if (a == "--values") {
      values.clear();
      std::stringstream ss(next());
      for (std::string v; std::getline(ss, v, ',');) values.push_back(std::stoll(v));
    } else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--iters") iters = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--mode") mode = next();
    else if (a == "--option") {
      std::string kv = next();
      base.options[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    } else model = a;
  }
  try {
    base.threads = threads;
    std::string opt;
    for (const auto& [k, v] : base.options) opt += (opt.empty() ? "" : ",") + k + "=" + v;
    if (mode == "dynamic") {
      auto t0 = Clock::now();
      auto rep = so::prepare(model, base);
      const double prep = ms_since(t0);
      for (int64_t v : values) {
        std::ostringstream head;
        head << "\"mode\": \"dynamic\", \"options\": \"" << opt << "\", \"threads\": " << threads << ", \"" << dim << "\": " << v
             << ", \"prepare_ms\": " << prep;
        time_runs(*rep, make_inputs(*rep, dim, v), warmup, iters, head.str());
      }
    } else {
      // Every other symbolic dim is bound to 1, as make_inputs feeds it.
      auto probe = so::prepare(model, base);
      for (int64_t v : values) {
        so::PrepareOptions o = base;
        for (const auto& vi : probe->inputs())
          for (const auto& name : vi.dim_names)
            if (!name.empty()) o.dims[name] = name == dim ? v : 1;
        auto t0 = Clock::now();
        auto rep = so::prepare(model, o);
        const double prep = ms_since(t0);
        std::ostringstream head;
        head << "\"mode\": \"bound\", \"options\": \"" << opt << "\", \"threads\": " << threads << ", \"" << dim << "\": " << v
             << ", \"prepare_ms\": " << prep;
        time_runs(*rep, make_inputs(*rep, dim, v), warmup, iters, head.str());
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "dyn_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
