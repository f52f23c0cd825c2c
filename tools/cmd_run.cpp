// `singa run MODEL`: prepares the model on the chosen device, feeds the given
// inputs (random ones for the rest) and prints each output's shape, dtype,
// top-k of the first row and a few statistics.
#include "cli.hpp"
#include "json.hpp"
#include "tensor_values.hpp"

#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>

namespace singa {
namespace cli {

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* option) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(std::string(option) + " expects NAME=VALUE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> dims;
  for (const auto& item : items) {
    auto [name, value] = split_assignment(item, "--dim");
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || v < 0) throw UsageError("--dim " + name + ": '" + value + "' is not a size >= 0");
    if (dims.count(name)) throw UsageError("--dim " + name + " given twice");
    dims[name] = v;
  }
  return dims;
}

// The core ignores names that match nothing; a typo here deserves an error.
void check_dim_names(const std::string& path, const std::map<std::string, int64_t>& dims) {
  ::onnx::ModelProto model = onnx::load_model(path);
  std::set<std::string> symbolic;
  for (const auto& in : model.graph().input())
    if (in.type().has_tensor_type())
      for (const auto& d : in.type().tensor_type().shape().dim())
        if (d.has_dim_param()) symbolic.insert(d.dim_param());
  for (const auto& [name, value] : dims)
    if (!symbolic.count(name)) {
      std::string names;
      for (const auto& s : symbolic) names += (names.empty() ? "" : ", ") + s;
      throw UsageError("--dim " + name + ": the model's inputs have no symbolic dimension of that name (they have: " +
                       (names.empty() ? "none" : names) + ")");
    }
}

// Uniform [0,1) for floats; small non-negative values for integers so that
// index-like inputs (Gather indices, shapes) stay in range for most models.
Tensor random_tensor(const Shape& shape, int32_t dtype, std::mt19937_64& rng, const std::string& name) {
  if (dtype == SINGA_ONNX_STRING || !is_numeric_dtype(dtype))
    throw Error(SINGA_INVALID_ARGUMENT, std::string("input '") + name + "' has element type " + dtype_name(dtype) +
                                            ": random values cannot be made for it; give it with --input " + name + "=FILE");
  Tensor t(shape, dtype);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 3);
  const int64_t n = t.numel();
  auto fill_int = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<std::remove_pointer_t<decltype(p)>>(small(rng));
  };
  switch (dtype) {
    case SINGA_ONNX_FLOAT: for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = unit(rng); break;
    case SINGA_ONNX_DOUBLE: for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = unit(rng); break;
    case SINGA_ONNX_FLOAT16: for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_half(unit(rng)); break;
    case SINGA_ONNX_BFLOAT16: for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_bfloat16(unit(rng)); break;
    case SINGA_ONNX_BOOL: for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = small(rng) & 1; break;
    case SINGA_ONNX_INT8: fill_int(t.data<int8_t>()); break;
    case SINGA_ONNX_INT16: fill_int(t.data<int16_t>()); break;
    case SINGA_ONNX_INT32: fill_int(t.data<int32_t>()); break;
    case SINGA_ONNX_INT64: fill_int(t.data<int64_t>()); break;
    case SINGA_ONNX_UINT8: fill_int(t.data<uint8_t>()); break;
    case SINGA_ONNX_UINT16: fill_int(t.data<uint16_t>()); break;
    case SINGA_ONNX_UINT32: fill_int(t.data<uint32_t>()); break;
    case SINGA_ONNX_UINT64: fill_int(t.data<uint64_t>()); break;
    default: break;
  }
  return t;
}

Shape concrete_shape(const onnx::ValueInfo& vi, const std::map<std::string, int64_t>& dims) {
  if (!vi.rank_known)
    throw UsageError("the model does not declare the shape of input '" + vi.name + "'; give it with --input " + vi.name + "=FILE");
  Shape s;
  for (size_t i = 0; i < vi.dims.size(); ++i) {
    if (vi.dims[i] >= 0) {
      s.push_back(vi.dims[i]);
      continue;
    }
    const std::string& sym = i < vi.dim_names.size() ? vi.dim_names[i] : std::string();
    auto it = dims.find(sym);
    s.push_back(!sym.empty() && it != dims.end() ? it->second : 1);
  }
  return s;
}

