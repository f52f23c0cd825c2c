// Finds plugins, loads them with Boost.DLL, and performs the ABI handshake.
#include "host.hpp"
#include "env_options.hpp"
#include <singa/op_versions.hpp>

#include <singa/runtime.hpp>

#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>

#include <algorithm>
#include <dlfcn.h>
#include <cstdlib>
#include <set>
#include <sstream>

namespace fs = boost::filesystem;

namespace singa {
namespace {

// Runtimes that keep worker threads and thread-local state (GNU OpenMP, which
// oneDNN and OpenBLAS bring in) are made resident once a plugin has mapped
// them: unloading them with the plugins (Runtime::reset) would tear down a
// thread pool under its threads, and libgomp leaks its environment on every
// load (LeakSanitizer's reports in test_options).
void pin_thread_runtimes() {
  for (const char* lib : {"libgomp.so.1"})
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
}

}  // namespace

struct LoadedPlugin {
  boost::dll::shared_library lib;
  void (*shutdown)(void) = nullptr;
};

std::string normalize_domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

Runtime& Runtime::instance() {
  static Runtime* rt = new Runtime();  // never destroyed: plugins' code must outlive static tensors
  return *rt;
}

Runtime::~Runtime() { reset(); }

void Runtime::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& l : libs_)
    if (l->shutdown) l->shutdown();
  kernels_.clear();
  kernel_store_.clear();
  graph_passes_.clear();
  devices_.clear();
  plugins_.clear();
  libs_.clear();
  loaded_ = false;
  std::lock_guard<std::mutex> options_lock(options_mu_);
  options_.clear();
}

void Runtime::set_option(const std::string& key, const std::string& value) {
  if (key.empty()) throw Error(SINGA_INVALID_ARGUMENT, "set_option: the option key is empty");
  check_runtime_option(key, value, "");
  std::lock_guard<std::mutex> lock(options_mu_);
  options_[key] = value;
}

const std::string* Runtime::option(const std::string& key) const {
  std::lock_guard<std::mutex> lock(options_mu_);
  auto it = options_.find(key);
  return it == options_.end() ? nullptr : &it->second;
}

std::map<std::string, std::string> Runtime::options() const {
  std::lock_guard<std::mutex> lock(options_mu_);
  return options_;
}

static std::vector<std::string> split_path_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> Runtime::search_dirs(const LoadOptions& o) const {
  std::vector<std::string> dirs;
  if (o.use_default_dirs) {
    dirs.push_back(SINGA_BUILD_PLUGIN_DIR);
    dirs.push_back(SINGA_INSTALL_PLUGIN_DIR);
  }
  if (o.use_env) {
    if (const char* env = std::getenv("SINGA_PLUGIN_PATH"))
      for (auto& d : split_path_list(env)) dirs.push_back(d);
  }
  for (auto& d : o.plugin_dirs) dirs.push_back(d);
  return dirs;
}

// Plugin files in a folder: singa_*.so, in name order; the build folder keeps
// each family in its own subfolder, so one level down is searched too.
static std::vector<std::string> plugin_files(const std::string& dir) {
  std::vector<std::string> files;
  boost::system::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  auto consider = [&](const fs::path& p) {
    std::string name = p.filename().string();
    if (name.rfind("singa_", 0) == 0 && p.extension() == ".so" && fs::is_regular_file(p, ec)) files.push_back(p.string());
  };
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (fs::is_directory(it->path(), ec)) {
      boost::system::error_code ec2;
      for (fs::directory_iterator jt(it->path(), ec2), jend; !ec2 && jt != jend; jt.increment(ec2)) consider(jt->path());
    } else {
      consider(it->path());
    }
  }
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return fs::path(a).filename() < fs::path(b).filename() || (fs::path(a).filename() == fs::path(b).filename() && a < b);
  });
  return files;
}

// OpenBLAS reads its settings from the environment when it is loaded (with
// the first op pack that links it), so they are set here, before any pack,
// unless the user already chose them:
// - the core type: it misdetects some virtual CPUs as pre-AVX "Prescott",
//   running about 5x slower, so it is named from what the CPU reports;
// - the thread timeout: its workers spin in sched_yield for 2^28 cycles
//   (~0.1 s) after they start and after every threaded call, taking a core
//   from the runtime's own pool. A 2-thread LSTM run shortly after start-up
//   took 1.3 ms instead of 0.64 (bench medians). 2^4 cycles lets them sleep
//   at once. Only the products that still go to OpenBLAS (double precision,
//   the generic convolution paths, float on CPUs without AVX-512) use its
//   threads, and there a wake-up costs microseconds against a product's
//   hundreds.
static void configure_openblas() {
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
#if defined(__x86_64__) && defined(__GNUC__)
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  else if (__builtin_cpu_supports("avx2")) setenv("OPENBLAS_CORETYPE", "Haswell", 0);
#endif
}

