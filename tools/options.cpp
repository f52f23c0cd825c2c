// Global options shared by every subcommand. Precedence: flags, then the
// config file, then the environment, then defaults; the environment is never
// overridden silently (a note goes to stderr). Named options (--option,
// the config file's [options]) go to the plugins through PrepareOptions and,
// for the device-level ones read as plugins load, the runtime options.
#include "cli.hpp"

#include <singa/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>

extern char** environ;

namespace singa {
namespace cli {

std::map<std::string, Subcommand>& subcommands() {
  static std::map<std::string, Subcommand> table;  // filled by each command's CommandRegistrar
  return table;
}


namespace {

// The keys a config file may set; names match the long flags.
po::options_description config_file_description() {
  po::options_description d("Config file");
  d.add_options()
      ("device", po::value<std::string>())
      ("fallback", po::value<bool>())
      ("threads", po::value<int>())
      ("plugin-dir", po::value<std::vector<std::string>>())
      ("plugin", po::value<std::vector<std::string>>())
      ("max-tensor-bytes", po::value<std::string>())
      ("option", po::value<std::vector<std::string>>());
  return d;
}

// Keys of the config file's [options] section arrive as "options.KEY".
constexpr const char* kOptionsSection = "options.";

bool has(const po::variables_map& vm, const char* key) { return vm.count(key) && !vm[key].defaulted(); }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void note(const std::string& text) { std::cerr << "singa: note: " << text << "\n"; }

// "1000000", "64M", "2G" (K/M/G are powers of 1024) -> bytes; > 0.
size_t parse_bytes(const std::string& text, const std::string& what) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0]))) v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  unsigned shift = 0;
  if (used > 0 && used + 1 == text.size()) {
    switch (text[used]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: used = 0;
    }
    if (used) ++used;
  }
  if (used == 0 || used != text.size() || v == 0 || v > (~0ull >> shift))
    throw UsageError(what + ": '" + text + "' is not a size in bytes > 0 (e.g. 1000000, 512M, 2G)");
  return size_t(v << shift);
}

// Boost.Program_options reads "-1" after an option as a short option; numbers
// like `--last-layers -1` are joined to their option first.
std::vector<std::string> join_negative_values(const std::vector<std::string>& args) {
  static const std::regex number("-[0-9][0-9.eE+-]*");
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0 && a.find('=') == std::string::npos && i + 1 < args.size() &&
        std::regex_match(args[i + 1], number)) {
      out.push_back(a + "=" + args[i + 1]);
      ++i;
    } else {
      out.push_back(a);
    }
  }
  return out;
}

// Reads the known keys into the returned map and the [options] section's
// KEY = VALUE lines into `named`; any other key is a usage error.
po::variables_map read_config(const std::string& path, std::map<std::string, std::string>& named) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read config file '" + path + "'");
  po::variables_map vm;
  try {
    const po::options_description keys = config_file_description();  // `parsed` points into it
    po::parsed_options parsed = po::parse_config_file(in, keys, true);
    for (auto& o : parsed.options) {
      if (!o.unregistered) continue;
      const std::string prefix = kOptionsSection;
      if (o.string_key.compare(0, prefix.size(), prefix) != 0 || o.string_key.size() == prefix.size())
        throw UsageError("config file '" + path + "': unknown key '" + o.string_key +
                         "' (named options go in an [options] section)");
      named[o.string_key.substr(prefix.size())] = o.value.empty() ? std::string() : o.value.back();
    }
    parsed.options.erase(std::remove_if(parsed.options.begin(), parsed.options.end(),
                                        [](const po::option& o) { return o.unregistered; }),
                         parsed.options.end());
    po::store(parsed, vm);
  } catch (const po::error& e) {
    throw UsageError("config file '" + path + "': " + e.what());
  }
  return vm;
}