// Output names may hold '/' or ':'; file names keep only safe characters.
std::string file_name_for(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out + ".pb";
}

struct OutputReport {
  std::string name, file;
  Shape shape;
  int32_t dtype = 0;
  std::vector<std::pair<int64_t, double>> top;
  bool has_stats = false;
  Stats stats;
  std::vector<std::string> preview;  // the first few elements as text
  std::vector<double> preview_numbers;
};

OutputReport describe(const std::string& name, const Tensor& t, int k) {
  OutputReport r;
  r.name = name;
  r.shape = t.shape();
  r.dtype = t.dtype();
  const int64_t n = t.numel();
  const size_t kPreview = 8;
  if (t.dtype() == SINGA_ONNX_STRING) {
    for (int64_t i = 0; i < n && size_t(i) < kPreview; ++i) r.preview.push_back(t.strings()[size_t(i)]);
    return r;
  }
  if (!is_numeric_dtype(t.dtype())) return r;
  std::vector<double> v = to_doubles(t);
  r.has_stats = true;
  r.stats = compute_stats(v);
  for (int64_t i = 0; i < n && size_t(i) < kPreview; ++i) {
    r.preview.push_back(format_value(v[size_t(i)]));
    r.preview_numbers.push_back(v[size_t(i)]);
  }
  if (is_float_dtype(t.dtype()) && n > 0) {
    int64_t row = t.ndim() >= 2 && t.shape()[0] > 0 ? n / t.shape()[0] : n;
    r.top = top_k(v, 0, row, k);
  }
  return r;
}

std::string report_json(const OutputReport& r) {
  JsonObject o;
  o.str("name", r.name).raw("shape", json_int_array(r.shape)).str("dtype", dtype_name(r.dtype));
  if (!r.top.empty()) {
    std::vector<std::string> top;
    for (const auto& [i, v] : r.top) top.push_back(JsonObject().integer("index", i).num("value", v).dump());
    o.raw("top", json_array(top));
  }
  if (r.has_stats) {
    JsonObject s;
    s.num("min", r.stats.min).num("max", r.stats.max).num("mean", r.stats.mean).num("std", r.stats.stddev);
    s.integer("nan", r.stats.nan).integer("inf", r.stats.inf);
    o.raw("stats", s.dump());
  }
  if (r.dtype == SINGA_ONNX_STRING) {
    o.raw("first", json_string_array(r.preview));
  } else {
    std::vector<std::string> nums;
    for (double v : r.preview_numbers) nums.push_back(json_number(v));
    o.raw("first", json_array(nums));
  }
  if (!r.file.empty()) o.str("file", r.file);
  return o.dump();
}

void report_text(const OutputReport& r, int64_t numel) {
  std::cout << "output " << r.name << ": " << dtype_name(r.dtype) << " " << shape_to_string(r.shape) << "\n";
  if (!r.top.empty()) {
    std::cout << "  top-" << r.top.size() << " of first row:";
    for (const auto& [i, v] : r.top) std::cout << " [" << i << "]=" << format_value(v);
    std::cout << "\n";
  }
  if (r.has_stats && r.stats.finite + r.stats.nan + r.stats.inf > 0) {
    std::cout << "  min " << format_value(r.stats.min) << "  max " << format_value(r.stats.max) << "  mean "
              << format_value(r.stats.mean) << "  std " << format_value(r.stats.stddev);
    if (r.stats.nan) std::cout << "  nan " << r.stats.nan;
    if (r.stats.inf) std::cout << "  inf " << r.stats.inf;
    std::cout << "\n";
  }
  if (!r.preview.empty()) {
    std::cout << "  values:";
    for (const auto& s : r.preview) std::cout << " " << (r.dtype == SINGA_ONNX_STRING ? json_quote(s) : s);
    if (numel > int64_t(r.preview.size())) std::cout << " ...";
    std::cout << "\n";
  }
  if (!r.file.empty()) std::cout << "  written to " << r.file << "\n";
}