std::vector<std::string> Runtime::load(const LoadOptions& options) {
  // The runtime options are complete (and checked) before any plugin's init
  // reads them; a bad value stops the load before anything is loaded.
  for (const auto& kv : options.options) set_option(kv.first, kv.second);
  if (const char* env = std::getenv("SINGA_OPTIONS")) {
    const auto env_options = parse_option_list(env, "SINGA_OPTIONS");
    for (const auto& kv : env_options) check_runtime_option(kv.first, kv.second, "SINGA_OPTIONS");
    std::lock_guard<std::mutex> lock(options_mu_);
    for (const auto& kv : env_options) options_.insert(kv);  // the program's options win
  }
  configure_openblas();
  std::vector<std::string> dirs = search_dirs(options);
  std::set<std::string> seen_names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& p : plugins_) seen_names.insert(fs::path(p.path).filename().string());
  }
  bool build_found = false;
  for (size_t i = 0; i < dirs.size(); ++i) {
    // The install folder is only a fallback for the build folder: a build
    // tree must not pick up an older installed copy of itself.
    if (options.use_default_dirs && i == 1 && build_found) continue;
    auto files = plugin_files(dirs[i]);
    if (options.use_default_dirs && i == 0 && !files.empty()) build_found = true;
    for (auto& f : files) {
      std::string name = fs::path(f).filename().string();
      if (seen_names.count(name)) {
        PluginInfo info;
        info.path = f;
        info.error = "skipped: a plugin file named " + name + " was already loaded from an earlier folder";
        std::lock_guard<std::mutex> lock(mu_);
        plugins_.push_back(info);
        continue;
      }
      seen_names.insert(name);
      load_plugin(f);
    }
  }
  for (auto& f : options.plugins) load_plugin(f);
  std::lock_guard<std::mutex> lock(mu_);
  loaded_ = true;
  return dirs;
}

static bool ranges_overlap(const KernelEntry& a, const KernelEntry& b) {
  return a.def.since_version <= b.last_opset && b.def.since_version <= a.last_opset;
}

// Two kernels collide when some node could match both: same key, overlapping
// versions, and every shared type constraint admits a common dtype.
static bool kernels_collide(const KernelEntry& a, const KernelEntry& b) {
  if (a.domain != b.domain || a.op_type != b.op_type || a.device != b.device || !ranges_overlap(a, b)) return false;
  for (auto& ca : a.constraints)
    for (auto& cb : b.constraints)
      if (ca.index == cb.index && (ca.dtypes & cb.dtypes) == 0) return false;
  return true;
}

// Walks a plugin's extension chain (ABI 1.3): graph passes are kept; types
// this host does not know are skipped. Returns an error text, or "".
static std::string read_plugin_extensions(const singa_extension* ext, const std::string& path,
                                          const std::vector<GraphPassEntry>& loaded, std::vector<GraphPassEntry>& out) {
  for (int links = 0; ext; ext = ext->next, ++links) {
    if (links >= 1024) return path + ": its extension chain does not end (a cycle?)";
    if (ext->struct_size < sizeof(singa_extension))
      return path + ": extension " + std::to_string(links) + " has struct_size " + std::to_string(ext->struct_size);
    if (ext->type != SINGA_EXTENSION_GRAPH_PASS) continue;
    const auto* gp = reinterpret_cast<const singa_graph_pass_ext*>(ext);
    if (!SINGA_EXTENSION_HAS_FIELD(gp, singa_graph_pass_ext, run) || !gp->run || !gp->name || !*gp->name)
      return path + ": a graph pass extension needs a name and run";
    GraphPassEntry e;
    e.name = gp->name;
    e.device = gp->device ? gp->device : "";
    e.plugin_path = path;
    e.priority = gp->priority;
    e.self = gp->self;
    e.run = gp->run;
    std::vector<const GraphPassEntry*> known;
    for (const auto& o : loaded) known.push_back(&o);
    for (const auto& o : out) known.push_back(&o);
    for (const GraphPassEntry* other : known)
        if (other->name == e.name) return path + ": graph pass '" + e.name + "' is already registered by " + other->plugin_path;
    out.push_back(std::move(e));
  }
  return "";
}