void resolve_globals(const po::variables_map& vm, GlobalOptions& g) {
  po::variables_map cfg;
  if (has(vm, "config")) {
    g.config_file = vm["config"].as<std::string>();
    cfg = read_config(g.config_file, g.options);
  }
  const std::string cfg_name = "config file '" + g.config_file + "'";
  // Named options: the config file's (its [options] section, then its
  // `option = KEY=VALUE` lines), then the flags', the later winning per key.
  if (cfg.count("option"))
    for (const auto& text : cfg["option"].as<std::vector<std::string>>()) {
      auto kv = parse_named_option(text, "option in " + cfg_name);
      g.options[kv.first] = kv.second;
    }
  if (has(vm, "option"))
    for (const auto& text : vm["option"].as<std::vector<std::string>>()) {
      auto kv = parse_named_option(text, "--option");
      g.options[kv.first] = kv.second;
    }

  const std::string env_device = env("SINGA_DEVICE");
  if (has(vm, "device")) {
    g.device = vm["device"].as<std::string>();
    if (!env_device.empty() && env_device != g.device)
      note("--device " + g.device + " overrides SINGA_DEVICE=" + env_device);
  } else if (cfg.count("device")) {
    g.device = cfg["device"].as<std::string>();
    if (!env_device.empty() && env_device != g.device)
      note("device = " + g.device + " from " + cfg_name + " overrides SINGA_DEVICE=" + env_device);
  } else if (!env_device.empty()) {
    g.device = env_device;
  }
  if (g.device.empty()) throw UsageError("the device name is empty");

  if (has(vm, "fallback") && has(vm, "no-fallback")) throw UsageError("--fallback and --no-fallback contradict each other");
  if (has(vm, "no-fallback"))
    g.fallback = false;
  else if (has(vm, "fallback"))
    g.fallback = vm["fallback"].as<bool>();
  else if (cfg.count("fallback"))
    g.fallback = cfg["fallback"].as<bool>();

  if (has(vm, "threads"))
    g.threads = vm["threads"].as<int>();
  else if (cfg.count("threads"))
    g.threads = cfg["threads"].as<int>();
  if (g.threads < 0) throw UsageError("threads must be >= 0 (0 = one per core), got " + std::to_string(g.threads));

  using Strings = std::vector<std::string>;
  const std::string env_path = env("SINGA_PLUGIN_PATH");
  if (has(vm, "plugin-dir")) {
    g.plugin_dirs = vm["plugin-dir"].as<Strings>();
    if (!env_path.empty()) {
      g.use_env_plugin_path = false;
      note("--plugin-dir overrides SINGA_PLUGIN_PATH=" + env_path + " (its folders are not searched)");
    }
  } else if (cfg.count("plugin-dir")) {
    g.plugin_dirs = cfg["plugin-dir"].as<Strings>();
    if (!env_path.empty()) {
      g.use_env_plugin_path = false;
      note("plugin-dir from " + cfg_name + " overrides SINGA_PLUGIN_PATH=" + env_path + " (its folders are not searched)");
    }
  }
  if (has(vm, "plugin"))
    g.plugins = vm["plugin"].as<Strings>();
  else if (cfg.count("plugin"))
    g.plugins = cfg["plugin"].as<Strings>();

  if (has(vm, "max-tensor-bytes"))
    g.max_tensor_bytes = parse_bytes(vm["max-tensor-bytes"].as<std::string>(), "--max-tensor-bytes");
  else if (cfg.count("max-tensor-bytes"))
    g.max_tensor_bytes = parse_bytes(cfg["max-tensor-bytes"].as<std::string>(), "max-tensor-bytes in " + cfg_name);

  g.verbose = has(vm, "verbose");
}

// What each SINGA_* variable does now. A retired one says which named option
// (or flag) replaced it; it changes nothing any more.
struct EnvVariable {
  const char* name;
  bool retired;
  const char* what;
};

const EnvVariable kEnvVariables[] = {
    {"SINGA_DEVICE", false, "default device"},
    {"SINGA_PLUGIN_PATH", false, "plugin folders"},
    {"SINGA_OPTIONS", false, "named options, key=value,... (options the program sets win)"},
    {"SINGA_VERBOSE", false, "model checker warnings on stderr"},
    {"SINGA_LOG_LEVEL", false, "plugin log level (0 debug ... 3 error)"},
    {"SINGA_NUM_THREADS", true, "use --threads N (config: threads)"},
    {"SINGA_NO_DNNL", true, "use --option cpu.dnnl=0"},
    {"SINGA_CONV_THIN", true, "use --option cpu.conv_thin=0"},
    {"SINGA_NCHW_FAST", true, "use --option cpu.conv_nchw=0"},
    {"SINGA_POINTWISE_DIRECT", true, "use --option cpu.pointwise_direct=0"},
    {"SINGA_DEPTHWISE_BLOCKED", true, "use --option cpu.depthwise_blocked=0"},
    {"SINGA_WINOGRAD_NCHW", true, "use --option cpu.winograd=0"},
    {"SINGA_WINOGRAD_TILE", true, "use --option cpu.winograd_tile=2 (or 4)"},
    {"SINGA_CONV_WINOGRAD", true, "use --option cpu.dnnl_winograd=0"},
    {"SINGA_WINOGRAD_PART_MIB", true, "use --option cpu.dnnl_winograd_part_mib=N"},
    {"SINGA_CONV_UNBLOCK16", true, "use --option cpu.dnnl_unblock16=0"},
    {"SINGA_BAND_TILES", true, "use --option cpu.band_tiles=0"},
    {"SINGA_MATMUL_PRIMITIVE", true, "use --option cpu.matmul_primitive=0"},
    {"SINGA_BLOCKED_LAYOUT", true, "use --option pass.cpu.blocked_layout=0"},
    {"SINGA_CHANNELS_LAST", true, "use --option pass.cpu.channels_last=0"},
    {"SINGA_OPENCL_GEMM", true, "use --option opencl.gemm=simple|tiled|vec"},
    {"SINGA_NO_AVX512", true, "use --option cpu.avx512=0"},
    {"SINGA_SPIN_US", true, "use --option cpu.spin_us=N"},
    {"SINGA_CPU_CACHE_MB", true, "use --option cpu.cache_mb=N"},
    {"SINGA_OPENCL_NO_CACHE", true, "use --option opencl.cache=0"},
    {"SINGA_OPENCL_GPU_KERNELS", true, "use --option opencl.gpu_kernels=1"},
    {"SINGA_CUDA_KERNELS", true, "use --option cuda.kernels=1"},
    {"SINGA_CUDA_ALLOW_TF32", true, "use --option cuda.allow_tf32=1"},
    {"SINGA_CUDA_NO_CACHE", true, "use --option cuda.cache=0"},
    {"SINGA_OP_PROFILE", true, "use --option core.op_profile=1"},
    {"SINGA_FUSE_LAYERS", true, "use --option core.fuse_layers=0"},
};