void print_placement(const onnx::Rep& rep) {
  size_t wn = 4, wo = 2, wd = 6;
  auto node_name = [](const onnx::NodePlacement& pl) { return pl.node.empty() ? std::string("(unnamed)") : pl.node; };
  for (const auto& pl : rep.placement()) {
    wn = std::max(wn, node_name(pl).size());
    wo = std::max(wo, pl.op_type.size());
    wd = std::max(wd, pl.device.size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::cout << "placement (" << rep.placement().size() << " nodes):\n  " << pad("node", wn) << pad("op", wo)
            << pad("device", wd) << "plugin\n";
  for (const auto& pl : rep.placement())
    std::cout << "  " << pad(node_name(pl), wn) << pad(pl.op_type, wo) << pad(pl.device, wd) << pl.plugin << "\n";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  CommandSpec spec{"run", "MODEL [--input NAME=FILE]... [options]",
                   "Prepares MODEL on the device and runs it once. Inputs come from .pb (TensorProto) or .npy files;\n"
                   "inputs not given are random (seeded): floats uniform in [0,1), integers in 0..3, booleans 0/1;\n"
                   "symbolic dimensions are 1 unless bound with --dim. Prints each output's name, dtype and shape,\n"
                   "the top-K values of the first row of float outputs and a few statistics. --verbose also prints\n"
                   "where each node runs (node, op, device, plugin)."};
  po::options_description own("Options");
  own.add_options()
      ("input,i", po::value<std::vector<std::string>>()->value_name("NAME=FILE"), "input from a .pb or .npy file (repeatable)")
      ("dim", po::value<std::vector<std::string>>()->value_name("NAME=VALUE"), "bind a symbolic dimension (repeatable)")
      ("all-outputs", "return every intermediate value, not only the graph outputs")
      ("last-layers", po::value<std::string>()->value_name("K|NODE")->default_value("0"),
       "stop |K| nodes before the end (K <= 0, as in sonnx), or after the node named NODE\n(`singa info --nodes` lists them)")
      ("output-dir,o", po::value<std::string>()->value_name("DIR"), "write each output to DIR/NAME.pb")
      ("top", po::value<int>()->value_name("K")->default_value(5), "how many top values of float outputs to show")
      ("seed", po::value<uint64_t>()->value_name("S")->default_value(0), "seed of the random inputs")
      ("json", "print one JSON object");
  Parsed p = parse_command(spec, args, own, "model");
  if (p.help) {
    print_command_help(spec, own);
    return kExitOk;
  }
  if (!p.vm.count("model")) throw UsageError("run: a MODEL file is required");
  auto models = p.vm["model"].as<std::vector<std::string>>();
  if (models.size() != 1) throw UsageError("run: give exactly one MODEL file (inputs go with --input NAME=FILE)");
  const std::string path = models[0];
  const bool json = p.vm.count("json") > 0;
  // A number is a count from the end; anything else names the node to stop after.
  const std::string cut = p.vm["last-layers"].as<std::string>();
  int last_layers = 0;
  std::string last_node;
  if (!cut.empty() && cut.find_first_not_of("-+0123456789") == std::string::npos) {
    try {
      last_layers = std::stoi(cut);
    } catch (const std::exception&) {
      throw UsageError("--last-layers " + cut + ": not a number of nodes");
    }
    if (last_layers > 0) throw UsageError("--last-layers must be 0 or negative (e.g. -1 stops one node before the end)");
  } else {
    last_node = cut;
  }
  const int top = p.vm["top"].as<int>();
  if (top < 0) throw UsageError("--top must be >= 0");
  std::map<std::string, int64_t> dims;
  if (p.vm.count("dim")) dims = parse_dims(p.vm["dim"].as<std::vector<std::string>>());
  std::map<std::string, std::string> input_files;
  if (p.vm.count("input"))
    for (const auto& item : p.vm["input"].as<std::vector<std::string>>()) {
      auto [name, file] = split_assignment(item, "--input");
      if (!input_files.emplace(name, file).second) throw UsageError("--input " + name + " given twice");
    }

  if (!dims.empty()) check_dim_names(path, dims);

  load_runtime(p.global);
  onnx::PrepareOptions popts;
  apply_prepare_options(p.global, popts);
  popts.dims = dims;
  auto rep = onnx::prepare(path, popts);

  for (const auto& [name, value] : input_files) {
    bool found = false;
    for (const auto& vi : rep->inputs()) found = found || vi.name == name;
    if (!found) {
      std::string names;
      for (const auto& vi : rep->inputs()) names += (names.empty() ? "" : ", ") + vi.name;
      throw UsageError("--input " + name + ": the model has no input of that name (inputs: " + names + ")");
    }
  }

  std::mt19937_64 rng(p.vm["seed"].as<uint64_t>());
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> input_json;
  for (const auto& vi : rep->inputs()) {
    auto it = input_files.find(vi.name);
    Tensor t = it != input_files.end() ? onnx::load_tensor_file(it->second)
                                       : random_tensor(concrete_shape(vi, dims), vi.dtype, rng, vi.name);
    std::string source = it != input_files.end() ? it->second : "random";
    if (json)
      input_json.push_back(JsonObject().str("name", vi.name).raw("shape", json_int_array(t.shape()))
                               .str("dtype", dtype_name(t.dtype())).str("source", source).dump());
    else if (p.global.verbose)
      std::cout << "input " << vi.name << ": " << dtype_name(t.dtype()) << " " << shape_to_string(t.shape()) << " from "
                << source << "\n";
    inputs.emplace(vi.name, std::move(t));
  }

  if (p.global.verbose && !json) {
    print_placement(*rep);
  }

  onnx::RunOptions ropts;
  ropts.last_layers = last_layers;
  ropts.last_node = last_node;
  ropts.all_outputs = p.vm.count("all-outputs") > 0;
  auto t0 = std::chrono::steady_clock::now();
  onnx::NamedTensors outputs = rep->run(inputs, ropts);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::string out_dir;
  if (p.vm.count("output-dir")) {
    out_dir = p.vm["output-dir"].as<std::string>();
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw Error(SINGA_NOT_FOUND, "cannot create output folder '" + out_dir + "': " + ec.message());
  }
  std::vector<std::string> output_json;
  for (const auto& [name, tensor] : outputs) {
    Tensor host = tensor.to_host();
    OutputReport r = describe(name, host, top);
    if (!out_dir.empty()) {
      r.file = (std::filesystem::path(out_dir) / file_name_for(name)).string();
      onnx::save_tensor_pb(host, r.file, name);
    }
    if (json)
      output_json.push_back(report_json(r));
    else
      report_text(r, host.numel());
  }

  if (json) {
    JsonObject o;
    o.str("model", path).str("device", p.global.device).raw("inputs", json_array(input_json));
    o.raw("outputs", json_array(output_json)).num("time_ms", ms);
    if (p.global.verbose) {
      std::vector<std::string> pl;
      for (const auto& x : rep->placement())
        pl.push_back(JsonObject().str("node", x.node).str("op", x.op_type).str("device", x.device)
                         .str("plugin", x.plugin).integer("since_version", x.since_version).dump());
      o.raw("placement", json_array(pl));
    }
    std::cout << o.dump() << "\n";
  } else if (p.global.verbose) {
    std::cout << "run time: " << format_value(ms) << " ms\n";
  }
  return kExitOk;
}

}  // namespace cli
}  // namespace singa