PluginInfo Runtime::load_plugin(const std::string& path) {
  PluginInfo info;
  info.path = path;
  auto record = [&](PluginInfo& i) -> PluginInfo {
    std::lock_guard<std::mutex> lock(mu_);
    plugins_.push_back(i);
    return i;
  };
  auto lp = std::make_unique<LoadedPlugin>();
  try {
    lp->lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    info.error = path + ": cannot be loaded: " + e.what();
    return record(info);
  }
  pin_thread_runtimes();
  if (!lp->lib.has(SINGA_PLUGIN_INIT_SYMBOL)) {
    info.error = path + ": not a singa plugin: it exports no '" SINGA_PLUGIN_INIT_SYMBOL "' symbol";
    return record(info);
  }
  auto init = lp->lib.get<singa_status*(const singa_host_api*, singa_plugin*)>(SINGA_PLUGIN_INIT_SYMBOL);

  singa_plugin_handle handle;
  handle.path = path;
  singa_plugin plugin{};
  plugin.struct_size = sizeof(plugin);
  plugin.handle = &handle;
  singa_status* st = nullptr;
  try {
    st = init(host_api(), &plugin);
  } catch (...) {
    // A plugin that lets an exception escape is broken; the SDK macros prevent it.
    st = make_status(SINGA_INTERNAL, "singa_plugin_init threw a C++ exception");
  }
  info.name = plugin.name ? plugin.name : fs::path(path).stem().string();
  info.version = plugin.version ? plugin.version : "";
  info.description = plugin.description ? plugin.description : "";
  info.abi_major = plugin.abi_major;
  info.abi_minor = plugin.abi_minor;
  if (plugin.abi_major != SINGA_ABI_MAJOR) {
    std::string msg = take_status_message(st);
    info.error = path + ": ABI major " + std::to_string(plugin.abi_major) + " != host ABI major " +
                 std::to_string(SINGA_ABI_MAJOR) + " (plugin built for ABI " + std::to_string(plugin.abi_major) + "." +
                 std::to_string(plugin.abi_minor) + ", host is " + std::to_string(SINGA_ABI_MAJOR) + "." +
                 std::to_string(SINGA_ABI_MINOR) + ")" + (msg.empty() ? "" : ": " + msg);
    return record(info);
  }
  if (st) {
    info.error = path + ": initialisation failed: " + take_status_message(st);
    return record(info);
  }
  if (!handle.error.empty()) {
    info.error = path + ": " + handle.error;
    return record(info);
  }

  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GraphPassEntry> passes;
  if (SINGA_HAS_FIELD(&plugin, singa_plugin, extensions)) {
    info.error = read_plugin_extensions(plugin.extensions, path, graph_passes_, passes);
    if (!info.error.empty()) {
      plugins_.push_back(info);
      return info;
    }
  }
  // Duplicate kernels, within the plugin or against what is loaded.
  for (size_t i = 0; i < handle.kernels.size(); ++i) {
    auto& k = *handle.kernels[i];
    auto check_against = [&](const KernelEntry& other, const std::string& where) {
      if (kernels_collide(k, other)) {
        info.error = path + ": duplicate kernel " + (k.domain.empty() ? "" : k.domain + "::") + k.op_type + " (opset " +
                     onnx::opset_range_text(k.def.since_version, k.last_opset) + ", device " + k.device +
                     ") already registered by " + where;
      }
    };
    auto it = kernels_.find({k.domain, k.op_type});
    if (it != kernels_.end())
      for (auto* other : it->second) {
        check_against(*other, other->plugin_path);
        if (!info.error.empty()) break;
      }
    for (size_t j = 0; j < i && info.error.empty(); ++j) check_against(*handle.kernels[j], "the same plugin");
    if (!info.error.empty()) {
      plugins_.push_back(info);
      return info;
    }
  }
  for (auto& d : handle.devices) {
    auto dev = std::make_unique<Device>(d, path);
    info.devices.push_back(dev->name());
    auto it = devices_.find(dev->name());
    if (it == devices_.end() || it->second->score() < dev->score()) devices_[dev->name()] = std::move(dev);
  }
  info.kernel_count = handle.kernels.size();
  for (auto& p : passes) {
    info.graph_passes.push_back(p.name);
    graph_passes_.push_back(std::move(p));
  }
  for (auto& k : handle.kernels) {
    k->plugin_name = info.name;
    kernels_[{k->domain, k->op_type}].push_back(k.get());
    kernel_store_.push_back(std::move(k));
  }
  lp->shutdown = SINGA_HAS_FIELD(&plugin, singa_plugin, shutdown) ? plugin.shutdown : nullptr;
  libs_.push_back(std::move(lp));
  info.loaded = true;
  plugins_.push_back(info);
  return info;
}

std::vector<Device*> Runtime::devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Device*> out;
  for (auto& d : devices_) out.push_back(d.second.get());
  return out;
}

Device* Runtime::device(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(name);
  return it == devices_.end() ? nullptr : it->second.get();
}

const std::vector<KernelEntry*>& Runtime::kernels(const std::string& domain, const std::string& op_type) const {
  static const std::vector<KernelEntry*> none;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find({normalize_domain(domain), op_type});
  return it == kernels_.end() ? none : it->second;
}

std::vector<GraphPassEntry> Runtime::graph_passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return graph_passes_;
}

size_t Runtime::kernel_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernel_store_.size();
}

}  // namespace singa