const EnvVariable* find_env_variable(const std::string& name) {
  for (const auto& v : kEnvVariables)
    if (name == v.name) return &v;
  return nullptr;
}

// Retired variables are reported even without --verbose: they used to change
// what ran, and now silently would not.
void report_environment(bool verbose) {
  for (const EnvNote& n : describe_environment()) {
    if (n.retired)
      std::cerr << "singa: warning: " << n.text << "\n";
    else if (verbose)
      std::cerr << "singa: environment: " << n.text << "\n";
  }
}

}  // namespace

std::pair<std::string, std::string> parse_named_option(const std::string& text, const std::string& what) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(what + ": '" + text + "' is not KEY=VALUE (e.g. cpu.dnnl=0; docs/options.md lists the keys)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<EnvNote> describe_environment() {
  std::vector<EnvNote> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    if (entry.compare(0, 6, "SINGA_") != 0) continue;
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    const EnvVariable* v = find_env_variable(name);
    if (!v)
      out.push_back({entry + " (not read by singa)", false});
    else if (v->retired)
      out.push_back({entry + " is ignored: " + v->what, true});
    else
      out.push_back({entry + " (" + v->what + ")", false});
  }
  std::sort(out.begin(), out.end(), [](const EnvNote& a, const EnvNote& b) { return a.text < b.text; });
  return out;
}

po::options_description global_options_description() {
  po::options_description d("Global options (also: config file keys device, fallback, threads, plugin-dir, plugin, "
                            "max-tensor-bytes, option, and an [options] section)");
  d.add_options()
      ("help,h", "show this help")
      ("config", po::value<std::string>()->value_name("FILE"), "read options from an INI file (flags win over it)")
      ("device", po::value<std::string>()->value_name("D"), "device: cpu, cuda:0, opencl:0, ... (env SINGA_DEVICE; default cpu)")
      ("fallback", po::value<bool>()->value_name("BOOL")->implicit_value(true, "true"),
       "run nodes without a kernel on the device on the CPU (default true)")
      ("no-fallback", "same as --fallback=false")
      ("threads", po::value<int>()->value_name("N"), "intra-op threads (0 = one per core)")
      ("plugin-dir", po::value<std::vector<std::string>>()->value_name("DIR"),
       "also search DIR for plugins (repeatable; replaces SINGA_PLUGIN_PATH)")
      ("plugin", po::value<std::vector<std::string>>()->value_name("FILE"), "also load plugin FILE (repeatable)")
      ("max-tensor-bytes", po::value<std::string>()->value_name("N"),
       "refuse any tensor larger than N bytes (K/M/G suffixes; default 16G)")
      ("option", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
       "a named option, e.g. cpu.dnnl=0 or cpu.spin_us=0 (repeatable; docs/options.md)")
      ("verbose,v", "say more (search folders, node placement, timings)");
  return d;
}

void print_command_help(const CommandSpec& spec, const po::options_description& own) {
  std::cout << "Usage: singa " << spec.name << " " << spec.usage << "\n\n" << spec.description << "\n\n";
  if (!own.options().empty()) std::cout << own << "\n";
  std::cout << global_options_description() << "\n"
            << "Exit codes: 0 ok, 1 failure while running, 2 bad usage.\n";
}

Parsed parse_command(const CommandSpec& spec, const std::vector<std::string>& raw_args,
                     const po::options_description& own, const std::string& positional_name) {
  Parsed p;
  for (const auto& a : raw_args)
    if (a == "--help" || a == "-h") {
      p.help = true;
      return p;
    }
  po::options_description all;
  all.add(own).add(global_options_description());
  po::options_description hidden;
  if (!positional_name.empty()) {
    hidden.add_options()(positional_name.c_str(), po::value<std::vector<std::string>>());
    all.add(hidden);
  }
  po::positional_options_description pos;
  if (!positional_name.empty()) pos.add(positional_name.c_str(), -1);
  try {
    auto args = join_negative_values(raw_args);
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), p.vm);
    po::notify(p.vm);
  } catch (const po::error& e) {
    throw UsageError(spec.name + ": " + e.what() + " (see 'singa " + spec.name + " --help')");
  }
  resolve_globals(p.vm, p.global);
  report_environment(p.global.verbose);
  if (p.global.verbose)
    for (const auto& kv : p.global.options) std::cerr << "singa: option " << kv.first << "=" << kv.second << "\n";
  return p;
}

std::vector<std::string> load_runtime(const GlobalOptions& g, bool report) {
  Runtime& rt = Runtime::instance();
  LoadOptions lo;
  lo.plugin_dirs = g.plugin_dirs;
  lo.plugins = g.plugins;
  lo.use_env = g.use_env_plugin_path;
  // Every named option is a runtime option too, so that the device-level
  // ones (cpu.spin_us) reach the plugins as they load.
  lo.options = g.options;
  if (rt.loaded()) return rt.search_dirs(lo);
  auto dirs = rt.load(lo);
  if (!report) return dirs;
  if (g.verbose) {
    std::cerr << "singa: plugin search folders:";
    for (auto& d : dirs) std::cerr << " " << d;
    std::cerr << "\n";
  }
  for (const auto& p : rt.plugins())
    if (!p.loaded) std::cerr << "singa: warning: plugin " << p.path << " skipped: " << plugin_failure(p) << "\n";
  return dirs;
}

std::pair<std::string, int> split_device(const std::string& device) {
  auto colon = device.find(':');
  if (colon == std::string::npos) return {device, 0};
  std::string name = device.substr(0, colon), id = device.substr(colon + 1);
  if (name.empty() || id.empty() || id.size() > 6 || !std::all_of(id.begin(), id.end(), ::isdigit))
    throw UsageError("bad device '" + device + "' (expected NAME or NAME:ID, e.g. cuda:0)");
  return {name, std::stoi(id)};
}

Device& require_device(const std::string& device) {
  auto [name, id] = split_device(device);
  Runtime& rt = Runtime::instance();
  Device* d = rt.device(name);
  if (!d) {
    std::string known;
    for (Device* k : rt.devices()) known += (known.empty() ? "" : ", ") + k->name();
    throw Error(SINGA_NOT_FOUND, "unknown device '" + device + "' (registered devices: " +
                                     (known.empty() ? "none; no device plugin loaded" : known) + ")");
  }
  std::string reason;
  int32_t n = d->count(&reason);
  if (n <= 0)
    throw Error(SINGA_UNAVAILABLE, "device '" + name + "' is not available" + (reason.empty() ? "" : ": " + one_line(reason)));
  if (id >= n)
    throw Error(SINGA_NOT_FOUND, "device '" + device + "': id " + std::to_string(id) + " out of range (" +
                                     std::to_string(n) + " available)");
  return *d;
}

std::string plugin_failure(const PluginInfo& p) {
  std::string e = p.error;
  if (e.compare(0, p.path.size() + 2, p.path + ": ") == 0) e.erase(0, p.path.size() + 2);
  return one_line(e);
}

void apply_prepare_options(const GlobalOptions& g, onnx::PrepareOptions& options) {
  options.device = g.device;
  options.fallback = g.fallback;
  options.threads = g.threads;
  if (g.max_tensor_bytes) options.max_tensor_bytes = g.max_tensor_bytes;
  for (const auto& kv : g.options) options.options[kv.first] = kv.second;
}

std::string one_line(const std::string& message) {
  std::string out;
  bool space = false;
  for (char c : message) {
    if (c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += (out.back() == ':' || out.back() == '.' || out.back() == ';') ? " " : "; ";
    space = false;
    out += c;
  }
  return out;
}

}  // namespace cli
}  // namespace singa
